package idset

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// randomIDs returns a strictly ascending set of up to n ids below limit.
func randomIDs(rng *rand.Rand, n, limit int) []proto.NetworkID {
	ids := make([]proto.NetworkID, 0, n)
	for range n {
		ids = append(ids, proto.NetworkID(1+rng.IntN(limit)))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TestRemapAgainstIDLookup checks Build, MoveBits and ShiftBits against looking
// every id up in the old set.
func TestRemapAgainstIDLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var m Remap
	for iter := 0; iter < 2000; iter++ {
		limit := 1 + rng.IntN(400)
		oldIDs := randomIDs(rng, rng.IntN(200), limit)
		newIDs := randomIDs(rng, rng.IntN(200), limit)
		if rng.IntN(3) == 0 { // few changes: long runs
			newIDs = slices.Clone(oldIDs)
			for range rng.IntN(4) {
				if len(newIDs) > 0 {
					k := rng.IntN(len(newIDs))
					newIDs = slices.Delete(newIDs, k, k+1)
				}
			}
			newIDs = slices.Compact(slices.Sorted(slices.Values(append(newIDs, randomIDs(rng, rng.IntN(4), limit)...))))
		}
		m.Build(oldIDs, newIDs)

		if m.OldLen != len(oldIDs) {
			t.Fatalf("OldLen %d want %d", m.OldLen, len(oldIDs))
		}
		from := make([]int, len(newIDs)) // new index -> old index, or -1
		for i, id := range newIDs {
			j, ok := slices.BinarySearch(oldIDs, id)
			from[i] = -1
			if ok {
				from[i] = j
			}
		}
		got := slices.Repeat([]int{-1}, len(newIDs))
		for k, r := range m.Runs {
			if r.N <= 0 {
				t.Fatalf("empty run %+v", r)
			}
			if k > 0 {
				p := m.Runs[k-1]
				if r.New < p.New+p.N || r.Old < p.Old+p.N {
					t.Fatalf("runs %+v, %+v overlap or descend", p, r)
				}
				if r.New == p.New+p.N && r.Old == p.Old+p.N {
					t.Fatalf("runs %+v, %+v not merged", p, r)
				}
			}
			for d := int32(0); d < r.N; d++ {
				got[r.New+d] = int(r.Old + d)
			}
		}
		if !slices.Equal(got, from) {
			t.Fatalf("old %v new %v: runs %+v", oldIDs, newIDs, m.Runs)
		}
		var removed []int32
		for j, id := range oldIDs {
			if _, ok := slices.BinarySearch(newIDs, id); !ok {
				removed = append(removed, int32(j))
			}
		}
		var added []proto.NetworkID
		for _, id := range newIDs {
			if _, ok := slices.BinarySearch(oldIDs, id); !ok {
				added = append(added, id)
			}
		}
		if !slices.Equal(m.Added, added) {
			t.Fatalf("old %v new %v: added %v want %v", oldIDs, newIDs, m.Added, added)
		}
		if !slices.Equal(m.Removed, removed) {
			t.Fatalf("old %v new %v: removed %v want %v", oldIDs, newIDs, m.Removed, removed)
		}

		srcBits := make([]uint64, (len(oldIDs)+63)/64)
		for j := range oldIDs {
			if rng.IntN(2) == 0 {
				SetBit(srcBits, j)
			}
		}
		dstBits := slices.Repeat([]uint64{^uint64(0)}, (len(newIDs)+63)/64)
		var gone []proto.NetworkID
		for _, id := range oldIDs {
			if _, ok := slices.BinarySearch(newIDs, id); !ok {
				gone = append(gone, id)
			}
		}
		if !slices.Equal(m.Gone, gone) || m.OldLen != len(oldIDs) || m.NewLen != len(newIDs) {
			t.Fatalf("old %v new %v: Gone %v (want %v), lengths %d, %d", oldIDs, newIDs, m.Gone, gone, m.OldLen, m.NewLen)
		}
		m.MoveBits(dstBits, srcBits)
		// ShiftBits in place, in a slice with stale words past its end.
		shifted := append(slices.Clone(srcBits), ^uint64(0), ^uint64(0))[:len(srcBits)]
		shifted = m.ShiftBits(shifted)
		if len(shifted) != len(dstBits) {
			t.Fatalf("ShiftBits: %d words, want %d", len(shifted), len(dstBits))
		}
		for i, j := range from {
			want := j >= 0 && Bit(srcBits, j)
			if Bit(dstBits, i) != want || Bit(shifted, i) != want {
				t.Fatalf("entity %d (old %d): MoveBits %v, ShiftBits %v, want %v", i, j, Bit(dstBits, i), Bit(shifted, i), want)
			}
		}
		for i := len(newIDs); i < len(dstBits)*64; i++ {
			if Bit(dstBits, i) || Bit(shifted, i) {
				t.Fatalf("MoveBits or ShiftBits set bit %d past the %d entities", i, len(newIDs))
			}
		}
	}
}

func TestRemapZeroAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	a, b := randomIDs(rng, 1000, 2000), randomIDs(rng, 1000, 2000)
	var m Remap
	m.Build(a, b)
	m.Build(b, a)
	srcB, dstB := make([]uint64, 16), make([]uint64, 16)
	var h History
	h.Next(nil, a)
	h.Next(a, b)
	for range HistoryLen { // every remap the History keeps at its size
		h.Next(b, a)
		h.Next(a, b)
	}
	if n := testing.AllocsPerRun(100, func() {
		m.Build(a, b)
		m.MoveBits(dstB, srcB)
		srcB = m.ShiftBits(srcB)
		h.Next(b, a)
		h.Next(a, b)
	}); n != 0 {
		t.Fatalf("Build, MoveBits, ShiftBits, History.Next: %v allocs", n)
	}
}
