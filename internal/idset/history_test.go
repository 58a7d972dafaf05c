package idset

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// TestHistorySlots follows random layout changes and checks the slots:
// every entity holds one slot of its own, which it keeps for as long as
// it stays; Freed lists the slots of the entities that left; the slots
// stay within the most entities ever present at once (they are reused);
// and per-slot state that clears Freed holds no trace of an earlier
// holder.
func TestHistorySlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var h History
	var ids []proto.NetworkID
	slotOf := map[proto.NetworkID]int32{}
	owner := []proto.NetworkID{} // per-slot state: the id it was set for
	most := 0
	for iter := 0; iter < 3000; iter++ {
		next := slices.Clone(ids)
		for range rng.IntN(6) {
			if len(next) > 0 {
				k := rng.IntN(len(next))
				next = slices.Delete(next, k, k+1)
			}
		}
		next = slices.Compact(slices.Sorted(slices.Values(append(next, randomIDs(rng, rng.IntN(6), 300)...))))
		if rng.IntN(50) == 0 {
			next = randomIDs(rng, rng.IntN(200), 300) // a new world
		}
		m := h.Next(ids, next)
		most = max(most, len(next))
		if m.Slots != h.SlotCount() || h.SlotCount() > most {
			t.Fatalf("iter %d: %d slots (remap says %d) for at most %d entities at once", iter, h.SlotCount(), m.Slots, most)
		}
		if len(m.Freed) != len(m.Gone) {
			t.Fatalf("iter %d: %d slots freed for %d entities gone", iter, len(m.Freed), len(m.Gone))
		}
		for k, s := range m.Freed {
			if slotOf[m.Gone[k]] != s {
				t.Fatalf("iter %d: %d left slot %d, Freed says %d", iter, m.Gone[k], slotOf[m.Gone[k]], s)
			}
			if owner[s] != m.Gone[k] {
				t.Fatalf("iter %d: slot %d's state is for %d, not %d", iter, s, owner[s], m.Gone[k])
			}
			owner[s] = 0
			delete(slotOf, m.Gone[k])
		}
		for len(owner) < m.Slots {
			owner = append(owner, 0)
		}
		seen := map[int32]bool{}
		for i, id := range next {
			s := h.Slots()[i]
			if seen[s] {
				t.Fatalf("iter %d: slot %d held twice", iter, s)
			}
			seen[s] = true
			if h.SlotID(s) != id {
				t.Fatalf("iter %d: slot %d holds %d, SlotID says %d", iter, s, id, h.SlotID(s))
			}
			if was, ok := slotOf[id]; ok && was != s {
				t.Fatalf("iter %d: %d moved from slot %d to %d", iter, id, was, s)
			}
			if !slices.Contains(m.Added, id) {
				continue
			}
			if owner[s] != 0 {
				t.Fatalf("iter %d: new %d got slot %d, still set for %d", iter, id, s, owner[s])
			}
			owner[s], slotOf[id] = id, s
		}
		for s := range h.SlotCount() {
			if !seen[int32(s)] && h.SlotID(int32(s)) != 0 {
				t.Fatalf("iter %d: free slot %d says it holds %d", iter, s, h.SlotID(int32(s)))
			}
		}
		if h.SlotID(-1) != 0 || h.SlotID(int32(h.SlotCount())) != 0 {
			t.Fatal("SlotID out of range is not 0")
		}
		ids = next
	}
}

// TestHistoryFollow checks that Follow walks the held changes in order
// and reports false past HistoryLen.
func TestHistoryFollow(t *testing.T) {
	var h History
	var ids []proto.NetworkID
	for i := range HistoryLen + 3 {
		next := append(slices.Clone(ids), proto.NetworkID(i+1))
		h.Next(ids, next)
		ids = next
	}
	at := uint64(3)
	var lens []int
	if !h.Follow(&at, func(m *Remap) { lens = append(lens, m.NewLen) }) || at != h.Layout() {
		t.Fatalf("Follow from 3: at %d, layout %d", at, h.Layout())
	}
	if len(lens) != HistoryLen || lens[0] != 4 || lens[len(lens)-1] != HistoryLen+3 {
		t.Fatalf("Follow from 3 saw %v", lens)
	}
	at = 2
	if h.Follow(&at, func(*Remap) {}) {
		t.Fatal("Follow from a change no longer held reported true")
	}
}

// Warm reads the first byte of every cache line the state spans, and
// nothing past its end.
func TestWarm(t *testing.T) {
	if Warm([]uint32(nil)) != 0 {
		t.Fatal("nil state read")
	}
	s := make([]uint32, 40) // 160 bytes: lines at 0, 64 and 128
	for i := range s {
		s[i] = uint32(i + 1) // little-endian: an entry's first byte is i+1
	}
	if got, want := Warm(s), byte(1+17+33); got != want {
		t.Fatalf("Warm read sum %d, want %d (entries 0, 16 and 32)", got, want)
	}
	type pair struct{ a, b uint32 }
	p := make([]pair, 17) // 136 bytes: lines at 0, 64 and 128
	p[0].a, p[8].a, p[16].a = 5, 6, 7
	p[0].b, p[9].a = 100, 100 // not at a line's start: not read
	if got := Warm(p); got != 18 {
		t.Fatalf("Warm over pairs read sum %d, want 18", got)
	}
}
