package deltacomp

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSchemaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 2000; iter++ {
		n := 1 + rng.IntN(12)
		fields := make([]Field, n)
		for i := range fields {
			fields[i].Bits = uint8(1 + rng.IntN(32))
		}
		s, err := NewSchema(fields...)
		if err != nil {
			t.Fatal(err)
		}
		bitsTotal := 0
		for _, f := range fields {
			bitsTotal += int(f.Bits)
		}
		if s.Size() > (bitsTotal+7)/8+1 && s.Size() > (bitsTotal+7)/8 {
			// full bytes + one residual area rounded up: at most one byte wasted
			t.Fatalf("size %d for %d bits", s.Size(), bitsTotal)
		}
		vals := make([]uint32, n)
		for i, f := range fields {
			vals[i] = rng.Uint32() & uint32(uint64(1)<<f.Bits-1)
		}
		rec := make([]byte, s.Size())
		for i := range rec {
			rec[i] = 0xff // Pack must overwrite everything
		}
		s.Pack(rec, vals)
		got := make([]uint32, n)
		s.Unpack(got, rec)
		for i := range vals {
			if got[i] != vals[i] {
				t.Fatalf("field %d (%d bits): %x != %x", i, fields[i].Bits, got[i], vals[i])
			}
		}
	}
	if _, err := NewSchema(Field{Bits: 0}); err == nil {
		t.Fatal("0-bit field accepted")
	}
	if _, err := NewSchema(Field{Bits: 33}); err == nil {
		t.Fatal("33-bit field accepted")
	}
}

// A small change of a field touches only its plane-0 byte unless it
// crosses a multiple of 256; the cube-like layout keeps those bytes in the
// first RLE group.
func TestSchemaSignificanceLayout(t *testing.T) {
	s, _ := NewSchema(Field{Bits: 16}, Field{Bits: 16}, Field{Bits: 16}, Field{Bits: 9}, Field{Bits: 9}, Field{Bits: 9}, Field{Bits: 2}, Field{Bits: 1})
	if s.Size() != 10 {
		t.Fatalf("size %d", s.Size())
	}
	a := make([]byte, 10)
	b := make([]byte, 10)
	s.Pack(a, []uint32{1000, 2000, 3000, 100, 200, 300, 1, 0})
	s.Pack(b, []uint32{1010, 1990, 3001, 101, 199, 300, 1, 0})
	p := make([]byte, 10)
	for i := range p {
		p[i] = a[i] ^ b[i]
	}
	if lastGroup(p) != 0 {
		t.Fatalf("small change reaches group %d: %x", lastGroup(p), p)
	}
	if PatchSize(p) != 1+5 {
		t.Fatalf("patch size %d: %x", PatchSize(p), p)
	}
}

func TestQuantize(t *testing.T) {
	for _, v := range []float32{0, 1, -1, 3.14159, -1000.5, 1e9, -1e9} {
		q := QuantizeFixed(v, 512)
		if math.Abs(float64(v)) < 1e6 && math.Abs(float64(DequantizeFixed(q, 512)-v)) > 1.0/1024+1e-6*math.Abs(float64(v)) {
			t.Errorf("fixed %v -> %d -> %v", v, q, DequantizeFixed(q, 512))
		}
	}
	if QuantizeFixed(float32(math.NaN()), 512) != 0 {
		t.Error("NaN")
	}
	for _, v := range []float32{-10, -3.3, 0, 7.7, 10, 20, -20} {
		q := QuantizeRange(v, -10, 10, 10)
		want := max(-10, min(10, v))
		if d := DequantizeRange(q, -10, 10, 10) - want; math.Abs(float64(d)) > 20.0/1023/2+1e-5 {
			t.Errorf("range %v: off by %v", v, d)
		}
	}
	for _, v := range []int32{0, 1, -1, 32767, -32768, 40000, -40000} {
		u := Bias(v, 16)
		if u > 0xffff {
			t.Fatalf("bias %d out of field: %d", v, u)
		}
		want := max(-32768, min(32767, v))
		if Unbias(u, 16) != want {
			t.Errorf("bias %d -> %d -> %d", v, u, Unbias(u, 16))
		}
	}
	// Crossing zero flips only the field's bytes: -1 -> 0 in a 16-bit field.
	if Bias(-1, 16)^Bias(0, 16) != 0xffff {
		t.Errorf("bias crossing zero: %x", Bias(-1, 16)^Bias(0, 16))
	}
}

func TestSmallestThree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 10000; iter++ {
		q := [4]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		n := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
		in := Quat{float32(q[0] / n), float32(q[1] / n), float32(q[2] / n), float32(q[3] / n)}
		s := QuantizeQuat(in, 9)
		if s.A > 511 || s.B > 511 || s.C > 511 || s.Largest > 3 {
			t.Fatalf("out of range: %+v", s)
		}
		out := s.Quat(9)
		// q and -q are the same rotation: compare |dot|.
		dot := math.Abs(float64(in.X*out.X + in.Y*out.Y + in.Z*out.Z + in.W*out.W))
		if dot < 0.9999 {
			t.Fatalf("%+v -> %+v -> %+v: dot %v", in, s, out, dot)
		}
	}
}
