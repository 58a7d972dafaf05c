package interest

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// fakeSizer sizes entities like deltacomp: a body per entity and a varint
// id-gap header.
type fakeSizer struct {
	w     *World
	fixed int
	body  []int
}

func (f *fakeSizer) FixedSize() int     { return f.fixed }
func (f *fakeSizer) BodySize(i int) int { return f.body[i] }
func (f *fakeSizer) LinkSize(prev, i int) int {
	var p proto.NetworkID
	if prev >= 0 {
		p = f.w.ID(prev)
	}
	g := uint64(f.w.ID(i)-p-1) << 1
	return (bits.Len64(g|1) + 6) / 7
}

// exactSize is the frame size of a selection computed from scratch.
func (f *fakeSizer) exactSize(sel []int32) int {
	n := f.fixed
	prev := -1
	for _, i := range sel {
		n += f.body[i] + f.LinkSize(prev, int(i))
		prev = int(i)
	}
	return n
}

type randWorld struct {
	rng  *rand.Rand
	ids  []proto.NetworkID
	pos  []Vec3
	kind []uint8
}

func newRandWorld(rng *rand.Rand, n int) *randWorld {
	r := &randWorld{rng: rng}
	seen := map[proto.NetworkID]bool{}
	for len(r.ids) < n {
		id := proto.NetworkID(1 + rng.IntN(n*20))
		if !seen[id] {
			seen[id] = true
			r.ids = append(r.ids, id)
		}
	}
	slices.Sort(r.ids)
	for range r.ids {
		r.pos = append(r.pos, Vec3{X: rng.Float32()*200 - 100, Y: rng.Float32()*200 - 100})
		r.kind = append(r.kind, uint8(rng.IntN(3)))
	}
	return r
}

// churn removes and adds a few entities (a layout change).
func (r *randWorld) churn() {
	for k := r.rng.IntN(3); k > 0 && len(r.ids) > 1; k-- {
		i := r.rng.IntN(len(r.ids))
		r.ids = slices.Delete(r.ids, i, i+1)
		r.pos = slices.Delete(r.pos, i, i+1)
		r.kind = slices.Delete(r.kind, i, i+1)
	}
	for k := r.rng.IntN(3); k > 0; k-- {
		id := proto.NetworkID(1 + r.rng.IntN(1<<16))
		i, found := slices.BinarySearch(r.ids, id)
		if found {
			continue
		}
		r.ids = slices.Insert(r.ids, i, id)
		r.pos = slices.Insert(r.pos, i, Vec3{X: r.rng.Float32()*200 - 100, Y: r.rng.Float32()*200 - 100})
		r.kind = slices.Insert(r.kind, i, uint8(r.rng.IntN(3)))
	}
}

func (r *randWorld) fill(w *World, tick uint32, changeP float64) {
	w.Begin(tick)
	changed := make([]uint64, (len(r.ids)+63)/64)
	for i, id := range r.ids {
		if r.rng.Float64() < 0.3 {
			r.pos[i].X += r.rng.Float32() - 0.5
		}
		w.Add(id, r.pos[i], r.kind[i])
		if r.rng.Float64() < changeP {
			changed[i>>6] |= 1 << (i & 63)
		}
	}
	w.End(changed)
}

// bruteLate reports whether entity i, relevant at distance d from the
// view, sits out tick under bands cfg of radius r (the farthest band that
// starts at or before d decides) for a scheduler whose last update was
// gap ticks ago: whether none of the ticks since (tick−gap, tick] was the
// entity's turn. margin is how far d is from that band's start (a float
// rounding there may go either way).
func bruteLate(w *World, tick, gap uint32, i int, d, r float32, cfg []Band) (late bool, margin float32) {
	every, from := 1, float32(-1)
	for _, bd := range cfg {
		if d >= bd.From*r && bd.From > from {
			every, from = bd.Every, bd.From
		}
	}
	margin = float32(math.Abs(float64(d - from*r)))
	if every <= 1 {
		margin = float32(math.Inf(1))
	}
	turn := false
	for t := tick - gap + 1; t != tick+1; t++ {
		turn = turn || (t+uint32(w.ID(i))*0x9E3779B1>>29)%uint32(every) == 0
	}
	return every > 1 && !turn, margin
}

