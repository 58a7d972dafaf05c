package interest

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// Sizer reports what entities cost in the packet being built. deltacomp's
// Encoder implements it; the scheduler never sees encoded bytes.
type Sizer interface {
	// FixedSize is what the frame costs with no entities (headers and
	// anything the encoder always writes).
	FixedSize() int
	// BodySize is entity i's encoded size without its id header, or 0 when
	// the player already holds its state and nothing need be sent.
	BodySize(i int) int
	// LinkSize is entity i's id header size when the entity written just
	// before it (in ascending index order) is prev, or prev = −1 if none.
	// Called only after BodySize(i).
	LinkSize(prev, i int) int
}

// Confirmer is a Sizer that can also confirm entities: tell the player
// that the record it holds of an entity is the entity's at this tick
// (deltacomp's Encoder does, with an all-zero patch). A Scheduler given
// one and SchedulerConfig.Confirm fills the room its packet has left
// with confirmations of the relevant entities whose turn it is and that
// it does not send.
type Confirmer interface {
	Sizer
	// ConfirmSize is entity i's confirmation size without its id header
	// (LinkSize gives that), or 0 when the player does not hold the
	// entity's current record, so only a patch can say what it is.
	ConfirmSize(i int) int
}

// SchedulerConfig configures a Scheduler. The zero value is the default.
type SchedulerConfig struct {
	// Radius is the view distance (X–Y plane) of SetView's position; an
	// entity farther away is not relevant unless always relevant. 0 (the
	// default) makes every entity relevant.
	Radius float32
	// Filter, when set, vetoes entities the radius found relevant (team
	// visibility, line of sight...). It runs once per tick per candidate.
	Filter func(w *World, i int) bool
	// BandwidthCap limits what the player is sent, in bytes per second of
	// snapshot frames, as a token bucket refilled at that rate. 0: no cap.
	BandwidthCap int
	// Burst is the bucket size in bytes. Default BandwidthCap/10 (100 ms),
	// at least one default packet.
	Burst int
	// MaxSkips is how many candidates that do not fit the remaining
	// budget are passed over (to try smaller ones) before the packet is
	// closed. Default 8.
	MaxSkips int
	// Bands lower the rate at which far entities are considered, as
	// Tribes and most area-of-interest systems do: an entity at least
	// Bands[k].From × Radius away from the view takes part only on every
	// Bands[k].Every-th tick (the farthest band that applies wins). Its
	// changes in between are kept for its next turn, so none is lost, and
	// its priority grows only on its turns, as if it ticked at that rate.
	// Turns are spread over ticks by entity id, so the load is even.
	// Entities within Bands[0].From × Radius, always-relevant ones
	// beyond the radius, those of SetAlwaysRelevant and the player's own
	// (SetPlayers) take part every tick. Needs Radius > 0; at most
	// MaxBands bands, in any order. Empty (the default): every relevant
	// entity every tick.
	Bands []Band
	// Confirm fills the room a packet has left with confirmations
	// (Confirmer) of the relevant entities whose turn it is and that the
	// packet does not send, so that the player's client can tell an
	// unchanged entity from a stale one (game.Client.UpdatedAt). Each
	// costs 2–3 bytes per turn and the work of sending it: in game's
	// BenchmarkServerTick (the arena, whose entities mostly move, 64 and
	// 256 players) 4–7 % more bytes and about a fifth more server CPU,
	// half of what the arena's bands save; a world of resting entities
	// pays for each of them every tick (the cubes-ode scene: 5× the
	// bytes). Default false: unchanged entities count as stale until
	// they change and are sent.
	Confirm bool
}

// Band is a distance band of SchedulerConfig.Bands.
type Band struct {
	// From is where the band starts, as a fraction of the radius (0–1).
	From float32
	// Every is the band's period in ticks: 2, 4 or 8 (other values are
	// rounded up to the next of those; 1 or less disables the band).
	Every int
}

// MaxBands is the most distance bands a scheduler takes.
const MaxBands = 3

// bands is a scheduler's distance bands in a form within reads without
// a branch: the squared distances where bands 1..n start (ascending; +Inf
// past n), so that the band of an entity at squared distance d2 is the
// number of them d2 reaches, and each band's period less one (band 0, the
// nearest, has period 1: mask 0).
type bands struct {
	n     int
	from2 [MaxBands]float32
	mask  [MaxBands + 1]uint32
}

