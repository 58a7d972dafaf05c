package proto

// Codec names how a snapshot payload is encoded.
type Codec uint8

const (
	CodecNone   Codec = 0 // raw records
	CodecLZ4    Codec = 1 // pierrec/lz4 block
	CodecZstd   Codec = 2 // klauspost/compress zstd frame
	CodecS2     Codec = 3 // klauspost/compress s2 block
	CodecXORRLE Codec = 4 // deltacomp's XOR patches with run-length coding
	// CodecPredictedXORRLE is codec 4 whose patches may be XORed against
	// a prediction from two baselines (deltacomp.Predictor); snapshot
	// delta frames only.
	CodecPredictedXORRLE Codec = 5
	codecEnd             Codec = 6
)

var codecNames = [...]string{
	CodecNone:            "none",
	CodecLZ4:             "lz4",
	CodecZstd:            "zstd",
	CodecS2:              "s2",
	CodecXORRLE:          "xor+rle",
	CodecPredictedXORRLE: "predicted xor+rle",
}

func (c Codec) String() string {
	if c < codecEnd {
		return codecNames[c]
	}
	return "unknown"
}

// Valid reports whether c is a codec this version defines.
func (c Codec) Valid() bool { return c < codecEnd }

// Patches reports whether c is one of deltacomp's patch codecs (4 and 5),
// which code state against what the receiver holds rather than compress
// it: a state upload cannot use them, and a full snapshot only codec 4
// (its records as patches against zeros).
func (c Codec) Patches() bool { return c == CodecXORRLE || c == CodecPredictedXORRLE }

// MaxSnapshotSize bounds the decoded size of a full snapshot, so a
// malicious length cannot make a receiver allocate without limit.
const MaxSnapshotSize = 16 << 20