// model is the slow reference: priorities in a map by id, every candidate
// sorted, each addition sized by recomputing the whole frame.
type model struct {
	prio    map[proto.NetworkID]float32
	prevRel map[proto.NetworkID]bool
	sent    map[uint16][]proto.NetworkID
	// dirty: changed or newly relevant since the entity's last turn
	dirty map[proto.NetworkID]bool
	// changed: changed since the last update
	changed map[proto.NetworkID]bool
}

func newModel() *model {
	return &model{prio: map[proto.NetworkID]float32{}, prevRel: map[proto.NetworkID]bool{}, sent: map[uint16][]proto.NetworkID{}, dirty: map[proto.NetworkID]bool{}, changed: map[proto.NetworkID]bool{}}
}

// observe takes a World update: what changed, and the entities gone
// (forgotten: an id that comes back is a new entity).
func (m *model) observe(w *World) {
	present := map[proto.NetworkID]bool{}
	for i := 0; i < w.Len(); i++ {
		present[w.ID(i)] = true
		if w.Changed(i) {
			m.changed[w.ID(i)] = true
		}
	}
	for _, set := range []map[proto.NetworkID]bool{m.prevRel, m.dirty, m.changed} {
		for id := range set {
			if !present[id] {
				delete(set, id)
			}
		}
	}
	for id := range m.prio {
		if !present[id] {
			delete(m.prio, id)
		}
	}
}

// schedule is the model's Schedule; turn(i) says whether relevant entity
// i takes part this tick (its distance band's turn); newTick: the first
// Schedule since a World update; all: the scheduler skipped so many
// updates that everything relevant counts as changed.
func (m *model) schedule(w *World, rel, turn func(i int) bool, seq uint16, budget, maxSkips int, sz *fakeSizer, newTick, all bool) []int32 {
	if newTick {
		nowRel := map[proto.NetworkID]bool{}
		for i := 0; i < w.Len(); i++ {
			id := w.ID(i)
			if !rel(i) {
				delete(m.prio, id)
				delete(m.dirty, id)
				continue
			}
			nowRel[id] = true
			boost := all || m.dirty[id] || m.changed[id] || !m.prevRel[id]
			if !turn(i) {
				if boost {
					m.dirty[id] = true
				}
				continue
			}
			delete(m.dirty, id)
			p := m.prio[id]
			if boost || p > 0 {
				p *= 2
				if boost {
					p += w.weight[w.Kind(i)]
				}
				m.prio[id] = min(p, maxPriority)
			}
		}
		m.prevRel = nowRel
		clear(m.changed)
	}
	type cand struct {
		i int
		p float32
	}
	if budget < sz.fixed {
		return nil
	}
	var cands []cand
	for i := 0; i < w.Len(); i++ {
		if p := m.prio[w.ID(i)]; p > 0 && turn(i) {
			cands = append(cands, cand{i, p})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		switch {
		case a.p > b.p:
			return -1
		case a.p < b.p:
			return 1
		}
		return a.i - b.i
	})
	var sel []int32
	skips := 0
	for _, c := range cands {
		if sz.body[c.i] == 0 { // the player holds it: nothing to send
			delete(m.prio, w.ID(c.i))
			continue
		}
		try := append(slices.Clone(sel), int32(c.i))
		slices.Sort(try)
		if sz.exactSize(try) > budget {
			if skips++; skips > maxSkips {
				break
			}
			continue
		}
		sel = try
	}
	var ids []proto.NetworkID
	for _, i := range sel {
		delete(m.prio, w.ID(int(i)))
		ids = append(ids, w.ID(int(i)))
	}
	m.sent[seq] = ids
	return sel
}

func (m *model) lost(w *World, seq uint16) {
	for _, id := range m.sent[seq] {
		if w.Index(id) >= 0 {
			m.prio[id] = min(m.prio[id]*2+1, maxPriority)
		}
	}
	delete(m.sent, seq)
}