func newBands(cfg []Band, radius float32) bands {
	b := bands{from2: [MaxBands]float32{float32(math.Inf(1)), float32(math.Inf(1)), float32(math.Inf(1))}}
	if radius <= 0 {
		return b
	}
	sorted := slices.Clone(cfg)
	slices.SortFunc(sorted, func(x, y Band) int { return cmp.Compare(x.From, y.From) })
	for _, c := range sorted {
		if c.Every <= 1 || b.n == MaxBands {
			continue
		}
		shift := uint8(bits.Len(uint(min(c.Every, maxEvery) - 1)))
		d := max(c.From, 0) * radius
		b.from2[b.n], b.mask[b.n+1] = d*d, 1<<shift-1
		b.n++
	}
	return b
}

// maxPriority caps the doubling so priorities stay finite; entities at the
// cap are taken in id order, and each written one resets, so waits stay
// bounded.
const maxPriority = 1e30

// DefaultBudget is the default room for one snapshot delta frame: a 1200
// byte UDP payload less the 26-byte session header and the 16-byte AEAD tag.
const DefaultBudget = 1200 - 26 - 16

// Scheduler decides, for one player, which entities each packet carries:
// relevance (radius around the view position on the World's spatial grid,
// always-relevant kinds and ids, a custom filter), a priority accumulator
// per entity (a changed entity adds its kind's weight, existing
// priority doubles every tick, unchanged entities do not accumulate),
// packing by priority into the packet budget with exact sizes from a
// Sizer, re-prioritising what lost packets carried, and an optional
// bandwidth cap.
//
// Per tick and player: SetView if the player moved, then Schedule once per
// packet (or Update when the player gets no packet this tick). When a
// packet is lost, tell the scheduler what it carried with Lost, as the
// frame's writer recorded it (deltacomp's Encoder.Lost returns it), or
// LostUnknown when that is no longer known: the scheduler keeps no record
// of its own. A Scheduler is not safe for concurrent use; different
// players' schedulers may run in parallel over one World.
//
// A scheduler's per-entity state keeps no copy of the entities' ids:
// priorities are indexed by the entities' slots in the World
// (idset.History), which entities keep while they exist, and bitsets
// by the World's indices. It follows the World's layout changes through
// the World's remaps: a change clears the priorities of the slots it
// freed and shifts the bitsets. It starts over (every relevant entity
// re-prioritised) if it fell more than idset.HistoryLen changes behind.
type Scheduler struct {
	radius   float32
	filter   func(*World, int) bool
	capRate  float64
	burst    float64
	maxSkips int

	confirms bool // SchedulerConfig.Confirm

	view    Vec3
	always  []proto.NetworkID
	players []uint16 // SetPlayers
	mine    []int32  // scratch: the players' entities this update
	bands   bands

	layout  uint64    // the World's layout the state below is indexed by
	slot    []int32   // the World's index -> slot (update sets it)
	prio    []float32 // by slot
	rel     []uint64  // relevant this tick
	prevRel []uint64  // relevant last tick
	pending []uint64  // prio > 0
	late    []uint64  // relevant, in a band whose turn this tick is not
	turn    []uint64  // relevant and taking part this tick: rel &^ late
	dirty   []uint64  // relevant, changed since their last turn
	sel     []uint64
	zero    []uint64 // sized at 0 in packAll
	ps      *Scratch // the ranking's keys: own, or its goroutine's (UseScratch)
	own     Scratch
	// overflowed: the last packet had no room for every pending entity
	// (pack skipped some).
	overflowed bool
	out        []int32

	ticked  bool
	warmSum byte   // idset.Warm's result
	gen     uint64 // the World update of the last update
	tick    uint32 // and its tick
	all     bool   // re-prioritise every relevant entity next tick
	// lost holds what the packets lost since the last update carried,
	// each packet's ids ascending, one packet after the other.
	lost []proto.NetworkID

	tokens  float64
	lastNow time.Time
}

