package deltacomp

import "github.com/tickwire/tickwire/proto"

// Entry kinds of a codec-4 delta frame (see docs/PROTOCOL.md, "XOR+RLE
// entity patches (codec 4)"). The kind and the id gap share one varint:
//
//	kindDefault:  H = gap<<1          (low bit 0)
//	other kinds:  H = gap<<3 | k<<1 | 1
//
// gap = id − previous id − 1, with previous id 0 for the first entry.
const (
	kindDefault  = 0 // patch against the frame's default baseline
	kindExplicit = 1 // patch against baseline frame revision − age (age varint follows)
	kindFull     = 2 // the whole record, run-length coded as a patch against zeros
	kindRemoved  = 3 // the entity no longer exists
)

func entryHeader(gap uint32, kind uint8) uint64 {
	if kind == kindDefault {
		return uint64(gap) << 1
	}
	return uint64(gap)<<3 | uint64(kind)<<1 | 1
}

func entryHeaderLen(prev, id proto.NetworkID, kind uint8) int {
	return varintLen(entryHeader(uint32(id-prev-1), kind))
}

// parseEntryHeader splits H into gap and kind.
func parseEntryHeader(h uint64) (gap uint64, kind uint8, ok bool) {
	if h&1 == 0 {
		return h >> 1, kindDefault, true
	}
	kind = uint8(h>>1) & 3
	return h >> 3, kind, kind != kindDefault
}