func TestSchedulerAgainstSortEverything(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 1 + rng.IntN(300)
		rw := newRandWorld(rng, n)
		radius := float32(0)
		var bands []Band
		switch seed % 3 {
		case 1:
			radius = 20 + rng.Float32()*60
		case 2:
			// Distance bands: far entities take part every 2nd, 4th
			// or 8th tick.
			radius = 20 + rng.Float32()*60
			bands = []Band{{From: 0.3, Every: 2}, {From: 0.6, Every: 4}, {From: 0.85, Every: 8}}
		}
		w := NewWorld(WorldConfig{CellSize: 8 + rng.Float32()*30, Kinds: []Kind{{Weight: 1}, {Weight: 3}, {Weight: 0.5}}})
		s := NewScheduler(SchedulerConfig{Radius: radius, Bands: bands})
		view := Vec3{X: rng.Float32()*100 - 50, Y: rng.Float32()*100 - 50}
		s.SetView(view)
		m := newModel()
		sz := &fakeSizer{w: w, fixed: 19}
		// Half the seeds pace the player: it skips World updates, at
		// random and once for 11 ticks in a row (more than the World
		// remembers).
		paced := seed >= 15
		var seq uint16
		gap := uint32(maxGap + 1) // ticks since the last update
		first := ^uint32(0)       // the tick of the first update
		for tick := uint32(0); tick < 60; tick, gap = tick+1, gap+1 {
			if rng.IntN(3) == 0 {
				rw.churn()
			}
			rw.fill(w, tick, rng.Float64()*0.5)
			m.observe(w)
			if paced && (rng.IntN(2) == 0 || tick >= 30 && tick < 40) {
				continue
			}
			if first == ^uint32(0) {
				first = tick
			}
			sz.body = make([]int, w.Len())
			rel := func(i int) bool {
				if radius == 0 {
					return true
				}
				p := w.Pos(i)
				dx, dy := p.X-view.X, p.Y-view.Y
				return dx*dx+dy*dy <= radius*radius
			}
			turn := func(i int) bool {
				p := w.Pos(i)
				dx, dy := p.X-view.X, p.Y-view.Y
				d := float32(math.Sqrt(float64(dx*dx + dy*dy)))
				turns := min(gap, maxEvery)
				if tick == first {
					turns = 1 // the first update: this tick's turns only
				}
				late, margin := bruteLate(w, tick, turns, i, d, radius, bands)
				if margin < 1e-3 {
					t.Fatalf("seed %d puts entity %d on a band's edge, where rounding decides: use another seed", seed, i)
				}
				return !late
			}
			for k := 0; k < 1+rng.IntN(2); k++ {
				for i := range sz.body {
					sz.body[i] = rng.IntN(25)
				}
				budget := 19 + rng.IntN(400)
				got, ok := s.Schedule(time.Time{}, w, budget, sz)
				want := m.schedule(w, rel, turn, seq, budget, 8, sz, k == 0, gap > maxGap)
				if !ok {
					got = nil
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d tick %d packet %d: got %v, model %v", seed, tick, k, got, want)
				}
				if size := sz.exactSize(got); size > budget {
					t.Fatalf("frame %d bytes over budget %d", size, budget)
				}
				if rng.IntN(5) == 0 {
					s.Lost(idsOf(w, got))
					m.lost(w, seq)
				}
				seq++
			}
			gap = 0
		}
	}
}

// idsOf returns the ids of the entities sel picks in w: what a frame's
// writer records of a packet for Lost.
func idsOf(w *World, sel []int32) []proto.NetworkID { return appendIDs(nil, w, sel) }

// appendIDs appends the ids of the entities sel picks in w to dst.
func appendIDs(dst []proto.NetworkID, w *World, sel []int32) []proto.NetworkID {
	for _, i := range sel {
		dst = append(dst, w.ID(int(i)))
	}
	return dst
}

func TestRelevanceGridMatchesBruteForce(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		rw := newRandWorld(rng, 1+rng.IntN(2000))
		w := NewWorld(WorldConfig{CellSize: 1 + rng.Float32()*40})
		tick := rng.Uint32()
		rw.fill(w, tick, 0)
		c := Vec3{X: rng.Float32()*300 - 150, Y: rng.Float32()*300 - 150}
		r := rng.Float32() * 120
		var cfg []Band
		for range rng.IntN(MaxBands + 1) {
			cfg = append(cfg, Band{From: rng.Float32(), Every: []int{2, 4, 8}[rng.IntN(3)]})
		}
		b := newBands(cfg, r)
		rel := make([]uint64, (w.Len()+63)/64)
		late := make([]uint64, len(rel))
		gap := uint32(1 + rng.IntN(maxEvery))
		w.within(rel, late, c, r, &b, gap, nil)
		for i := 0; i < w.Len(); i++ {
			p := w.Pos(i)
			dx, dy := p.X-c.X, p.Y-c.Y
			d := float32(math.Sqrt(float64(dx*dx + dy*dy)))
			want := dx*dx+dy*dy <= r*r
			if idset.Bit(rel, i) != want {
				t.Fatalf("seed %d entity %d: relevant %v want %v", seed, i, !want, want)
			}
			wantLate, margin := bruteLate(w, tick, gap, i, d, r, cfg)
			wantLate = wantLate && want
			if idset.Bit(late, i) != wantLate && margin > 1e-3 {
				t.Fatalf("seed %d entity %d at %.2f of radius %.2f (bands %v): late %v want %v", seed, i, d, r, cfg, !wantLate, wantLate)
			}
		}
	}
}