// Scratch is the working memory a Scheduler ranks one packet's entities
// in. The schedulers one goroutine runs, one after the other, can share
// one Scratch (UseScratch): it then stays in that core's cache, where
// each client's own would be cold by its next packet. The zero value is
// ready to use.
type Scratch struct {
	keys, spare []uint64 // the ranking's keys, and sortByHigh's other buffer
}

// UseScratch makes the scheduler rank in sc from its next Schedule on
// (nil: its own). Schedulers may share a Scratch only when no two of
// them run Schedule at once.
func (s *Scheduler) UseScratch(sc *Scratch) {
	if sc == nil {
		sc = &s.own
	}
	s.ps = sc
}

// NewScheduler returns a scheduler for one player.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	s := &Scheduler{radius: cfg.Radius, filter: cfg.Filter, maxSkips: cfg.MaxSkips, bands: newBands(cfg.Bands, cfg.Radius),
		confirms: cfg.Confirm}
	s.ps = &s.own
	if s.maxSkips <= 0 {
		s.maxSkips = 8
	}
	if cfg.BandwidthCap > 0 {
		s.capRate = float64(cfg.BandwidthCap)
		s.burst = float64(cfg.Burst)
		if s.burst <= 0 {
			s.burst = max(s.capRate/10, DefaultBudget)
		}
		s.tokens = s.burst
	}
	return s
}

// SetView sets the player's position for relevance.
func (s *Scheduler) SetView(pos Vec3) { s.view = pos }

// SetAlwaysRelevant sets entities this player always sees (its own
// avatar, party members). ids is copied.
func (s *Scheduler) SetAlwaysRelevant(ids []proto.NetworkID) {
	s.always = append(s.always[:0], ids...)
	slices.Sort(s.always)
}

// SetPlayers sets the player slots this scheduler's player plays (its
// connection's players). The entities they own (World.AddOwned) are
// always relevant and take part every tick, never held back by a band or
// the filter: their client predicts them and re-simulates them from the
// state it receives, which must hold them as they are at its tick.
// slots is copied.
func (s *Scheduler) SetPlayers(slots []uint16) {
	s.players = append(s.players[:0], slots...)
}

// Reset forgets priorities and what was sent: every relevant entity is
// treated as new to the player (after a resync).
func (s *Scheduler) Reset() {
	clear(s.prio)
	clear(s.pending)
	clear(s.dirty)
	clear(s.prevRel)
	clear(s.rel)
	s.lost = s.lost[:0]
	s.ticked = false
}

// Priority returns entity i's current priority (for tests and debugging).
// Valid after an update.
func (s *Scheduler) Priority(i int) float32 { return s.prio[s.slot[i]] }

func (s *Scheduler) align(w *World) {
	// Usually one layout change since the last tick: follow the World's
	// remaps (built once for all players).
	if !w.layouts.Follow(&s.layout, s.move) || len(s.prio) != w.layouts.SlotCount() {
		s.restart(w)
	}
	s.slot = w.layouts.Slots()
}

// move realigns the per-entity state from one layout to the next, m:
// the slots it freed forget their priority, and the bitsets shift to
// the new indices.
func (s *Scheduler) move(m *idset.Remap) {
	for _, sl := range m.Freed {
		s.prio[sl] = 0
	}
	s.prio = idset.Grow(s.prio, m.Slots)
	s.pending = m.ShiftBits(s.pending)
	// update swaps rel into prevRel: rel carries last tick's relevance.
	s.rel = m.ShiftBits(s.rel)
	s.dirty = m.ShiftBits(s.dirty)
	s.resize(m.NewLen)
}

// restart sizes the per-entity state for w's entities and forgets it
// (the scheduler fell behind more layout changes than the World keeps,
// or never saw one): with last tick's relevance cleared, every relevant
// entity counts as newly relevant and is re-prioritised.
func (s *Scheduler) restart(w *World) {
	n := len(w.ids)
	s.prio = idset.Grow(s.prio[:0], w.layouts.SlotCount())
	s.pending = idset.ResizeBits(s.pending, n)
	s.rel = idset.ResizeBits(s.rel, n)
	s.dirty = idset.ResizeBits(s.dirty, n)
	s.resize(n)
	s.layout = w.layouts.Layout()
}

