package deltacomp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// naivePatch is the slow model: the plain byte diff, as (offset, xor) pairs.
func naiveDiff(cur, base []byte) map[int]byte {
	d := map[int]byte{}
	for i := range cur {
		if x := cur[i] ^ base[i]; x != 0 {
			d[i] = x
		}
	}
	return d
}

func randPatch(rng *rand.Rand, size int) []byte {
	p := make([]byte, size)
	switch rng.IntN(4) {
	case 0: // sparse
		for k := rng.IntN(4); k > 0; k-- {
			p[rng.IntN(size)] = byte(rng.IntN(256))
		}
	case 1: // dense front
		for i := 0; i < min(size, rng.IntN(12)); i++ {
			p[i] = byte(rng.IntN(256))
		}
	case 2: // random density
		d := rng.Float64()
		for i := range p {
			if rng.Float64() < d {
				p[i] = byte(rng.IntN(256))
			}
		}
	case 3: // long zero runs
		for k := rng.IntN(3); k > 0; k-- {
			p[rng.IntN(size)] = byte(1 + rng.IntN(255))
		}
	}
	return p
}

func TestRLEAgainstByteDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 20000; iter++ {
		size := 1 + rng.IntN(40)
		if iter%50 == 0 {
			size = 1 + rng.IntN(MaxRecordSize*2)
		}
		base := make([]byte, size)
		for i := range base {
			base[i] = byte(rng.IntN(256))
		}
		patch := randPatch(rng, size)
		cur := make([]byte, size)
		for i := range cur {
			cur[i] = base[i] ^ patch[i]
		}
		enc := AppendPatch([]byte{0xAA}, patch)[1:]
		if len(enc) != PatchSize(patch) {
			t.Fatalf("size %d != PatchSize %d", len(enc), PatchSize(patch))
		}
		// Decoding onto the baseline gives the current record.
		got := bytes.Clone(base)
		n, err := ApplyPatch(got, append(enc, 0x55))
		if err != nil || n != len(enc) {
			t.Fatalf("ApplyPatch: n=%d err=%v (len %d)", n, err, len(enc))
		}
		if !bytes.Equal(got, cur) {
			t.Fatalf("reconstruction differs")
		}
		// The literals are exactly the byte diff's non-zero bytes, in order.
		d := naiveDiff(cur, base)
		if len(d) > len(enc) {
			t.Fatalf("encoding shorter than the diff's literals: %d < %d", len(enc), len(d))
		}
		// Bound: the literals plus at most two bytes per group.
		if last := lastGroup(patch); len(enc) > len(d)+2*(last+1)+1 {
			t.Fatalf("encoding %d bytes for %d changes in %d groups", len(enc), len(d), last+1)
		}
		// Every truncation is an error, never a panic.
		for cut := 0; cut < len(enc); cut++ {
			if _, err := ApplyPatch(bytes.Clone(base), enc[:cut]); !errors.Is(err, proto.ErrTruncated) {
				t.Fatalf("cut %d/%d: err %v", cut, len(enc), err)
			}
		}
	}
}

func TestRLEExamples(t *testing.T) {
	cases := []struct {
		patch []byte
		enc   []byte
	}{
		{make([]byte, 10), []byte{0x00}},
		{[]byte{5, 0, 7, 0, 0, 0, 0, 0, 0, 0}, []byte{0x05, 5, 7}},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, []byte{0x80, 0x00, 0x02, 1}},
		{[]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0}, []byte{0x81, 1, 0x02, 1}},
	}
	for _, c := range cases {
		if got := AppendPatch(nil, c.patch); !bytes.Equal(got, c.enc) {
			t.Errorf("AppendPatch(%x) = %x, want %x", c.patch, got, c.enc)
		}
	}
	// Non-canonical forms are rejected.
	bad := [][]byte{
		{0x01, 0x00},                      // zero literal
		{0x81, 1, 0x00},                   // trailing zero group
		{0x80, 0, 0x80, 0, 0x01},          // split zero run
		{0x81, 1, 0x81, 1},                // more past the end (10 bytes = 2 groups)
		{0x81, 1, 0x3f, 1, 1, 1, 1, 1, 1}, // bits past the record end
	}
	for _, b := range bad {
		if _, err := ApplyPatch(make([]byte, 10), b); !errors.Is(err, proto.ErrMalformed) {
			t.Errorf("ApplyPatch(%x) = %v, want malformed", b, err)
		}
	}
}

func FuzzRLE(f *testing.F) {
	f.Add(10, []byte{0x00})
	f.Add(10, []byte{0x05, 5, 7})
	f.Add(10, []byte{0x80, 0x00, 0x02, 1})
	f.Add(100, AppendPatch(nil, append(make([]byte, 90), 1, 2, 3, 0, 0, 0, 0, 0, 0, 9)))
	f.Fuzz(func(t *testing.T, size int, src []byte) {
		if size <= 0 || size > MaxRecordSize {
			return
		}
		dst := make([]byte, size)
		n, err := ApplyPatch(dst, src)
		if err != nil {
			return
		}
		// Accepted input is canonical: re-encoding gives the same bytes.
		if re := AppendPatch(nil, dst); !bytes.Equal(re, src[:n]) {
			t.Fatalf("re-encode %x != %x", re, src[:n])
		}
	})
}
