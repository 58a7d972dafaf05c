package proto

import "encoding/binary"

// Varints are unsigned LEB128 as in encoding/binary. tickwire only uses them
// for lengths and counts, so a varint on the wire may hold at most 32 bits
// and take at most MaxVarintLen bytes; anything longer is malformed.
const MaxVarintLen = binary.MaxVarintLen32

// VarintLen is the encoded size of v.
func VarintLen(v uint32) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	case v < 1<<28:
		return 4
	}
	return 5
}

// AppendVarint appends v as an unsigned LEB128 varint.
func AppendVarint(b []byte, v uint32) []byte {
	return binary.AppendUvarint(b, uint64(v))
}

// parseVarint reads a varint of at most 32 bits. It returns ok=false with
// n=0 for truncated input and n=-1 for an over-long or overflowing value.
func parseVarint(b []byte) (v uint32, n int) {
	var x uint32
	var s uint
	for i := 0; i < MaxVarintLen; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if c < 0x80 {
			if i == MaxVarintLen-1 && c > 0x0f {
				return 0, -1 // more than 32 bits
			}
			if i > 0 && c == 0 {
				return 0, -1 // non-minimal encoding
			}
			return x | uint32(c)<<s, i + 1
		}
		x |= uint32(c&0x7f) << s
		s += 7
	}
	return 0, -1
}

var le = binary.LittleEndian
