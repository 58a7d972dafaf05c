package deltacomp

import (
	"math/rand/v2"
	"testing"
)

// TestSchemaFieldAccess: Set and Get read and write one field of a record
// without disturbing the others, agreeing with Pack and Unpack; SetInt
// and GetInt round-trip signed values within the field's range.
func TestSchemaFieldAccess(t *testing.T) {
	s, err := NewSchema(Field{"x", 20}, Field{"y", 20}, Field{"flags", 3}, Field{"hp", 7}, Field{"id", 32}, Field{"b", 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]uint32, len(s.Fields()))
	got := make([]uint32, len(vals))
	rec := make([]byte, s.Size())
	for range 2000 {
		for i, f := range s.Fields() {
			vals[i] = r.Uint32()
			if f.Bits < 32 {
				vals[i] &= 1<<f.Bits - 1
			}
		}
		s.Pack(rec, vals)
		i := r.IntN(len(vals))
		v := r.Uint32() & (1<<s.Fields()[i].Bits - 1)
		if s.Fields()[i].Bits == 32 {
			v = r.Uint32()
		}
		s.Set(rec, i, v)
		vals[i] = v
		s.Unpack(got, rec)
		for k := range vals {
			if got[k] != vals[k] || s.Get(rec, k) != vals[k] {
				t.Fatalf("after Set(%d, %d): field %d = %d / %d, want %d", i, v, k, got[k], s.Get(rec, k), vals[k])
			}
		}
	}
	for _, v := range []int32{0, 1, -1, 524287, -524288} {
		s.SetInt(rec, 0, v)
		if g := s.GetInt(rec, 0); g != v {
			t.Fatalf("SetInt %d: GetInt %d", v, g)
		}
	}
}
