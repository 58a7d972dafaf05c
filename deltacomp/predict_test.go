package deltacomp

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"
)

func testPredictSchema(t testing.TB) *Schema {
	s, err := NewSchema(Field{"x", 16}, Field{"a", 9}, Field{"flag", 1}, Field{"hp", 12}, Field{"wide", 32})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPredictExamples(t *testing.T) {
	s := testPredictSchema(t)
	p, err := NewPredictor(s, "x", "a", "wide")
	if err != nil {
		t.Fatal(err)
	}
	rec := func(x, a, flag, hp, wide uint32) []byte {
		r := make([]byte, s.Size())
		s.Pack(r, []uint32{x, a, flag, hp, wide})
		return r
	}
	for _, tc := range []struct {
		name              string
		base, prev, want  []byte
		ahead, step       uint32
		aliasBase, noPred bool
	}{
		{name: "constant pace", base: rec(1000, 200, 1, 7, 5), prev: rec(990, 205, 0, 9, 5), ahead: 6, step: 1, want: rec(1060, 170, 1, 7, 5)},
		{name: "pace over two revisions", base: rec(1000, 200, 0, 0, 9), prev: rec(990, 205, 0, 0, 1), ahead: 6, step: 2, want: rec(1030, 185, 0, 0, 33)},
		{name: "halves away from zero", base: rec(100, 100, 0, 0, 100), prev: rec(99, 101, 0, 0, 100), ahead: 1, step: 2, want: rec(101, 99, 0, 0, 100)},
		{name: "below a half", base: rec(100, 100, 0, 0, 100), prev: rec(99, 101, 0, 0, 100), ahead: 1, step: 3, want: rec(100, 100, 0, 0, 100)},
		{name: "clamped to the field", base: rec(65530, 3, 0, 0, 1<<32-2), prev: rec(65500, 40, 0, 0, 1<<32-20), ahead: 6, step: 1, want: rec(65535, 0, 0, 0, 1<<32-1)},
		{name: "no pace", base: rec(5, 6, 1, 2, 3), prev: rec(5, 6, 0, 9, 3), ahead: 6, step: 1, want: rec(5, 6, 1, 2, 3)},
		{name: "ahead 0", base: rec(1000, 200, 0, 0, 0), prev: rec(900, 100, 0, 0, 0), ahead: 0, step: 1, want: rec(1000, 200, 0, 0, 0)},
		{name: "step 0", base: rec(1000, 200, 0, 0, 0), prev: rec(900, 100, 0, 0, 0), ahead: 3, step: 0, want: rec(1000, 200, 0, 0, 0)},
		{name: "into base", base: rec(1000, 200, 1, 7, 5), prev: rec(990, 205, 0, 9, 5), ahead: 6, step: 1, want: rec(1060, 170, 1, 7, 5), aliasBase: true},
	} {
		dst := make([]byte, s.Size())
		if tc.aliasBase {
			dst = tc.base
		}
		p.Predict(dst, tc.base, tc.prev, tc.ahead, tc.step)
		if !bytes.Equal(dst, tc.want) {
			t.Errorf("%s: got %x, want %x", tc.name, dst, tc.want)
		}
	}
}

// TestPredictAgainstRationals checks Predict against exact rational
// arithmetic on random records: every linear field is base + (base −
// prev) × ahead / step rounded half away from zero and clamped, every
// other bit is base's.
func TestPredictAgainstRationals(t *testing.T) {
	s := testPredictSchema(t)
	p, err := NewPredictor(s, "x", "a", "hp", "wide")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base, prev, dst := make([]byte, s.Size()), make([]byte, s.Size()), make([]byte, s.Size())
	for range 20000 {
		for i := range base {
			base[i], prev[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			// Near each other, as records of a moving entity are.
			copy(prev, base)
			for f := range s.Fields() {
				s.Set(prev, f, s.Get(base, f)+uint32(rng.IntN(9))-4)
			}
		}
		ahead, step := uint32(rng.IntN(MaxPredictAge+1)), uint32(rng.IntN(MaxPredictAge+1))
		if rng.IntN(2) == 0 {
			ahead, step = uint32(rng.IntN(8)), uint32(rng.IntN(4))
		}
		p.Predict(dst, base, prev, ahead, step)
		for f, fd := range s.Fields() {
			want := s.Get(base, f)
			if fd.Name != "flag" && ahead != 0 && step != 0 {
				vb, vp := big.NewRat(int64(s.Get(base, f)), 1), big.NewRat(int64(s.Get(prev, f)), 1)
				q := new(big.Rat).Sub(vb, vp)
				q.Mul(q, big.NewRat(int64(ahead), int64(step)))
				// round half away from zero
				half := big.NewRat(1, 2)
				if q.Sign() < 0 {
					half.Neg(half)
				}
				q.Add(q, half)
				r := new(big.Int).Quo(q.Num(), q.Denom()) // truncates toward zero
				v := r.Int64() + int64(s.Get(base, f))
				v = min(max(v, 0), int64(1)<<fd.Bits-1)
				want = uint32(v)
			}
			if got := s.Get(dst, f); got != want {
				t.Fatalf("field %s: base %d prev %d ahead %d step %d: got %d, want %d", fd.Name, s.Get(base, f), s.Get(prev, f), ahead, step, got, want)
			}
		}
	}
}

func TestPredictorFields(t *testing.T) {
	s := testPredictSchema(t)
	if _, err := NewPredictor(s, "x", "nope"); err == nil {
		t.Error("unknown field accepted")
	}
	dup, err := NewSchema(Field{"x", 8}, Field{"x", 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPredictor(dup, "x"); err == nil {
		t.Error("ambiguous field accepted")
	}
	p, err := NewPredictor(s)
	if err != nil || p.RecordSize() != s.Size() {
		t.Fatalf("no fields: %v, record size %d", err, p.RecordSize())
	}
}

// BenchmarkPredict is one prediction of a 10-byte record laid out like
// the cube demo's (three 16-bit and three 9-bit fields extrapolated), one
// revision apart and six ahead, as codec 5 makes for a moving cube.
func BenchmarkPredict(b *testing.B) {
	s, err := NewSchema(Field{"x", 16}, Field{"y", 16}, Field{"z", 16}, Field{"a", 9}, Field{"b", 9}, Field{"c", 9}, Field{"largest", 2}, Field{"on", 1})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPredictor(s, "x", "y", "z", "a", "b", "c")
	if err != nil {
		b.Fatal(err)
	}
	base, prev, dst := make([]byte, s.Size()), make([]byte, s.Size()), make([]byte, s.Size())
	s.Pack(base, []uint32{33000, 31000, 33100, 300, 200, 260, 3, 1})
	s.Pack(prev, []uint32{32990, 31012, 33105, 297, 204, 255, 3, 1})
	b.ReportAllocs()
	for b.Loop() {
		p.Predict(dst, base, prev, 6, 1)
	}
}
