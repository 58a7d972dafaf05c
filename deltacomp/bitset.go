package deltacomp

func bitsetLen(n int) int { return (n + 63) / 64 }

func bitGet(s []uint64, i int) bool { return s[i>>6]>>(i&63)&1 != 0 }

func bitSet(s []uint64, i int) { s[i>>6] |= 1 << (i & 63) }

// resizeBits returns s with room for n bits, all clear.
func resizeBits(s []uint64, n int) []uint64 {
	w := bitsetLen(n)
	if cap(s) < w {
		s = make([]uint64, w)
	}
	s = s[:w]
	clear(s)
	return s
}

func resizeBytes(b []byte, n int) []byte {
	if cap(b) < n {
		b = make([]byte, n, n+n/4)
	}
	return b[:n]
}

// orBits ORs n bits of src starting at bit so into dst starting at bit do.
func orBits(dst []uint64, do int, src []uint64, so int, n int) {
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
