package deltacomp

import (
	"encoding/binary"
	"math/bits"
)

// The run-length code for XOR patches ("group-mask RLE").
//
// A patch is the XOR of an entity's record with its baseline: mostly zero
// bytes, with a few non-zero low-order bytes where fields changed. The code
// cuts the patch into groups of 7 bytes and writes, for each group up to
// the last non-zero one, a token byte:
//
//   - 0x80 followed by a count byte n: n+1 all-zero groups (a zero run);
//   - otherwise bits 0–6 say which of the group's bytes are non-zero (bit j
//     for byte j), bit 7 says that more tokens follow, and the non-zero
//     bytes follow the token in order.
//
// Groups after the last token are zero. An all-zero patch is the single
// byte 0x00. The decoder knows the record size, so a patch needs no length:
// it ends at the first token without bit 7. Every patch has exactly one
// encoding (the canonical one AppendPatch produces); the decoder rejects
// any other (zero literals, trailing zero groups, split zero runs).
//
// With records laid out so that the bytes that change together are
// adjacent (see Schema), a moving entity's patch is one token and its
// changed bytes: one byte of overhead instead of a run-length pair per run.
const (
	rleGroup = 7    // bytes per token
	rleMore  = 0x80 // token bit: another token follows
	rleSkip  = 0x80 // token value: a zero run, count byte follows
	rleRun   = 256  // most groups one zero-run token covers
)

// MaxRecordSize bounds record sizes so that a patch's size fits the
// packet arithmetic and a full snapshot's header stays small.
const MaxRecordSize = 1024

// groupMask returns the non-zero byte mask of p[off:off+n], n ≤ 7.
func groupMask(p []byte, off, n int) uint8 {
	if off+8 <= len(p) {
		// Eight bytes at once: set the high bit of every non-zero byte,
		// then gather the high bits into one byte.
		const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
		x := binary.LittleEndian.Uint64(p[off:]) & (1<<(8*uint(n)) - 1)
		t := ((x & lo7) + lo7 | x) & hi
		return uint8((t >> 7) * 0x0102040810204080 >> 56)
	}
	var m uint8
	for j, c := range p[off : off+n] {
		if c != 0 {
			m |= 1 << j
		}
	}
	return m
}

func groupLen(size, g int) int { return min(rleGroup, size-g*rleGroup) }

// lastGroup returns the index of the last group holding a non-zero byte,
// or -1 if p is all zero.
func lastGroup(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0 {
			return i / rleGroup
		}
	}
	return -1
}

// PatchSize returns the encoded size of patch p (len(AppendPatch(nil, p))).
func PatchSize(p []byte) int {
	last := lastGroup(p)
	if last < 0 {
		return 1
	}
	n := 0
	for g := 0; g <= last; {
		m := groupMask(p, g*rleGroup, groupLen(len(p), g))
		if m == 0 {
			run := 1
			for g+run <= last && run < rleRun && groupMask(p, (g+run)*rleGroup, groupLen(len(p), g+run)) == 0 {
				run++
			}
			n += 2
			g += run
			continue
		}
		n += 1 + bits.OnesCount8(m)
		g++
	}
	return n
}

// AppendPatch appends the run-length code of patch p to b.
func AppendPatch(b, p []byte) []byte {
	last := lastGroup(p)
	if last < 0 {
		return append(b, 0)
	}
	for g := 0; g <= last; {
		off := g * rleGroup
		n := groupLen(len(p), g)
		m := groupMask(p, off, n)
		if m == 0 {
			run := 1
			for g+run <= last && run < rleRun && groupMask(p, (g+run)*rleGroup, groupLen(len(p), g+run)) == 0 {
				run++
			}
			b = append(b, rleSkip, byte(run-1))
			g += run
			continue
		}
		t := m
		if g < last {
			t |= rleMore
		}
		b = append(b, t)
		for j, c := range p[off : off+n] {
			if c != 0 {
				b = append(b, c)
			}
			_ = j
		}
		g++
	}
	return b
}

var (
	errRLETrunc   = truncated("rle patch")
	errRLEBad     = malformed("rle patch")
	errRLELong    = malformed("rle patch: past record end")
	errRLELiteral = malformed("rle patch: zero literal")
)

// ApplyPatch decodes one patch from src and XORs it into dst, whose length
// is the record size; it returns the bytes of src consumed. On error dst
// may be partly modified: decode into a scratch copy when that matters.
func ApplyPatch(dst, src []byte) (int, error) {
	if len(src) == 0 {
		return 0, errRLETrunc
	}
	if src[0] == 0 {
		return 1, nil
	}
	size := len(dst)
	groups := (size + rleGroup - 1) / rleGroup
	i, g := 0, 0
	lastRun := rleRun // length of the zero run just before, rleRun if none
	for {
		if g >= groups {
			return 0, errRLELong
		}
		if i >= len(src) {
			return 0, errRLETrunc
		}
		t := src[i]
		i++
		if t == rleSkip {
			if lastRun < rleRun {
				return 0, errRLEBad // split zero run
			}
			if i >= len(src) {
				return 0, errRLETrunc
			}
			lastRun = int(src[i]) + 1
			i++
			g += lastRun
			continue
		}
		lastRun = rleRun
		m := t &^ rleMore
		off := g * rleGroup
		n := groupLen(size, g)
		if m == 0 || m>>n != 0 {
			return 0, errRLEBad
		}
		if i+bits.OnesCount8(m) > len(src) {
			return 0, errRLETrunc
		}
		for m != 0 {
			j := bits.TrailingZeros8(m)
			m &= m - 1
			c := src[i]
			if c == 0 {
				return 0, errRLELiteral
			}
			dst[off+j] ^= c
			i++
		}
		g++
		if t&rleMore == 0 {
			return i, nil
		}
	}
}
