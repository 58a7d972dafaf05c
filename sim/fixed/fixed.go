package fixed

// Isqrt returns the integer square root of v rounded down: the largest r
// with r*r <= v. It is exact over the whole range; Isqrt of
// math.MaxUint64 is math.MaxUint32.
func Isqrt(v uint64) uint64 {
	if v < 2 {
		return v
	}
	x := v
	y := x/2 + x&1 // (x+1)/2 without overflowing at the top of the range
	for y < x {
		x = y
		y = (x + v/x) / 2
	}
	return x
}

// Length returns the length of the vector (x, y) rounded down:
// Isqrt(x²+y²). It is exact for every pair of int32 values, negative
// ones and math.MinInt32 included: the squares are summed in uint64,
// where the sum (at most 2⁶³) cannot overflow. The largest result,
// Length(math.MinInt32, math.MinInt32), is 3037000499.
func Length(x, y int32) int64 {
	return int64(Isqrt(square(x) + square(y)))
}

// Limit returns (x, y) unchanged when its length is at most max
// (x²+y² ≤ max²), and otherwise the vector pointing the same way scaled
// to max: (x·max/l, y·max/l) with l = Length(x, y), each quotient
// truncated toward zero as Go's / does. So a component never exceeds
// max in magnitude, Limit(-x, y, max) is Limit(x, y, max) with its
// first component negated (and likewise for y), and the length of the
// result is close to max but not exact (l is rounded down, each
// component toward zero: Limit(7, -7, 5) is (3, -3)). A max of zero or
// less gives (0, 0). No intermediate value can overflow.
func Limit(x, y, max int32) (int32, int32) {
	if max <= 0 {
		return 0, 0
	}
	s := square(x) + square(y)
	if s <= square(max) {
		return x, y
	}
	l := int64(Isqrt(s)) // ≥ max ≥ 1
	return int32(int64(x) * int64(max) / l), int32(int64(y) * int64(max) / l)
}

// square is v² in uint64, exact for every int32 (at most 2⁶²).
func square(v int32) uint64 {
	a := int64(v)
	if a < 0 {
		a = -a // |math.MinInt32| is 2³¹: fine in int64
	}
	return uint64(a * a)
}

// Mix is splitmix64 over a and b: a deterministic hash for pseudo-random
// choices seeded by an entity and a tick, so that a simulation holds no
// generator state. Its multiplications wrap around by design; the same
// a and b give the same value on every machine, and swapping them gives
// another.
func Mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