// resize sizes the bitsets rebuilt every tick (whatever they held) for n
// entities.
func (s *Scheduler) resize(n int) {
	if len(s.late) == (n+63)/64 && len(s.prevRel) == len(s.late) {
		return
	}
	s.prevRel = idset.ResizeBits(s.prevRel, n)
	s.late = idset.ResizeBits(s.late, n)
	s.turn = idset.ResizeBits(s.turn, n)
	s.sel = idset.ResizeBits(s.sel, n)
	s.zero = idset.ResizeBits(s.zero, n)
}

// Update computes relevance and accumulates priorities for the World's
// tick; it runs once per World update (Schedule calls it too). A player
// sent every few ticks (paced) need not be updated in between: the next
// update learns what changed in the updates it skipped, and a far entity
// takes part if its band's turn fell on any tick since the last update
// (the World's ticks, which may advance by more than one per update: a
// server that fell behind steps its game several times and describes
// only the last state), as long as it skipped at most
// MaxSkippedUpdates in a row. Beyond that every relevant entity is
// re-prioritised, as if new.
func (s *Scheduler) Update(w *World) { s.update(w) }

// MaxSkippedUpdates is how many World updates in a row a scheduler may
// miss and still learn exactly what changed in them.
const MaxSkippedUpdates = maxGap - 1

func (s *Scheduler) update(w *World) {
	s.align(w)
	fresh := !s.ticked || s.gen != w.gen
	if fresh {
		// Once per World update, before the lost packets' entities, the
		// update and the packing read the priorities at random.
		s.warmSum = idset.Warm(s.prio)
	}
	s.takeLost(w)
	if !fresh {
		return
	}
	// The World updates since the last (1 when none was skipped), and
	// the ticks, whose turns count. The first update (or the first
	// after Reset) sees everything as new, and only this tick's turns.
	gap, turns := uint64(maxGap+1), uint32(1)
	if s.ticked {
		gap = w.gen - s.gen
		turns = min(max(w.tick-s.tick, 1), maxEvery)
	}
	s.ticked, s.gen, s.tick = true, w.gen, w.tick
	changed := w.changedWithin(gap)
	slot := s.slot
	n := len(w.ids)
	s.prevRel, s.rel = s.rel, s.prevRel
	rel, late := s.rel, s.late
	clear(late)
	if s.radius == 0 {
		for k := range rel {
			rel[k] = ^uint64(0)
		}
		if n%64 != 0 {
			rel[len(rel)-1] = 1<<(n%64) - 1
		}
	} else {
		clear(rel)
		w.within(rel, late, s.view, s.radius, &s.bands, turns, s.filter)
		for k := range rel {
			rel[k] |= w.alwaysB[k]
		}
	}
	for _, id := range s.always {
		if i := w.Index(id); i >= 0 {
			idset.SetBit(rel, i)
			idset.ClearBit(late, i)
		}
	}
	s.mine = s.mine[:0]
	for _, p := range s.players {
		s.mine = w.OwnedBy(s.mine, p)
	}
	for _, i := range s.mine {
		idset.SetBit(rel, int(i))
		idset.ClearBit(late, int(i))
	}
	all := s.all || changed == nil
	s.all = false
	for k, r := range rel {
		turn := r &^ late[k]
		s.turn[k] = turn
		// What changed or became relevant since an entity's last turn
		// boosts it on its turn.
		dirty := r
		if !all {
			dirty = (s.dirty[k] | changed[k] | r&^s.prevRel[k]) & r
		}
		boost := dirty & turn
		s.dirty[k] = dirty &^ turn
		// Entities no longer relevant forget their priority.
		for m := s.pending[k] &^ r; m != 0; m &= m - 1 {
			s.prio[slot[k*64+bits.TrailingZeros64(m)]] = 0
		}
		s.pending[k] &= r
		m := (boost | s.pending[k]) & turn
		s.pending[k] |= m
		for ; m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			p := s.prio[slot[i]] * 2
			if boost>>(i&63)&1 != 0 {
				p += w.weight[w.kind[i]]
			}
			s.prio[slot[i]] = min(p, maxPriority)
		}
	}
}

