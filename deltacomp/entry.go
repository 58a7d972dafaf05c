package deltacomp

import "github.com/tickwire/tickwire/proto"

// Entry kinds of a delta frame (see docs/PROTOCOL.md, "XOR+RLE entity
// patches (codec 4)" and "Predicted XOR+RLE (codec 5)"). The kind and
// the id gap share one varint, H; gap = id − previous id − 1, with
// previous id 0 for the first entry. Codec 4:
//
//	kindDefault:  H = gap<<1          (low bit 0)
//	other kinds:  H = gap<<3 | k<<1 | 1, k = kind (1–3)
//
// Codec 5 gives its commonest entry, a patch against the prediction from
// the default baseline and the revision before it, the shortest header:
//
//	kindPredicted:         H = gap<<2         (low bits 00)
//	kindDefault:           H = gap<<2 | 0b10
//	kindPredictedExplicit: H = gap<<3 | 0b001
//	other kinds:           H = gap<<3 | k<<1 | 1, k = kind (1–3)
const (
	kindDefault  = 0 // patch against the frame's default baseline
	kindExplicit = 1 // patch against baseline frame revision − age (age varint follows)
	kindFull     = 2 // the whole record, run-length coded as a patch against zeros
	kindRemoved  = 3 // the entity no longer exists
	// Codec 5 only: patches against a Predictor's extrapolation.
	kindPredicted         = 4 // from the default baseline and the revision before it
	kindPredictedExplicit = 5 // from baseline revision − age and age + step (age, step varints follow)
)

// predicted reports whether kind patches against a prediction.
func predicted(kind uint8) bool { return kind >= kindPredicted }

func entryHeader(codec proto.Codec, gap uint32, kind uint8) uint64 {
	g := uint64(gap)
	if codec == proto.CodecPredictedXORRLE {
		switch kind {
		case kindPredicted:
			return g << 2
		case kindDefault:
			return g<<2 | 0b10
		case kindPredictedExplicit:
			return g<<3 | 0b001
		}
	} else if kind == kindDefault {
		return g << 1
	}
	return g<<3 | uint64(kind)<<1 | 1
}

func entryHeaderLen(codec proto.Codec, prev, id proto.NetworkID, kind uint8) int {
	return varintLen(entryHeader(codec, uint32(id-prev-1), kind))
}

// parseEntryHeader splits H into gap and kind.
func parseEntryHeader(codec proto.Codec, h uint64) (gap uint64, kind uint8, ok bool) {
	if codec == proto.CodecPredictedXORRLE {
		switch h & 0b11 {
		case 0b00:
			return h >> 2, kindPredicted, true
		case 0b10:
			return h >> 2, kindDefault, true
		}
		if kind = uint8(h>>1) & 3; kind == 0 {
			kind = kindPredictedExplicit
		}
		return h >> 3, kind, true
	}
	if h&1 == 0 {
		return h >> 1, kindDefault, true
	}
	kind = uint8(h>>1) & 3
	return h >> 3, kind, kind != kindDefault
}
