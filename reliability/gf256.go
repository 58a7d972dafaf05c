package reliability

// Arithmetic in GF(2⁸) with the polynomial x⁸ + x⁴ + x³ + x² + 1 (0x11d)
// and generator 2: the field of klauspost/reedsolomon, whose parity
// shards the parity frames carry, so that a receiver can combine shards
// of different groups (see ParityReceiver).

const gfPoly = 0x11d

var (
	gfExp [2 * 255]byte // gfExp[i] = 2^i, twice over so a sum of two logs needs no reduction
	gfLog [256]byte     // gfLog[2^i] = i; gfLog[0] unused
)

func init() {
	x := 1
	for i := range 255 {
		gfExp[i], gfExp[i+255] = byte(x), byte(x)
		gfLog[x] = byte(i)
		x <<= 1
		if x&0x100 != 0 {
			x ^= gfPoly
		}
	}
}

func gfMul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return gfExp[int(gfLog[a])+int(gfLog[b])]
}

// gfInv returns the inverse of a, which must not be 0.
func gfInv(a byte) byte { return gfExp[255-int(gfLog[a])] }

// gfMulAdd adds c × src to dst (dst ^= c·src), over the shorter of the
// two.
func gfMulAdd(dst, src []byte, c byte) {
	n := min(len(dst), len(src))
	switch c {
	case 0:
		return
	case 1:
		for i := range n {
			dst[i] ^= src[i]
		}
		return
	}
	lc := int(gfLog[c])
	for i, s := range src[:n] {
		if s != 0 {
			dst[i] ^= gfExp[lc+int(gfLog[s])]
		}
	}
}

// gfScale multiplies b by c in place.
func gfScale(b []byte, c byte) {
	if c == 1 {
		return
	}
	lc := int(gfLog[c])
	for i, s := range b {
		if s != 0 {
			b[i] = gfExp[lc+int(gfLog[s])]
		}
	}
}