// Schedule picks the entities the next packet carries: the relevant
// entities with priority, highest first, as long as they fit in budget
// bytes (the room left for the snapshot frame) and the bandwidth cap. It
// returns their indices into w in ascending order (owned by the
// scheduler, valid until the next call), or ok = false when not even the
// frame's fixed part fits: then write no frame. The picked entities'
// priority resets; if the packet is lost, Lost gives it back. The
// entities are taken in priority order; one that does not fit is passed
// over, and after MaxSkips of those the packet closes; one whose
// BodySize is 0 (the player holds its state) loses its priority when its
// turn in that order comes. When every waiting entity fits, all are
// taken without ranking, which selects the same. The first call of a
// tick updates relevance and priorities; now feeds the bandwidth cap.
// With SchedulerConfig.Confirm and a Confirmer for sz, the room left
// then goes to confirmations of the other relevant
// entities whose turn it is, in the same list.
func (s *Scheduler) Schedule(now time.Time, w *World, budget int, sz Sizer) (sel []int32, ok bool) {
	s.update(w)
	if s.capRate > 0 {
		if !s.lastNow.IsZero() {
			if dt := now.Sub(s.lastNow).Seconds(); dt > 0 {
				s.tokens = min(s.tokens+dt*s.capRate, s.burst)
			}
		}
		s.lastNow = now
		budget = min(budget, int(s.tokens))
	}
	room := budget - sz.FixedSize()
	if room < 0 {
		return nil, false
	}
	used := s.pack(room, sz)
	if cf, ok := sz.(Confirmer); ok && s.confirms {
		used += s.confirm(room-used, cf)
	}
	if s.capRate > 0 {
		s.tokens -= float64(sz.FixedSize() + used)
	}
	return s.out, true
}

func (s *Scheduler) pack(room int, sz Sizer) int {
	clear(s.sel)
	// Fast path: if every pending entity fits, priorities do not matter
	// (any subset of a set that fits fits too): take them all. It gives
	// what ranking them would (every one fits in any order; those with
	// nothing to send lose their priority either way), so it is tried
	// only when the last packet did not overflow, and it stops sizing
	// at the first entity past the room: in a full packet most pending
	// entities are never sized.
	if !s.overflowed {
		if used, ok := s.packAll(room, sz); ok {
			return used
		}
	}
	keys := s.ps.keys[:0]
	for k, m := range s.pending {
		for m &= s.turn[k]; m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			// Descending priority, then ascending index.
			keys = append(keys, uint64(^math.Float32bits(s.prio[s.slot[i]]))<<32|uint64(i))
		}
	}
	keys, s.ps.spare = sortByHigh(keys, s.ps.spare)
	s.ps.keys = keys
	used, skips := 0, 0
	for _, key := range keys {
		i := int(uint32(key))
		body := sz.BodySize(i)
		if body == 0 {
			s.prio[s.slot[i]] = 0
			idset.ClearBit(s.pending, i)
			continue
		}
		cost := s.cost(i, body, sz)
		if cost > room-used {
			if skips++; skips > s.maxSkips {
				break
			}
			continue
		}
		used += cost
		idset.SetBit(s.sel, i)
	}
	s.overflowed = skips > 0
	s.takeSelected()
	return used
}

// cost is what adding entity i, of body size body, to the selection
// adds to the frame. Exact: i's header, and its successor's header now
// counts the gap from i instead of from i's predecessor.
func (s *Scheduler) cost(i, body int, sz Sizer) int {
	p, n := s.pred(i), s.succ(i)
	c := body + sz.LinkSize(p, i)
	if n >= 0 {
		c += sz.LinkSize(i, n) - sz.LinkSize(p, n)
	}
	return c
}

// confirm adds to the packet, in ascending order as long as they fit in
// room, the confirmations of the relevant entities whose turn it is that
// the packet does not carry, and returns the room they take: on a clean
// link every entity the player's packets consider this tick is then
// either sent or confirmed, and its client knows it holds it as of this
// tick (see package deltacomp's Replica).
func (s *Scheduler) confirm(room int, cf Confirmer) int {
	used := 0
	for k, r := range s.rel {
		for m := r & s.turn[k] &^ s.sel[k]; m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			c := cf.ConfirmSize(i)
			if c == 0 {
				continue
			}
			cost := s.cost(i, c, cf)
			if cost > room-used {
				s.takeSelected()
				return used
			}
			used += cost
			idset.SetBit(s.sel, i)
		}
	}
	s.takeSelected()
	return used
}

