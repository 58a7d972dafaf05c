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
		v := getBits(src, so, k)
		dw, ds := do>>6, uint(do&63)
		dst[dw] |= v << ds
		if ds != 0 && int(64-ds) < k {
			dst[dw+1] |= v >> (64 - ds)
		}
		n, so, do = n-k, so+k, do+k
	}
}

// getBits returns the k ≤ 64 bits of s from bit p on (bits past s's end
// read as 0).
func getBits(s []uint64, p, k int) uint64 {
	w, o := p>>6, uint(p&63)
	v := s[w] >> o
	if o != 0 && w+1 < len(s) {
		v |= s[w+1] << (64 - o)
	}
	if k < 64 {
		v &= 1<<k - 1
	}
	return v
}

// putBits replaces the k ≤ 64 bits of s from bit p on with v's low k bits.
func putBits(s []uint64, p, k int, v uint64) {
	mask := ^uint64(0)
	if k < 64 {
		mask = 1<<k - 1
	}
	v &= mask
	w, o := p>>6, uint(p&63)
	s[w] = s[w]&^(mask<<o) | v<<o
	if o != 0 && int(64-o) < k {
		s[w+1] = s[w+1]&^(mask>>(64-o)) | v>>(64-o)
	}
}

// CopyBits replaces the n bits of s from bit to on with its n bits from
// bit from on, as copy does for overlapping slices: the source is read
// before it is overwritten, in either direction.
func CopyBits(s []uint64, to, from, n int) {
	if to < from {
		for n > 0 {
			k := min(n, 64)
			putBits(s, to, k, getBits(s, from, k))
			n, from, to = n-k, from+k, to+k
		}
		return
	}
	for n > 0 { // to the right: from the top down
		k := min(n, 64)
		n -= k
		putBits(s, to+n, k, getBits(s, from+n, k))
	}
}

// ClearBits clears bits [from, to) of s.
func ClearBits(s []uint64, from, to int) {
	if from >= to {
		return
	}
	fw, tw := from>>6, (to-1)>>6
	lo := ^uint64(0) << uint(from&63)
	hi := ^uint64(0) >> uint(63-(to-1)&63)
	if fw == tw {
		s[fw] &^= lo & hi
		return
	}
	s[fw] &^= lo
	clear(s[fw+1 : tw])
	s[tw] &^= hi
}
