// Package fixed holds the integer helpers the demo games share. Their
// simulations use integer arithmetic only, so every peer steps the same
// world to the same bits.
package fixed

// Isqrt is the integer square root (floor).
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

// Mix is splitmix64 over a and b: a deterministic hash for pseudo-random
// choices seeded by an entity and a tick (the simulations hold no RNG
// state).
func Mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
