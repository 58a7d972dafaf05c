package fixed

import "testing"

func TestIsqrt(t *testing.T) {
	for _, v := range []uint64{0, 1, 2, 3, 4, 15, 16, 17, 1 << 40, 1<<62 + 12345, ^uint64(0)} {
		r := Isqrt(v)
		if r*r > v || (r+1)*(r+1) <= v && r+1 != 1<<32 {
			t.Errorf("Isqrt(%d) = %d", v, r)
		}
	}
}

func TestMixSpreads(t *testing.T) {
	seen := map[uint64]bool{}
	for a := range uint64(100) {
		for b := range uint64(100) {
			seen[Mix(a, b)] = true
		}
	}
	if len(seen) != 10000 {
		t.Fatalf("%d distinct values of 10000", len(seen))
	}
	if x, y := Mix(7, 9), Mix(7, 9); x != y || x == Mix(9, 7) {
		t.Fatal("Mix is not a deterministic, order-sensitive hash")
	}
}
