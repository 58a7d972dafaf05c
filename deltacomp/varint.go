package deltacomp

import "math/bits"

// Entity headers in delta frames are unsigned LEB128 varints of up to 35
// bits (a 32-bit id gap shifted left by up to 3 flag bits), so at most 5
// bytes. Like proto's varints, non-minimal encodings are malformed.
const (
	maxVarintLen = 5
	maxVarintVal = 1<<35 - 1
)

func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// parseVarint returns the value and bytes read; n == 0 means truncated,
// n < 0 malformed (over-long, non-minimal or above 35 bits).
func parseVarint(b []byte) (v uint64, n int) {
	var s uint
	for i := 0; i < maxVarintLen; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if c < 0x80 {
			if i > 0 && c == 0 {
				return 0, -1
			}
			v |= uint64(c) << s
			if v > maxVarintVal {
				return 0, -1
			}
			return v, i + 1
		}
		v |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, -1
}
