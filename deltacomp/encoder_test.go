package deltacomp

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// frameEntry is an entry of a delta frame, as entries decodes it.
type frameEntry struct {
	id   proto.NetworkID
	kind uint8
}

// entries decodes the entries of delta frame b, whose records are rs
// bytes, without applying them.
func entries(t testing.TB, b []byte, rs int) (f proto.SnapshotDeltaFrame, out []frameEntry) {
	t.Helper()
	f, _, err := proto.ParseSnapshotDeltaFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	d := f.Data
	_, n := parseVarint(d)
	d = d[n:]
	var prev uint64
	rec := make([]byte, rs)
	for k := 0; k < int(f.Count); k++ {
		h, n := parseVarint(d)
		d = d[n:]
		gap, kind, _ := parseEntryHeader(f.Codec, h)
		id := prev + gap + 1
		prev = id
		out = append(out, frameEntry{proto.NetworkID(id), kind})
		switch kind {
		case kindRemoved:
			continue
		case kindExplicit:
			_, n := parseVarint(d)
			d = d[n:]
		case kindPredictedExplicit:
			_, n := parseVarint(d)
			_, m := parseVarint(d[n:])
			d = d[n+m:]
		}
		m, err := ApplyPatch(rec, d)
		if err != nil {
			t.Fatal(err)
		}
		d = d[m:]
	}
	return f, out
}

// removedIn decodes a frame's entries and returns the removed ids.
func removedIn(t *testing.T, b []byte) []proto.NetworkID {
	t.Helper()
	_, es := entries(t, b, 4)
	var out []proto.NetworkID
	for _, e := range es {
		if e.kind == kindRemoved {
			out = append(out, e.id)
		}
	}
	return out
}

// pushIDs pushes the next revision of r holding ids, each entity's
// record changed since the last.
func pushIDs(t *testing.T, r *Ring, ids ...proto.NetworkID) {
	t.Helper()
	var s Snapshot
	s.Reset(r.Revision()+1, 4)
	for _, id := range ids {
		s.Append(id, []byte{byte(id), byte(r.Revision()), 1, 1})
	}
	if _, err := r.Push(&s); err != nil {
		t.Fatal(err)
	}
}