// packAll takes every pending entity whose turn it is if they all fit in
// room, and reports whether they did; it stops sizing at the first that
// does not fit.
func (s *Scheduler) packAll(room int, sz Sizer) (used int, ok bool) {
	prev := -1
	clear(s.zero)
	for k, m := range s.pending {
		for m &= s.turn[k]; m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			body := sz.BodySize(i)
			if body == 0 {
				idset.SetBit(s.zero, i)
				continue
			}
			if used += body + sz.LinkSize(prev, i); used > room {
				return 0, false
			}
			prev = i
		}
	}
	for k, m := range s.pending {
		s.sel[k] = m & s.turn[k] &^ s.zero[k]
		for z := s.zero[k]; z != 0; z &= z - 1 {
			s.prio[s.slot[k*64+bits.TrailingZeros64(z)]] = 0
		}
		s.pending[k] = m &^ s.zero[k]
	}
	s.takeSelected()
	return used, true
}

// takeSelected lists the selected entities in s.out and resets their
// priority.
func (s *Scheduler) takeSelected() {
	s.out = s.out[:0]
	for k, w := range s.sel {
		s.pending[k] &^= w
		for m := w; m != 0; m &= m - 1 {
			i := k*64 + bits.TrailingZeros64(m)
			s.out = append(s.out, int32(i))
			s.prio[s.slot[i]] = 0
		}
	}
}

// pred returns the highest selected index below i, or −1.
func (s *Scheduler) pred(i int) int {
	k := i >> 6
	if m := s.sel[k] & (1<<(i&63) - 1); m != 0 {
		return k*64 + 63 - bits.LeadingZeros64(m)
	}
	for k--; k >= 0; k-- {
		if m := s.sel[k]; m != 0 {
			return k*64 + 63 - bits.LeadingZeros64(m)
		}
	}
	return -1
}

// succ returns the lowest selected index above i, or −1.
func (s *Scheduler) succ(i int) int {
	k := i >> 6
	if m := s.sel[k] &^ (2<<(i&63) - 1); m != 0 {
		return k*64 + bits.TrailingZeros64(m)
	}
	for k++; k < len(s.sel); k++ {
		if m := s.sel[k]; m != 0 {
			return k*64 + bits.TrailingZeros64(m)
		}
	}
	return -1
}

// Lost tells the scheduler that a packet carrying the entities ids (in
// ascending order) was lost: they regain priority (as if they had
// changed) and go out again in the next packets. ids is copied; the
// entities are found at the next update, in the World's layout of then
// (those gone since are skipped).
func (s *Scheduler) Lost(ids []proto.NetworkID) {
	s.lost = append(s.lost, ids...)
}

// LostUnknown tells the scheduler that a packet was lost whose entities
// are no longer known (its record was too old): every relevant entity is
// re-prioritised at the next update.
func (s *Scheduler) LostUnknown() { s.all = true }

// takeLost re-prioritises what the packets lost since the last update
// carried.
func (s *Scheduler) takeLost(w *World) {
	lo := 0 // a packet's ids ascend: each search starts where the last ended
	var prev proto.NetworkID
	for _, id := range s.lost {
		if id <= prev {
			lo = 0 // the next packet's
		}
		prev = id
		i, ok := slices.BinarySearch(w.ids[lo:], id)
		i += lo
		lo = i
		if !ok {
			continue
		}
		p := &s.prio[s.slot[i]]
		*p = min(*p*2+1, maxPriority)
		idset.SetBit(s.pending, i)
	}
	s.lost = s.lost[:0]
}

// Pending is the number of relevant entities waiting to be sent (with
// priority) whose turn this tick is, after the last Schedule: when it is
// not 0, another packet this tick would carry more.
func (s *Scheduler) Pending() int {
	n := 0
	for k, m := range s.pending {
		n += bits.OnesCount64(m & s.turn[k])
	}
	return n
}

// Relevant is the number of entities relevant to the player this tick.
func (s *Scheduler) Relevant() int {
	n := 0
	for _, m := range s.rel {
		n += bits.OnesCount64(m)
	}
	return n
}