// Under a full budget, every relevant changed entity is sent within a
// bounded number of ticks, even while others keep changing.
func TestSchedulerNoStarvation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 500
	rw := newRandWorld(rng, n)
	w := NewWorld(WorldConfig{Kinds: []Kind{{Weight: 1}, {Weight: 8}, {Weight: 0.1}}})
	s := NewScheduler(SchedulerConfig{})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, n)}
	for i := range sz.body {
		sz.body[i] = 8
	}
	waiting := map[int]int{}
	worst := 0
	for tick := uint32(0); tick < 2000; tick++ {
		// 20 % change per tick: 100 × ~10 bytes of demand against a
		// ~400-byte packet, so the scheduler is always over-subscribed.
		rw.fill(w, tick, 0.2)
		sel, _ := s.Schedule(time.Time{}, w, 420, sz)
		for _, i := range sel {
			if since, ok := waiting[int(i)]; ok {
				worst = max(worst, int(tick)-since)
				delete(waiting, int(i))
			}
		}
		for i := 0; i < n; i++ {
			if _, ok := waiting[i]; !ok && s.Priority(i) > 0 {
				waiting[i] = int(tick)
			}
		}
	}
	if worst > 40 {
		t.Fatalf("an entity waited %d ticks", worst)
	}
	t.Logf("worst wait %d ticks", worst)
}

// newChurnRig is what the layout-change tests share: a random world of
// 300 entities, a scheduler of view radius over it, and a sizer whose
// entity bodies measure body(rng) bytes.
func newChurnRig(seed uint64, radius float32, body func(*rand.Rand) int) (*rand.Rand, *randWorld, *World, *Scheduler, *fakeSizer) {
	rng := rand.New(rand.NewPCG(seed, seed))
	rw := newRandWorld(rng, 300)
	w := NewWorld(WorldConfig{CellSize: 16})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, 4096)}
	for i := range sz.body {
		sz.body[i] = body(rng)
	}
	return rng, rw, w, NewScheduler(SchedulerConfig{Radius: radius}), sz
}

// A scheduler that missed layout changes realigns its per-entity state
// by id, through the World's remaps (one per change): priorities
// by slot, bitsets by index.
func TestSchedulerRealignsByID(t *testing.T) {
	rng, rw, w, s, sz := newChurnRig(12, 40, func(rng *rand.Rand) int { return 1 + rng.IntN(20) })
	tick := uint32(0)
	for round := 0; round < 200; round++ {
		for range 1 + rng.IntN(3) {
			rw.fill(w, tick, 0.3)
			tick++
			s.Schedule(time.Time{}, w, 200, sz)
		}
		type state struct {
			prio         float32
			pending, rel bool
		}
		old := map[proto.NetworkID]state{}
		for i, id := range w.ids { // the layout s is aligned with
			old[id] = state{s.Priority(i), idset.Bit(s.pending, i), idset.Bit(s.rel, i)}
		}
		layout := w.layouts.Layout()
		for changes := 1 + rng.IntN(4); w.layouts.Layout()-layout < uint64(changes); {
			rw.churn()
			rw.fill(w, tick, 0.3)
			tick++
		}
		s.align(w)
		for i := 0; i < w.Len(); i++ {
			want := old[w.ID(i)]
			got := state{s.Priority(i), idset.Bit(s.pending, i), idset.Bit(s.rel, i)}
			if got != want {
				t.Fatalf("round %d, %d layout changes: entity %d: %+v want %+v", round, w.layouts.Layout()-layout, w.ID(i), got, want)
			}
		}
	}
}

