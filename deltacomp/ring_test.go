package deltacomp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// worldIDs are a generated world's entity ids, ascending, drawn at
// random.
type worldIDs struct {
	rng *rand.Rand
	ids []proto.NetworkID
}

// draw draws an id and takes it, or returns false when it is taken.
func (w *worldIDs) draw() (proto.NetworkID, bool) {
	id := proto.NetworkID(1 + w.rng.IntN(4*len(w.ids)+64))
	i, taken := slices.BinarySearch(w.ids, id)
	if taken {
		return 0, false
	}
	w.ids = slices.Insert(w.ids, i, id)
	return id, true
}

// churn, one call in four, spawns an entity and removes a random one
// (gone is told its id) while more than two remain.
func (w *worldIDs) churn(spawn func(), gone func(proto.NetworkID)) {
	if w.rng.IntN(4) != 0 {
		return
	}
	spawn()
	if len(w.ids) > 2 {
		i := w.rng.IntN(len(w.ids))
		gone(w.ids[i])
		w.ids = slices.Delete(w.ids, i, i+1)
	}
}

// randomSnapshots evolves a random world: ids spawn and die, records change.
type randomSnapshots struct {
	worldIDs
	rs   int
	tick uint32
	recs map[proto.NetworkID][]byte
}

func newRandomSnapshots(seed uint64, rs, n int) *randomSnapshots {
	g := &randomSnapshots{worldIDs: worldIDs{rng: rand.New(rand.NewPCG(seed, 1))}, rs: rs, recs: map[proto.NetworkID][]byte{}}
	for range n {
		g.spawn()
	}
	return g
}

func (g *randomSnapshots) spawn() {
	id, ok := g.draw()
	if !ok {
		return
	}
	rec := make([]byte, g.rs)
	for i := range rec {
		rec[i] = byte(g.rng.IntN(256))
	}
	g.recs[id] = rec
}

func (g *randomSnapshots) next(s *Snapshot, churn bool) {
	if churn {
		g.churn(g.spawn, func(id proto.NetworkID) { delete(g.recs, id) })
	}
	for _, id := range g.ids {
		if g.rng.IntN(5) == 0 {
			g.recs[id][g.rng.IntN(g.rs)] ^= byte(1 + g.rng.IntN(255))
		}
	}
	s.Reset(g.tick, g.rs)
	for _, id := range g.ids {
		s.Append(id, g.recs[id])
	}
	g.tick++
}

func TestRingPatchesMatchRecomputation(t *testing.T) {
	for seed := uint64(0); seed < 8; seed++ {
		size := 2 + int(seed)*5
		r := NewRing(RingConfig{Size: size})
		g := newRandomSnapshots(seed, 1+int(seed)*3, 40)
		var hist []Snapshot // hist[k] = snapshot of revision k+1
		for tick := 0; tick < 200; tick++ {
			var s Snapshot
			g.next(&s, true)
			prev := r.Latest()
			prevIDs := slices.Clone(prev.IDs)
			prevRecs := slices.Clone(prev.Records)
			rev, err := r.Push(&s)
			if err != nil || rev != uint32(tick+1) {
				t.Fatalf("push: rev %d err %v", rev, err)
			}
			hist = append(hist, s)
			lat := r.Latest()
			for i, id := range lat.IDs {
				// Changed bit: differs from the previous push or new.
				j, ok := slices.BinarySearch(prevIDs, id)
				changed := !ok || !bytes.Equal(prevRecs[j*s.RecordSize:(j+1)*s.RecordSize], lat.Record(i))
				if idset.Bit(r.Changed(), i) != changed {
					t.Fatalf("tick %d entity %d: changed bit %v want %v", tick, id, !changed, changed)
				}
				for back := 0; back < size+2; back++ {
					prev := int(rev) - back
					patch, ok := r.Patch(uint32(max(prev, 0)), i)
					if prev < 1 || back >= size {
						if ok {
							t.Fatalf("patch for rev %d outside window (latest %d, size %d)", prev, rev, size)
						}
						continue
					}
					old := &hist[prev-1]
					k, exists := slices.BinarySearch(old.IDs, id)
					// The ring follows an entity only while it exists: a
					// re-spawned id has no patch against its former self.
					for _, h := range hist[prev-1:] {
						if _, in := slices.BinarySearch(h.IDs, id); !in {
							exists = false
						}
					}
					if ok != exists {
						t.Fatalf("tick %d rev %d entity %d: ok %v exists %v", tick, prev, id, ok, exists)
					}
					if !ok {
						continue
					}
					want := bytes.Clone(lat.Record(i))
					for b := range want {
						want[b] ^= old.Record(k)[b]
					}
					if !bytes.Equal(patch, want) {
						t.Fatalf("tick %d rev %d entity %d: patch %x want %x", tick, prev, id, patch, want)
					}
				}
			}
		}
	}
}

func TestRingRejectsBadSnapshots(t *testing.T) {
	r := NewRing(RingConfig{})
	for _, s := range []Snapshot{
		{RecordSize: 0},
		{RecordSize: 2, IDs: []proto.NetworkID{1}, Records: []byte{1}},
		{RecordSize: 1, IDs: []proto.NetworkID{2, 1}, Records: []byte{1, 2}},
		{RecordSize: 1, IDs: []proto.NetworkID{0}, Records: []byte{1}},
		{RecordSize: 1, IDs: []proto.NetworkID{1, 1}, Records: []byte{1, 2}},
	} {
		if _, err := r.Push(&s); err == nil {
			t.Errorf("accepted %+v", s)
		}
	}
	ok := Snapshot{RecordSize: 1, IDs: []proto.NetworkID{1}, Records: []byte{1}}
	if _, err := r.Push(&ok); err != nil {
		t.Fatal(err)
	}
	other := Snapshot{RecordSize: 2, IDs: []proto.NetworkID{1}, Records: []byte{1, 2}}
	if _, err := r.Push(&other); !errors.Is(err, ErrRecordSize) {
		t.Fatalf("record size change: %v", err)
	}
}
