package interest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByHigh checks sortByHigh against slices.Sort on keys built as
// the scheduler builds them (index ascending below), with priorities
// that share bytes (few distinct values, as weights doubled per turn),
// that share none (random bits), that are all equal, and that vary in
// one byte only (each in turn) or a little in every byte: skipping any
// of the four passes fails one of them.
func TestSortByHigh(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	prios := map[string]func() uint32{
		"turns":  func() uint32 { return math.Float32bits(float32(1+rng.IntN(3)) * float32(int(1)<<rng.IntN(12))) },
		"random": rng.Uint32,
		"equal":  func() uint32 { return math.Float32bits(2) },
		"zero":   func() uint32 { return 0 },
		// Few values per byte, every byte varying: ties in three bytes
		// are common, so each pass decides some order.
		"bytes": func() uint32 {
			var v uint32
			for d := range 4 {
				v |= uint32(rng.IntN(3)) << (8 * d)
			}
			return v
		},
	}
	for d := range 4 {
		prios[fmt.Sprintf("byte %d", d)] = func() uint32 { return 0x3f800000 ^ uint32(rng.IntN(4))<<(8*d) }
	}
	var spare []uint64
	for name, prio := range prios {
		for _, n := range []int{0, 1, 2, radixMin - 1, radixMin, radixMin + 1, 300, 1500} {
			keys := make([]uint64, 0, n)
			for i := range n {
				idx := uint64(i*3 + rng.IntN(3)) // ascending, with gaps
				keys = append(keys, uint64(^prio())<<32|idx)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			var got []uint64
			got, spare = sortByHigh(keys, spare)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d keys: sorted wrong", name, n)
			}
			if len(spare) != 0 {
				t.Fatalf("%s, %d keys: spare has %d keys, want an empty buffer", name, n, len(spare))
			}
			if n > 0 && cap(spare) > 0 && &got[:1][0] == &spare[:1][0] {
				t.Fatalf("%s, %d keys: the sorted keys and the spare share their array", name, n)
			}
		}
	}
}

func TestSortByHighZeroAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 400)
	spare := make([]uint64, 0, 400)
	fill := func() {
		for i := range keys {
			keys[i] = uint64(rng.Uint32())<<32 | uint64(i)
		}
	}
	if n := testing.AllocsPerRun(50, func() {
		fill()
		keys, spare = sortByHigh(keys, spare)
		keys = keys[:cap(keys)]
	}); n != 0 {
		t.Fatalf("%v allocations per sort, want 0", n)
	}
}

// BenchmarkSortKeys compares sortByHigh with slices.Sort on 300 keys of
// the scheduler's shape (priorities of weights doubled per turn).
func BenchmarkSortKeys(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]uint64, 300)
	for i := range src {
		p := float32(1+rng.IntN(3)) * float32(int(1)<<rng.IntN(8))
		src[i] = uint64(^math.Float32bits(p))<<32 | uint64(i*4)
	}
	keys := make([]uint64, len(src))
	b.Run("radix", func(b *testing.B) {
		spare := make([]uint64, 0, len(src))
		b.ReportAllocs()
		for range b.N {
			keys = append(keys[:0], src...)
			keys, spare = sortByHigh(keys, spare)
		}
	})
	b.Run("pdqsort", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			keys = append(keys[:0], src...)
			slices.Sort(keys)
		}
	})
}