// A scheduler more layout changes behind than the World keeps starts
// over: nothing pending, every relevant entity re-prioritised and sent.
func TestSchedulerFarBehindStartsOver(t *testing.T) {
	_, rw, w, s, sz := newChurnRig(13, 1e6, func(*rand.Rand) int { return 1 })
	rw.fill(w, 0, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 1<<20, sz); len(sel) != w.Len() {
		t.Fatalf("first packet: %d of %d entities", len(sel), w.Len())
	}
	// Nothing changes: the next packet carries nothing.
	rw.fill(w, 1, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 1<<20, sz); len(sel) != 0 {
		t.Fatalf("unchanged world: %d entities sent", len(sel))
	}
	tick := uint32(2)
	for layout := w.layouts.Layout(); w.layouts.Layout()-layout <= idset.HistoryLen; tick++ {
		rw.churn()
		rw.fill(w, tick, 0)
	}
	sel, _ := s.Schedule(time.Time{}, w, 1<<20, sz)
	if len(sel) != w.Len() {
		t.Fatalf("after %d+ layout changes unseen: %d of %d entities sent, want all", idset.HistoryLen, len(sel), w.Len())
	}
}

func TestSchedulerLostPacketResent(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	rw := newRandWorld(rng, 100)
	w := NewWorld(WorldConfig{})
	s := NewScheduler(SchedulerConfig{})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, 100)}
	for i := range sz.body {
		sz.body[i] = 5
	}
	rw.fill(w, 0, 0)
	first, _ := s.Schedule(time.Time{}, w, 2000, sz) // everything is new
	if len(first) != 100 {
		t.Fatalf("first packet carried %d", len(first))
	}
	rw.fill(w, 1, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 2000, sz); len(sel) != 0 {
		t.Fatalf("unchanged entities re-sent: %v", sel)
	}
	s.Lost(idsOf(w, first))
	rw.fill(w, 2, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 2000, sz); !slices.Equal(sel, first) {
		t.Fatalf("lost packet's entities not re-sent: %d of %d", len(sel), len(first))
	}
	// A loss whose contents are no longer known re-prioritises
	// everything.
	for q := uint16(3); q < 40; q++ {
		rw.fill(w, uint32(q), 0)
		s.Schedule(time.Time{}, w, 2000, sz)
	}
	s.LostUnknown()
	rw.fill(w, 40, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 2000, sz); len(sel) != 100 {
		t.Fatalf("old loss re-sent %d entities, want all", len(sel))
	}
	// A packet that carried no snapshot frame carried nothing; ids gone
	// since are skipped.
	s.Lost(nil)
	s.Lost([]proto.NetworkID{rw.ids[len(rw.ids)-1] + 1})
	rw.fill(w, 41, 0)
	if sel, _ := s.Schedule(time.Time{}, w, 2000, sz); len(sel) != 0 {
		t.Fatalf("unknown loss re-sent %d", len(sel))
	}
}

func TestSchedulerBandwidthCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	rw := newRandWorld(rng, 400)
	w := NewWorld(WorldConfig{})
	const capBps = 20000
	s := NewScheduler(SchedulerConfig{BandwidthCap: capBps})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, 400)}
	for i := range sz.body {
		sz.body[i] = 10
	}
	t0 := time.Unix(100, 0)
	total := 0
	for tick := 0; tick < 600; tick++ { // 10 s
		rw.fill(w, uint32(tick), 0.5)
		now := t0.Add(time.Duration(tick) * time.Second / 60)
		sel, ok := s.Schedule(now, w, DefaultBudget, sz)
		if ok {
			total += sz.exactSize(sel)
		}
	}
	burst := max(capBps/10, DefaultBudget)
	if limit := capBps*10 + burst; total > limit || total < capBps*9 {
		t.Fatalf("sent %d bytes in 10 s with a cap of %d B/s", total, capBps)
	}
}

func TestSchedulerZeroAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	rw := newRandWorld(rng, 1000)
	w := NewWorld(WorldConfig{CellSize: 16})
	s := NewScheduler(SchedulerConfig{Radius: 60, Bands: []Band{{From: 0.5, Every: 2}, {From: 0.75, Every: 4}}})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, 1000)}
	for i := range sz.body {
		sz.body[i] = 1 + rng.IntN(20)
	}
	tick := uint32(0)
	var carried []proto.NetworkID
	step := func() {
		rw.fill(w, tick, 0.1) // (allocates the changed bitset: not measured below)
		tick++
	}
	for range 300 {
		step()
		sel, _ := s.Schedule(time.Time{}, w, DefaultBudget, sz)
		s.Lost(idsOf(w, sel)[:min(len(sel), 8)])
	}
	changed := make([]uint64, 16)
	a := testing.AllocsPerRun(200, func() {
		w.Begin(tick)
		for i, id := range rw.ids {
			w.Add(id, rw.pos[i], rw.kind[i])
		}
		changed[rng.IntN(16)] = rng.Uint64()
		w.End(changed)
		tick++
		sel, _ := s.Schedule(time.Time{}, w, DefaultBudget, sz)
		carried = appendIDs(carried[:0], w, sel[:min(len(sel), 8)])
		s.Lost(carried)
	})
	if a != 0 {
		t.Fatalf("world update + scheduler step: %v allocs", a)
	}
}

// TestSchedulerBands: with room for everything and every entity changing
// every tick, a near entity goes out every tick and one in a band of
// period P exactly every P-th tick, on turns spread over the ticks; a far
// entity that changed only between its turns still goes out at its next
// turn; an always-relevant id is exempt from its band.
func TestSchedulerBands(t *testing.T) {
	const n = 400
	w := NewWorld(WorldConfig{CellSize: 10})
	pos := make([]Vec3, n)
	for i := range pos {
		// Along the X axis, 0.25 units apart: 0–100 from the view at 0.
		pos[i] = Vec3{X: float32(i) / 4}
	}
	fill := func(tick uint32, changed bool) {
		w.Begin(tick)
		for i, p := range pos {
			w.Add(proto.NetworkID(i+1), p, 0)
		}
		bits := make([]uint64, (n+63)/64)
		if changed {
			for i := range bits {
				bits[i] = ^uint64(0)
			}
		}
		w.End(bits)
	}
	s := NewScheduler(SchedulerConfig{Radius: 100, Bands: []Band{{From: 0.75, Every: 8}, {From: 0.25, Every: 2}, {From: 0.5, Every: 3}}})
	s.SetAlwaysRelevant([]proto.NetworkID{n})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, n)}
	for i := range sz.body {
		sz.body[i] = 1
	}
	sent := make([][]uint32, n) // ticks each entity went out
	perTick := map[int][]int{}  // period -> entities sent, per tick
	for tick := uint32(0); tick < 64; tick++ {
		fill(tick, true)
		sel, ok := s.Schedule(time.Time{}, w, 1<<20, sz)
		if !ok {
			t.Fatal("no frame")
		}
		counts := map[int]int{}
		for _, i := range sel {
			sent[i] = append(sent[i], tick)
			counts[period(int(i), n)]++
		}
		for p, c := range counts {
			perTick[p] = append(perTick[p], c)
		}
	}
	for i, ticks := range sent {
		p := period(i, n)
		if i == n-1 {
			p = 1 // always relevant
		}
		if len(ticks) != 64/p {
			t.Fatalf("entity at distance %.2f (period %d) went out %d times in 64 ticks, want %d", pos[i].X, p, len(ticks), 64/p)
		}
		for k := 1; k < len(ticks); k++ {
			if ticks[k]-ticks[k-1] != uint32(p) {
				t.Fatalf("entity at distance %.2f (period %d) went out at ticks %v", pos[i].X, p, ticks)
			}
		}
	}
	// Turns are spread: each tick carries about 1/P of a band.
	for p, counts := range perTick {
		if p == 1 {
			continue
		}
		lo, hi := slices.Min(counts), slices.Max(counts)
		if hi > 3*max(lo, 1) {
			t.Fatalf("period %d: between %d and %d of the band's entities per tick", p, lo, hi)
		}
	}
	// A far entity that changes once, between its turns, still goes out at
	// its next turn.
	far := n - 2 // distance 99.5, period 8
	next := sent[far][len(sent[far])-1] + 8
	for tick := uint32(64); tick <= next; tick++ {
		fill(tick, false)
		if tick == next-5 {
			idset.SetBit(w.changed, far)
		}
		sel, _ := s.Schedule(time.Time{}, w, 1<<20, sz)
		if got := slices.Contains(sel, int32(far)); got != (tick == next) {
			t.Fatalf("tick %d (next turn %d): far entity sent %v", tick, next, got)
		}
	}
}

