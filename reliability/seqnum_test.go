package reliability

import (
	"math/rand/v2"
	"testing"
)

// expandModel is the slow reference: try every wrap near ref.
func expandModel(ref uint64, seq uint16) uint64 {
	best, bestD := uint64(0), uint64(1<<63)
	base := int64(ref>>16) - 2
	for k := base; k <= base+4; k++ {
		if k < 0 || k > int64(^uint64(0)>>16) {
			continue
		}
		c := uint64(k)<<16 | uint64(seq)
		var d uint64
		if c >= ref {
			d = c - ref
			if d > seqHalf { // outside (ref-32768, ref+32768]
				d += 1 << 40
			}
		} else {
			d = ref - c
			if d >= seqHalf {
				d += 1 << 40
			}
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func TestExpandSeq(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	refs := []uint64{0, 1, 2, 32767, 32768, 32769, 65535, 65536, 65537, 98304, 1 << 40, ^uint64(0), ^uint64(0) - 32768, ^uint64(0) - 65536}
	for range 2000 {
		refs = append(refs, rng.Uint64()>>rng.IntN(64))
	}
	for _, ref := range refs {
		for range 200 {
			seq := uint16(rng.Uint32())
			got := ExpandSeq(ref, seq)
			if uint16(got) != seq {
				t.Fatalf("ExpandSeq(%d, %d) = %d: low bits differ", ref, seq, got)
			}
			if want := expandModel(ref, seq); got != want {
				t.Fatalf("ExpandSeq(%d, %d) = %d, model %d", ref, seq, got, want)
			}
		}
		// Every value within reach reconstructs exactly.
		for _, d := range []int64{-32767, -1000, -1, 0, 1, 1000, 32768} {
			pn := uint64(int64(ref) + d)
			if (d < 0 && pn > ref) || (d > 0 && pn < ref) {
				continue // wrapped past the ends of uint64
			}
			if got := ExpandSeq(ref, uint16(pn)); got != pn {
				t.Fatalf("ExpandSeq(%d, seq of %d (d=%d)) = %d", ref, pn, d, got)
			}
		}
	}
}

func TestExpandAck(t *testing.T) {
	for _, tc := range []struct {
		last uint64
		ack  uint16
		pn   uint64
		ok   bool
	}{
		{1, 1, 1, true},
		{1, 0, 0, false},
		{5, 3, 3, true},
		{5, 6, 0, false}, // would be 65542 - 65536 = 6 > last: previous wrap is -65530
		{70000, 70000 - 65536, 70000, true},
		{70000, 65535, 65535, true},
		{70000, 4463, 4463 + 65536, true},
		{65536, 0, 65536, true},
		{65536, 1, 1, true},
	} {
		pn, ok := expandAck(tc.last, tc.ack)
		if pn != tc.pn || ok != tc.ok {
			t.Errorf("expandAck(%d, %d) = %d, %v; want %d, %v", tc.last, tc.ack, pn, ok, tc.pn, tc.ok)
		}
	}
}

func TestSeqNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b uint16
		want bool
	}{
		{1, 0, true}, {0, 1, false}, {0, 0, false}, {0, 65535, true}, {65535, 0, false},
		{32767, 0, true}, {32768, 0, false}, {100, 65000, true},
	} {
		if got := SeqNewer(tc.a, tc.b); got != tc.want {
			t.Errorf("SeqNewer(%d, %d) = %v", tc.a, tc.b, got)
		}
	}
}

func BenchmarkExpandSeq(b *testing.B) {
	var ref uint64 = 1 << 20
	var s uint16
	b.ReportAllocs()
	for b.Loop() {
		ref = ExpandSeq(ref, s)
		s++
	}
}