func TestRemovalsSentUntilAcknowledged(t *testing.T) {
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{})
	s := Snapshot{RecordSize: 4}
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(2, []byte{2, 2, 2, 2})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	e.Prepare()
	b, err := e.AppendFrame(nil, 0, []int32{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	e.Delivered(0)
	// Entity 2 goes away.
	s.Reset(1, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	for seq := uint16(1); seq <= 3; seq++ {
		e.Prepare()
		if b, err = e.AppendFrame(b[:0], seq, nil); err != nil {
			t.Fatal(err)
		}
		if got := removedIn(t, b); len(got) != 1 || got[0] != 2 {
			t.Fatalf("frame %d removals %v, want [2]", seq, got)
		}
		if seq == 1 {
			// Lost: the removal stays pending, and the frame carried no
			// entity for the scheduler to send again.
			if ids, known := e.Lost(seq, nil); len(ids) != 0 || !known {
				t.Fatalf("lost frame of removals only: carried %v, known %v", ids, known)
			}
		}
	}
	e.Delivered(3)
	e.Prepare()
	if b, err = e.AppendFrame(b[:0], 4, nil); err != nil {
		t.Fatal(err)
	}
	if got := removedIn(t, b); len(got) != 0 || e.PendingRemovals() != 0 {
		t.Fatalf("after delivery: removals %v, pending %d", got, e.PendingRemovals())
	}
	// An entity the client never got is not announced as removed.
	s.Reset(2, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	s.Append(9, []byte{9, 9, 9, 9})
	r.Push(&s)
	e.Prepare()
	s.Reset(3, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	e.Prepare()
	if e.PendingRemovals() != 0 {
		t.Fatalf("removal of a never-sent entity pending")
	}
}

// Lost hands back what a lost frame carried (its entities, not its
// removals) for the scheduler to send again, once; a packet the encoder
// no longer remembers is unknown, unless it is too new to have had a
// frame.
func TestLostReturnsWhatTheFrameCarried(t *testing.T) {
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{InFlight: 16})
	pushIDs(t, r, 1, 2, 3, 4)
	e.Prepare()
	if _, err := e.AppendFrame(nil, 0, []int32{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	e.Delivered(0)
	pushIDs(t, r, 1, 3, 5) // 2 and 4 go: frames carry their removals
	var frames [][]int32
	for seq := uint16(1); seq <= 20; seq++ {
		sel := []int32{int32(seq % 3)}
		if seq == 18 {
			sel = []int32{0, 2}
		}
		e.Prepare()
		if _, err := e.AppendFrame(nil, seq, sel); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, sel)
	}
	ids, known := e.Lost(18, make([]proto.NetworkID, 1, 8))
	if !known || !slices.Equal(ids, []proto.NetworkID{0, 1, 5}) {
		t.Fatalf("lost frame 18: carried %v (after the caller's 0), known %v; want [0 1 5]", ids, known)
	}
	if ids, known := e.Lost(18, nil); !known || len(ids) != 0 {
		t.Fatalf("frame 18 reported lost again: %v, known %v", ids, known)
	}
	// Frames 1–4 were overwritten by 17–20 (16 remembered): unknown.
	if ids, known := e.Lost(3, nil); known || len(ids) != 0 {
		t.Fatalf("forgotten frame 3: %v, known %v", ids, known)
	}
	// Newer than any frame: no frame, nothing carried.
	if ids, known := e.Lost(21, nil); !known || len(ids) != 0 {
		t.Fatalf("packet 21 without a frame: %v, known %v", ids, known)
	}
	// A remembered frame: the entity it carried.
	if ids, known := e.Lost(20, nil); !known || !slices.Equal(ids, []proto.NetworkID{r.Latest().IDs[frames[19][0]]}) {
		t.Fatalf("lost frame 20: %v, known %v", ids, known)
	}
}

// TestRemovalDroppedWhenBack: an entity that comes back (the same id)
// while its removal is still unacknowledged is no longer announced as
// removed, over one layout change or several at once.
func TestRemovalDroppedWhenBack(t *testing.T) {
	for _, skip := range []bool{false, true} {
		r := NewRing(RingConfig{})
		e := NewEncoder(r, EncoderConfig{})
		push := func(ids ...proto.NetworkID) { pushIDs(t, r, ids...) }
		push(1, 2, 3, 4)
		e.Prepare()
		if _, err := e.AppendFrame(nil, 0, []int32{0, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		e.Delivered(0)
		push(1, 3) // 2 and 4 go: removals pending
		e.Prepare()
		if e.PendingRemovals() != 2 {
			t.Fatalf("pending removals %d, want 2", e.PendingRemovals())
		}
		if skip {
			push(1, 3, 5) // a layout the encoder does not see on its own
		}
		push(1, 2, 3, 5) // 2 is back, 4 is still gone
		e.Prepare()
		b, err := e.AppendFrame(nil, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := removedIn(t, b); len(got) != 1 || got[0] != 4 {
			t.Fatalf("skip %v: removals %v, want [4]", skip, got)
		}
	}
}

// TestDeliveredToAFormerSelf: a packet acknowledged after one of its
// entities left and came back with the same id (into the slot it held:
// the last freed is reused first) gives that entity no usable baseline:
// its new self goes in full, while the packet's other entities go as
// patches against it.
func TestDeliveredToAFormerSelf(t *testing.T) {
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{})
	push := func(ids ...proto.NetworkID) { pushIDs(t, r, ids...) }
	push(1, 2, 3)
	e.Prepare()
	if _, err := e.AppendFrame(nil, 0, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	was := r.layouts.Slots()[1]
	push(1, 3)    // 2 leaves
	push(1, 2, 3) // and is back
	if r.layouts.Slots()[1] != was {
		t.Fatalf("2 came back to slot %d, not its former %d: the test does not test the case", r.layouts.Slots()[1], was)
	}
	e.Delivered(0)
	e.Prepare()
	for i, want := range []uint8{kindDefault, kindFull, kindDefault} {
		if e.BodySize(i) == 0 {
			t.Fatalf("entity %d: nothing to send", r.Latest().IDs[i])
		}
		if got := e.ps.sizes[e.ps.sizeAt[i]].kind; got != want {
			t.Fatalf("entity %d goes as kind %d, want %d", r.Latest().IDs[i], got, want)
		}
	}
}

// TestDeliveredAcrossLayouts: a packet acknowledged some layouts after it
// was written (entities came and went meanwhile) makes its entities'
// baselines its revision, found by the slots it recorded, also beyond
// the ring's layout history (idset.HistoryLen changes): the baselines
// match a model kept by id.
func TestDeliveredAcrossLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{})
	ids := []proto.NetworkID{}
	next := proto.NetworkID(1)
	for range 40 {
		ids = append(ids, next)
		next++
	}
	model := map[proto.NetworkID]uint32{}
	type sentFrame struct {
		seq    uint16
		rev    uint32
		ids    []proto.NetworkID
		at, by int
	}
	var inFlight []sentFrame
	var seq uint16
	farAcks := 0
	for tick := range 400 {
		// Churn: remove a few entities and add a few (ids never reused).
		if rng.IntN(3) > 0 {
			for k := rng.IntN(3); k > 0 && len(ids) > 5; k-- {
				j := rng.IntN(len(ids))
				ids = append(ids[:j], ids[j+1:]...)
			}
			for k := rng.IntN(3); k > 0; k-- {
				ids = append(ids, next)
				next++
			}
		}
		s := Snapshot{Tick: uint32(tick), RecordSize: 4, IDs: ids, Records: make([]byte, 4*len(ids))}
		for i := range s.Records {
			s.Records[i] = byte(rng.IntN(3))
		}
		if _, err := r.Push(&s); err != nil {
			t.Fatal(err)
		}
		e.Prepare()
		var sel []int32
		var carried []proto.NetworkID
		for i := range ids {
			if rng.IntN(4) == 0 && e.BodySize(i) > 0 {
				sel = append(sel, int32(i))
				carried = append(carried, ids[i])
			}
		}
		if _, err := e.AppendFrame(nil, seq, sel); err != nil {
			t.Fatal(err)
		}
		// Acknowledged 1 to 30 ticks later: up to 30 layouts, beyond the
		// ring's history of idset.HistoryLen, in any order.
		inFlight = append(inFlight, sentFrame{seq, r.Revision(), carried, tick, tick + 1 + rng.IntN(30)})
		seq++
		kept := inFlight[:0]
		for _, f := range inFlight {
			if tick < f.by {
				kept = append(kept, f)
				continue
			}
			if tick-f.at > idset.HistoryLen+idset.HistoryLen/2 {
				farAcks++
			}
			e.Delivered(f.seq)
			for _, id := range f.ids {
				model[id] = max(model[id], f.rev)
			}
		}
		inFlight = kept
		e.align()
		for i, id := range r.Latest().IDs {
			if got := e.held[e.slot[i]].base; got != model[id] {
				t.Fatalf("tick %d: entity %d's baseline %d, want %d", tick, id, got, model[id])
			}
		}
	}
	if farAcks == 0 {
		t.Fatal("no frame acknowledged beyond the layout history")
	}
}

// An encoder that missed a few layout changes catches up through the
// ring's remaps and announces exactly the entities gone meanwhile that
// the client was sent; one that missed more than the ring keeps is
// Stale (the client may hold entities gone unannounced) until Reset. A
// new encoder of a ring far into its layouts is not stale.
func TestEncoderCatchesUpThroughLayouts(t *testing.T) {
	for _, missed := range []int{1, 5, idset.HistoryLen, idset.HistoryLen + 1} {
		r := NewRing(RingConfig{})
		e := NewEncoder(r, EncoderConfig{MaxRemovals: 1000})
		var s Snapshot
		push := func(ids []proto.NetworkID) {
			s.Reset(s.Tick+1, 4)
			for _, id := range ids {
				s.Append(id, []byte{byte(id), 1, 2, 3})
			}
			if _, err := r.Push(&s); err != nil {
				t.Fatal(err)
			}
		}
		var ids []proto.NetworkID
		for id := proto.NetworkID(1); id <= 100; id++ {
			ids = append(ids, id)
		}
		push(ids)
		e.Prepare()
		var sel []int32
		for i := 0; i < len(ids); i += 2 { // the client gets the odd ids
			sel = append(sel, int32(i))
		}
		if _, err := e.AppendFrame(nil, 0, sel); err != nil {
			t.Fatal(err)
		}
		e.Delivered(0)
		// Each change removes the first id left and adds a new one.
		var want []proto.NetworkID
		next := proto.NetworkID(1000)
		for range missed {
			if ids[0]%2 == 1 {
				want = append(want, ids[0])
			}
			ids = append(ids[1:], next)
			next++
			push(ids)
		}
		e.Prepare()
		if stale := missed > idset.HistoryLen; e.Stale() != stale {
			t.Fatalf("%d changes missed: Stale %v, want %v", missed, e.Stale(), stale)
		}
		if e.Stale() {
			e.Reset()
			if e.Stale() {
				t.Fatal("stale after Reset")
			}
			late := NewEncoder(r, EncoderConfig{})
			if late.Prepare(); late.Stale() {
				t.Fatal("a new encoder is stale")
			}
			continue
		}
		b, err := e.AppendFrame(nil, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := removedIn(t, b); !slices.Equal(got, want) {
			t.Fatalf("%d changes missed: removals %v, want %v", missed, got, want)
		}
	}
}

// TestSharedScratch: encoders taking turns in one Scratch (UseScratch)
// write the same frames as encoders with their own, over entities coming
// and going, with each client acknowledging different packets (so the
// encoders' baselines, sizes and patch codes differ) and sizing entities
// in a different order than they write them.
func TestSharedScratch(t *testing.T) {
	const clients = 3
	g := newRandomSnapshots(7, 12, 60)
	r := NewRing(RingConfig{})
	var own, shared [clients]*Encoder
	var sc Scratch
	for k := range clients {
		own[k] = NewEncoder(r, EncoderConfig{})
		shared[k] = NewEncoder(r, EncoderConfig{})
		shared[k].UseScratch(&sc)
	}
	rng := rand.New(rand.NewPCG(7, 2))
	var snap Snapshot
	var sel []int32
	for tick := range 200 {
		g.next(&snap, true)
		if _, err := r.Push(&snap); err != nil {
			t.Fatal(err)
		}
		n := len(r.Latest().IDs)
		for k := range clients {
			// The same selection for both: a random subset, sized
			// from the back.
			sel = sel[:0]
			for i := range n {
				if rng.IntN(3) != 0 {
					sel = append(sel, int32(i))
				}
			}
			var frames [2][]byte
			for v, e := range []*Encoder{own[k], shared[k]} {
				e.Prepare()
				for j := len(sel) - 1; j >= 0; j-- {
					e.BodySize(int(sel[j]))
					if j > 0 {
						e.LinkSize(int(sel[j-1]), int(sel[j]))
					}
				}
				b, err := e.AppendFrame(nil, uint16(tick), sel)
				if err != nil {
					t.Fatal(err)
				}
				frames[v] = b
			}
			if !bytes.Equal(frames[0], frames[1]) {
				t.Fatalf("tick %d, client %d: the encoder in the shared scratch wrote a different frame", tick, k)
			}
			if rng.IntN(4) != 0 {
				own[k].Delivered(uint16(tick))
				shared[k].Delivered(uint16(tick))
			}
		}
	}
}

// TestConfirm: an entity the client holds and that did not change has
// BodySize 0 and a ConfirmSize of its zero patch; written, its entry
// moves the replica's revision of it to the frame's, its record the
// same. One that changed since its baseline cannot be confirmed.
func TestConfirm(t *testing.T) {
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{})
	rep, _ := NewReplica(ReplicaConfig{RecordSize: 4})
	push := func(tick uint32, a, b byte) {
		var s Snapshot
		s.Reset(tick, 4)
		s.Append(1, []byte{a, 0, 0, 0})
		s.Append(2, []byte{b, 0, 0, 0})
		if _, err := r.Push(&s); err != nil {
			t.Fatal(err)
		}
	}
	send := func(seq uint16, sel []int32) {
		b, err := e.AppendFrame(nil, seq, sel)
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := proto.ParseSnapshotDeltaFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Apply(&f); err != nil {
			t.Fatal(err)
		}
		e.Delivered(seq)
	}
	push(1, 5, 7)
	e.Prepare()
	send(1, []int32{0, 1})
	push(2, 5, 8) // entity 1 unchanged, entity 2 changed
	e.Prepare()
	if n, c := e.BodySize(0), e.ConfirmSize(0); n != 0 || c != 1 {
		t.Fatalf("unchanged entity: BodySize %d, ConfirmSize %d; want 0 and 1 (the zero patch)", n, c)
	}
	if c := e.ConfirmSize(1); c != 0 {
		t.Fatalf("changed entity: ConfirmSize %d, want 0", c)
	}
	send(2, []int32{0, 1})
	s := rep.State()
	if rep.EntityRevision(0) != 2 || rep.EntityRevision(1) != 2 || !bytes.Equal(s.Records, []byte{5, 0, 0, 0, 8, 0, 0, 0}) {
		t.Fatalf("revisions %d %d, records %v", rep.EntityRevision(0), rep.EntityRevision(1), s.Records)
	}
	// A second frame of the same revision, its baseline acknowledged:
	// nothing to confirm.
	e.Prepare()
	if c := e.ConfirmSize(0); c != 0 {
		t.Fatalf("entity acknowledged at this revision: ConfirmSize %d, want 0", c)
	}
	// Without ConfirmSize, an entity with nothing to send stays out.
	push(3, 5, 8)
	e.Prepare()
	send(3, []int32{0, 1})
	if rep.EntityRevision(0) != 2 {
		t.Fatalf("unconfirmed entity at revision %d, want 2", rep.EntityRevision(0))
	}
}