// TestSchedulerBandsAcrossSkippedTicks: a World that advances three
// ticks per update (a server that fell behind steps its game three times
// and describes the last state) still gives each far entity a turn on
// every update that follows one of its turn ticks: none waits beyond its
// period, none starves.
func TestSchedulerBandsAcrossSkippedTicks(t *testing.T) {
	const n, stride = 400, 3
	w := NewWorld(WorldConfig{CellSize: 10})
	s := NewScheduler(SchedulerConfig{Radius: 100, Bands: []Band{{From: 0.75, Every: 8}, {From: 0.25, Every: 2}, {From: 0.5, Every: 3}}})
	sz := &fakeSizer{w: w, fixed: 19, body: make([]int, n)}
	for i := range sz.body {
		sz.body[i] = 1
	}
	all := make([]uint64, (n+63)/64)
	for i := range all {
		all[i] = ^uint64(0)
	}
	prev := uint32(0)
	for tick := uint32(0); tick < 120; tick += stride {
		w.Begin(tick)
		for i := range n {
			w.Add(proto.NetworkID(i+1), Vec3{X: float32(i) / 4}, 0)
		}
		w.End(all)
		sel, ok := s.Schedule(time.Time{}, w, 1<<20, sz)
		if !ok {
			t.Fatal("no frame")
		}
		for i := range n {
			p := uint32(period(i, n))
			// A turn of i's band fell on a tick since the last update
			// (on the first, on this tick only).
			want, from := false, max(prev+1, tick-min(tick, maxEvery-1))
			if tick == 0 {
				from = 0
			}
			for tt := from; tt <= tick; tt++ {
				want = want || phase(tt, proto.NetworkID(i+1))&(p-1) == 0
			}
			if got := slices.Contains(sel, int32(i)); got != want {
				t.Fatalf("tick %d (last update %d): entity at distance %.2f (period %d) sent %v, want %v", tick, prev, float32(i)/4, p, got, want)
			}
		}
		prev = tick
	}
}

// period is the band period TestSchedulerBands expects for entity i of n
// spread from distance 0 to 100 (the Every of 3 rounds up to 4).
func period(i, n int) int {
	switch d := float32(i) / 4; {
	case d >= 75:
		return 8
	case d >= 50:
		return 4
	case d >= 25:
		return 2
	}
	return 1
}

func TestRelevanceAlwaysAndFilter(t *testing.T) {
	w := NewWorld(WorldConfig{CellSize: 10, Kinds: []Kind{0: {}, 1: {AlwaysRelevant: true}}})
	w.Begin(0)
	// id 1: near; id 2: far; id 3: far but always-relevant kind; id 4: far,
	// always relevant for this player; id 5: near but filtered out.
	w.Add(1, Vec3{X: 1}, 0)
	w.Add(2, Vec3{X: 500}, 0)
	w.Add(3, Vec3{X: 500}, 1)
	w.Add(4, Vec3{X: -500}, 0)
	w.Add(5, Vec3{Y: 2}, 0)
	w.End([]uint64{0b11111})
	s := NewScheduler(SchedulerConfig{Radius: 50, Filter: func(w *World, i int) bool { return w.ID(i) != 5 }})
	s.SetAlwaysRelevant([]proto.NetworkID{4})
	sz := &fakeSizer{w: w, fixed: 19, body: []int{3, 3, 3, 3, 3}}
	sel, ok := s.Schedule(time.Time{}, w, 1000, sz)
	if !ok {
		t.Fatal("no frame")
	}
	var ids []proto.NetworkID
	for _, i := range sel {
		ids = append(ids, w.ID(int(i)))
	}
	if !slices.Equal(ids, []proto.NetworkID{1, 3, 4}) || s.Relevant() != 3 {
		t.Fatalf("sent %v, relevant %d; want [1 3 4]", ids, s.Relevant())
	}
	// Moving the view makes entity 2 newly relevant: it is sent although
	// it did not change.
	s.SetView(Vec3{X: 480})
	w.Begin(1)
	w.Add(1, Vec3{X: 1}, 0)
	w.Add(2, Vec3{X: 500}, 0)
	w.Add(3, Vec3{X: 500}, 1)
	w.Add(4, Vec3{X: -500}, 0)
	w.Add(5, Vec3{Y: 2}, 0)
	w.End([]uint64{0})
	sel, _ = s.Schedule(time.Time{}, w, 1000, sz)
	if len(sel) != 1 || w.ID(int(sel[0])) != 2 {
		t.Fatalf("after moving: sent %v", sel)
	}
}

