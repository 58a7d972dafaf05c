package idset

// Bitsets over a layout's entities: bit i of s is s[i>>6]>>(i&63)&1, for
// entity i of a sorted id set.

// Bit reports whether bit i of s is set.
func Bit(s []uint64, i int) bool { return s[i>>6]>>(i&63)&1 != 0 }

// SetBit sets bit i of s.
func SetBit(s []uint64, i int) { s[i>>6] |= 1 << (i & 63) }

// ClearBit clears bit i of s.
func ClearBit(s []uint64, i int) { s[i>>6] &^= 1 << (i & 63) }

// ResizeBits returns s with room for n bits, all clear, reusing s's
// storage when it is large enough.
func ResizeBits(s []uint64, n int) []uint64 {
	w := (n + 63) / 64
	if cap(s) < w {
		s = make([]uint64, w, w+w/4)
	}
	s = s[:w]
	clear(s)
	return s
}

// OrBits ORs n bits of src starting at bit so into dst starting at bit do.
func OrBits(dst []uint64, do int, src []uint64, so int, n int) {
	for n > 0 {
		k := min(n, 64)
		w, s := so>>6, uint(so&63)
		v := src[w] >> s
		if s != 0 && w+1 < len(src) {
			v |= src[w+1] << (64 - s)
		}
		if k < 64 {
			v &= 1<<k - 1
		}
		dw, ds := do>>6, uint(do&63)
		dst[dw] |= v << ds
		if ds != 0 && int(64-ds) < k {
			dst[dw+1] |= v >> (64 - ds)
		}
		n, so, do = n-k, so+k, do+k
	}
}
