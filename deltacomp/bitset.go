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