// TestOwnEntitiesFresh: the entities a player's slots own (World.AddOwned,
// Scheduler.SetPlayers) are relevant beyond the radius and past the
// filter, and take part every tick in a far band; another player's
// entity there keeps the band's rhythm.
func TestOwnEntitiesFresh(t *testing.T) {
	w := NewWorld(WorldConfig{CellSize: 10})
	s := NewScheduler(SchedulerConfig{Radius: 100, Bands: []Band{{From: 0.5, Every: 4}},
		Filter: func(w *World, i int) bool { return w.Owner(i) != 7 }})
	s.SetPlayers([]uint16{7})
	sz := &fakeSizer{w: w, fixed: 19, body: []int{3, 3, 3}}
	sent := [3]int{}
	for tick := range uint32(16) {
		w.Begin(tick)
		w.AddOwned(1, Vec3{X: 90}, 0, 7)  // own, in the far band
		w.AddOwned(2, Vec3{X: 90}, 0, 8)  // another player's, in the far band
		w.AddOwned(3, Vec3{X: 500}, 0, 7) // own, beyond the radius
		w.End([]uint64{0b111})
		sel, ok := s.Schedule(time.Time{}, w, 1000, sz)
		if !ok {
			t.Fatal("no frame")
		}
		for _, i := range sel {
			sent[i]++
		}
	}
	if sent != [3]int{16, 4, 16} {
		t.Fatalf("sent %v times in 16 ticks, want [16 4 16]", sent)
	}
	if got := w.OwnedBy(nil, 7); !slices.Equal(got, []int32{0, 2}) {
		t.Fatalf("OwnedBy(7) = %v", got)
	}
}

// confirmSizer is a fakeSizer that confirms the entities given a
// confirmation size.
type confirmSizer struct {
	fakeSizer
	confirm []int
}

func (c *confirmSizer) ConfirmSize(i int) int { return c.confirm[i] }

// TestConfirmations: with SchedulerConfig.Confirm and a Confirmer, the room a packet has left goes to
// confirmations of the relevant entities whose turn it is and that it
// does not send (those the sizer can confirm), never past the budget.
func TestConfirmations(t *testing.T) {
	w := NewWorld(WorldConfig{CellSize: 10})
	fill := func(tick uint32, changed uint64) {
		w.Begin(tick)
		for i := range 4 {
			w.Add(proto.NetworkID(i+1), Vec3{X: float32(i)}, 0)
		}
		w.End([]uint64{changed})
	}
	s := NewScheduler(SchedulerConfig{Confirm: true})
	sz := &confirmSizer{fakeSizer{w: w, fixed: 19, body: []int{3, 3, 3, 3}}, []int{0, 1, 1, 0}}
	fill(0, 0b1111)
	if sel, _ := s.Schedule(time.Time{}, w, 1000, sz); len(sel) != 4 {
		t.Fatalf("first tick sent %v", sel)
	}
	// Entity 1 changed; 2 can be confirmed, 0 and 3 not.
	fill(1, 0b0001)
	sz.body = []int{3, 0, 0, 0}
	if sel, _ := s.Schedule(time.Time{}, w, 1000, sz); !slices.Equal(sel, []int32{0, 1, 2}) {
		t.Fatalf("sent and confirmed %v, want [0 1 2]", sel)
	}
	// Room for the change alone: no confirmation.
	fill(2, 0b0001)
	if sel, _ := s.Schedule(time.Time{}, w, 19+3+1, sz); !slices.Equal(sel, []int32{0}) {
		t.Fatalf("in a full packet, sent %v, want [0]", sel)
	}
	// Not configured to confirm: the change alone, whatever the room.
	s = NewScheduler(SchedulerConfig{})
	fill(3, 0b1111)
	s.Schedule(time.Time{}, w, 1000, sz)
	fill(4, 0b0001)
	if sel, _ := s.Schedule(time.Time{}, w, 1000, sz); !slices.Equal(sel, []int32{0}) {
		t.Fatalf("without Confirm, sent %v, want [0]", sel)
	}
}
