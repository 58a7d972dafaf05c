package fixed

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// isRoot reports whether r is v's square root rounded down, with the
// squares taken in 128 bits (r+1 squared overflows uint64 at the top).
func isRoot(v, r uint64) bool {
	hi, lo := bits.Mul64(r, r)
	if hi != 0 || lo > v {
		return false
	}
	hi, lo = bits.Mul64(r+1, r+1)
	return hi != 0 || lo > v
}

func TestIsqrt(t *testing.T) {
	values := []uint64{0, 1, 2, 3, 4, 15, 16, 17, 1 << 40, 1<<62 + 12345, math.MaxUint64, math.MaxUint64 - 1,
		math.MaxUint32 * math.MaxUint32, math.MaxUint32*math.MaxUint32 - 1}
	r := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		values = append(values, r.Uint64()>>r.IntN(64))
	}
	for _, v := range values {
		if got := Isqrt(v); !isRoot(v, got) {
			t.Errorf("Isqrt(%d) = %d", v, got)
		}
	}
	// Rounding is down, also just below a perfect square.
	for _, c := range []struct{ v, want uint64 }{{24, 4}, {25, 5}, {26, 5}, {math.MaxUint64, math.MaxUint32}} {
		if got := Isqrt(c.v); got != c.want {
			t.Errorf("Isqrt(%d) = %d, want %d", c.v, got, c.want)
		}
	}
}

func TestLength(t *testing.T) {
	for _, c := range []struct {
		x, y int32
		want int64
	}{
		{0, 0, 0}, {3, 4, 5}, {-3, 4, 5}, {3, -4, 5}, {-3, -4, 5},
		{1, 1, 1}, // √2 rounds down
		{math.MinInt32, 0, 1 << 31},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MinInt32, math.MinInt32, 3037000499}, // 2⁶³ summed without overflow
		{math.MaxInt32, math.MinInt32, 3037000499},
	} {
		if got := Length(c.x, c.y); got != c.want {
			t.Errorf("Length(%d, %d) = %d, want %d", c.x, c.y, got, c.want)
		}
	}
}

func TestLimit(t *testing.T) {
	for _, c := range []struct {
		x, y, max    int32
		wantX, wantY int32
	}{
		{3, 4, 5, 3, 4},   // exactly max: unchanged
		{3, 4, 100, 3, 4}, // shorter: unchanged
		{300, 400, 50, 30, 40},
		{-300, 400, 50, -30, 40},
		{10, 1, 3, 3, 0},    // 1·3/10 truncates to 0
		{-10, -1, 3, -3, 0}, // toward zero, not down (a shift would give -1)
		{7, -7, 5, 3, -3},   // l = ⌊√98⌋ = 9: 35/9 truncates to 3
		{1, 1, 1, 1, 1},     // x²+y² = 2 > 1, but l = 1: the rounding shows
		{5, 5, 0, 0, 0},
		{5, 5, -4, 0, 0},
		{0, 0, 7, 0, 0},
		{math.MinInt32, math.MinInt32, math.MaxInt32, -1518500249, -1518500249},
		{math.MinInt32, 0, 1, -1, 0},
	} {
		if x, y := Limit(c.x, c.y, c.max); x != c.wantX || y != c.wantY {
			t.Errorf("Limit(%d, %d, %d) = (%d, %d), want (%d, %d)", c.x, c.y, c.max, x, y, c.wantX, c.wantY)
		}
	}
}

// TestLimitProperties: on random vectors, Limit keeps short vectors,
// never returns a component above max, never grows a component, and is
// symmetric in each sign.
func TestLimitProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for range 100000 {
		x, y := int32(r.Uint32()>>r.IntN(32)), int32(r.Uint32()>>r.IntN(32))
		m := int32(r.Uint32()>>r.IntN(32)) & math.MaxInt32
		lx, ly := Limit(x, y, m)
		if square(x)+square(y) <= square(m) && m > 0 && (lx != x || ly != y) {
			t.Fatalf("Limit(%d, %d, %d) = (%d, %d): a short vector changed", x, y, m, lx, ly)
		}
		if square(lx) > square(m) || square(ly) > square(m) || square(lx) > square(x) || square(ly) > square(y) {
			t.Fatalf("Limit(%d, %d, %d) = (%d, %d)", x, y, m, lx, ly)
		}
		if x != math.MinInt32 && y != math.MinInt32 {
			if nx, ny := Limit(-x, -y, m); nx != -lx || ny != -ly {
				t.Fatalf("Limit(%d, %d, %d) = (%d, %d) but Limit(%d, %d) = (%d, %d)", x, y, m, lx, ly, -x, -y, nx, ny)
			}
			if nx, ny := Limit(-x, y, m); nx != -lx || ny != ly {
				t.Fatalf("Limit(%d, %d, %d) = (%d, %d) but Limit(%d, %d) = (%d, %d)", x, y, m, lx, ly, -x, y, nx, ny)
			}
		}
	}
}

// TestMixValues pins values: every world that uses Mix depends on them.
func TestMixValues(t *testing.T) {
	for _, c := range []struct{ a, b, want uint64 }{
		{0, 0, 0},
		{1, 2, 0x975835de1c9756ce},
		{2, 1, 0xbeeb8da1658eec67},
		{math.MaxUint64, 12345, 0x161dd8cdea9ac2d8}, // the multiplications wrap
	} {
		if got := Mix(c.a, c.b); got != c.want {
			t.Errorf("Mix(%d, %d) = %#x, want %#x", c.a, c.b, got, c.want)
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
}

func TestNoAllocs(t *testing.T) {
	var sink int64
	if n := testing.AllocsPerRun(100, func() {
		x, y := Limit(300, -400, 50)
		sink += Length(x, y) + int64(Isqrt(uint64(sink)&0xffff)) + int64(Mix(1, uint64(sink))&1)
	}); n != 0 {
		t.Errorf("%v allocs", n)
	}
}
