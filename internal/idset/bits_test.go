package idset

import (
	"math/rand/v2"
	"testing"
)

// randomWords returns 1 to 5 words of random bits.
func randomWords(rng *rand.Rand) []uint64 {
	s := make([]uint64, 1+rng.IntN(5))
	for i := range s {
		s[i] = rng.Uint64()
	}
	return s
}

func TestOrBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for iter := 0; iter < 5000; iter++ {
		src := randomWords(rng)
		dst := make([]uint64, 1+rng.IntN(5))
		so := rng.IntN(len(src) * 64)
		do := rng.IntN(len(dst) * 64)
		n := rng.IntN(min(len(src)*64-so, len(dst)*64-do) + 1)
		OrBits(dst, do, src, so, n)
		for i := 0; i < len(dst)*64; i++ {
			want := i >= do && i < do+n && Bit(src, so+i-do)
			if Bit(dst, i) != want {
				t.Fatalf("so %d do %d n %d: bit %d = %v", so, do, n, i, !want)
			}
		}
	}
}

func TestBits(t *testing.T) {
	s := ResizeBits([]uint64{^uint64(0)}, 130)
	if len(s) != 3 {
		t.Fatalf("130 bits in %d words", len(s))
	}
	for _, i := range []int{0, 63, 64, 129} {
		if Bit(s, i) {
			t.Fatalf("bit %d set after ResizeBits", i)
		}
		SetBit(s, i)
		if !Bit(s, i) {
			t.Fatalf("bit %d clear after SetBit", i)
		}
	}
	ClearBit(s, 64)
	if Bit(s, 64) || !Bit(s, 63) || !Bit(s, 129) {
		t.Fatalf("ClearBit(64): %x", s)
	}
	if a := testing.AllocsPerRun(100, func() { s = ResizeBits(s, 100) }); a != 0 {
		t.Fatalf("ResizeBits within capacity: %v allocs", a)
	}
}

// TestCopyBitsAndClearBits checks both against a []bool copy of the bits,
// with overlapping ranges in both directions.
func TestCopyBitsAndClearBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for iter := 0; iter < 5000; iter++ {
		s := randomWords(rng)
		size := len(s) * 64
		model := make([]bool, size)
		for i := range model {
			model[i] = Bit(s, i)
		}
		if rng.IntN(2) == 0 {
			from, to := rng.IntN(size), rng.IntN(size)
			n := rng.IntN(size - max(from, to) + 1)
			CopyBits(s, to, from, n)
			copy(model[to:to+n], model[from:from+n])
			for i, want := range model {
				if Bit(s, i) != want {
					t.Fatalf("CopyBits(to %d, from %d, n %d): bit %d = %v", to, from, n, i, !want)
				}
			}
			continue
		}
		from := rng.IntN(size + 1)
		to := from + rng.IntN(size-from+1)
		ClearBits(s, from, to)
		clear(model[from:to])
		for i, want := range model {
			if Bit(s, i) != want {
				t.Fatalf("ClearBits(%d, %d): bit %d = %v", from, to, i, !want)
			}
		}
	}
}
