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

// TestRemapAgainstIDLookup checks Build, Move and MoveBits against looking
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

		src := make([]uint32, len(oldIDs))
		srcBits := make([]uint64, (len(oldIDs)+63)/64)
		for j := range src {
			src[j] = rng.Uint32() | 1
			if rng.IntN(2) == 0 {
				SetBit(srcBits, j)
			}
		}
		dstBits := slices.Repeat([]uint64{^uint64(0)}, (len(newIDs)+63)/64)
		// MapAscending: an ascending subset of old indices, with −1
		// (gone earlier) among them, against looking each id up.
		var idx, want []int32
		for j := range oldIDs {
			if rng.IntN(3) == 0 {
				idx, want = append(idx, -1), append(want, -1)
			}
			if rng.IntN(2) == 0 {
				w := int32(-1)
				if i, ok := slices.BinarySearch(newIDs, oldIDs[j]); ok {
					w = int32(i)
				}
				idx, want = append(idx, int32(j)), append(want, w)
			}
		}
		if m.MapAscending(idx); !slices.Equal(idx, want) {
			t.Fatalf("old %v new %v: MapAscending gave %v, want %v", oldIDs, newIDs, idx, want)
		}
		var gone []proto.NetworkID
		for _, id := range oldIDs {
			if _, ok := slices.BinarySearch(newIDs, id); !ok {
				gone = append(gone, id)
			}
		}
		if !slices.Equal(m.Gone, gone) || m.OldLen != len(oldIDs) || m.NewLen != len(newIDs) {
			t.Fatalf("old %v new %v: Gone %v (want %v), lengths %d, %d", oldIDs, newIDs, m.Gone, gone, m.OldLen, m.NewLen)
		}
		dst := Move(&m, slices.Clone(src), len(newIDs))
		m.MoveBits(dstBits, srcBits)
		for i, j := range from {
			want, wantBit := uint32(0), false
			if j >= 0 {
				want, wantBit = src[j], Bit(srcBits, j)
			}
			if dst[i] != want || Bit(dstBits, i) != wantBit {
				t.Fatalf("entity %d (old %d): moved %d, %v want %d, %v", i, j, dst[i], Bit(dstBits, i), want, wantBit)
			}
		}
		for i := len(newIDs); i < len(dstBits)*64; i++ {
			if Bit(dstBits, i) {
				t.Fatalf("MoveBits set bit %d past the %d entities", i, len(newIDs))
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
	src, dst := make([]float32, len(a)), make([]float32, len(b))
	srcB, dstB := make([]uint64, 16), make([]uint64, 16)
	if n := testing.AllocsPerRun(100, func() {
		m.Build(a, b)
		copy(dst, src)
		Move(&m, dst, len(b))
		m.MoveBits(dstB, srcB)
	}); n != 0 {
		t.Fatalf("Build, Move, MoveBits: %v allocs", n)
	}
}

// BenchmarkMapAscending maps a packet's worth of indices (107 of the
// arena's 1,644 entities) through a layout change of projectiles: the
// last fifth of the ids, 25 gone and 25 new.
func BenchmarkMapAscending(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	oldIDs := make([]proto.NetworkID, 1644)
	for i := range oldIDs {
		oldIDs[i] = proto.NetworkID(2 * (i + 1))
	}
	newIDs := slices.Clone(oldIDs)
	for range 25 {
		k := 1315 + rng.IntN(len(newIDs)-1315)
		newIDs = slices.Delete(newIDs, k, k+1)
	}
	for range 25 {
		newIDs = append(newIDs, proto.NetworkID(2*(1315+rng.IntN(329))+1))
	}
	slices.Sort(newIDs)
	newIDs = slices.Compact(newIDs)
	var m Remap
	m.Build(oldIDs, newIDs)
	var idx []int32
	for i := 0; i < len(oldIDs); i += 15 {
		idx = append(idx, int32(i))
	}
	work := make([]int32, len(idx))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, idx)
		m.MapAscending(work)
	}
}
