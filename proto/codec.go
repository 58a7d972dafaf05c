package proto

// Codec names how a snapshot payload is encoded.
type Codec uint8

const (
	CodecNone   Codec = 0 // raw records
	CodecLZ4    Codec = 1 // pierrec/lz4 block
	CodecZstd   Codec = 2 // klauspost/compress zstd frame
	CodecS2     Codec = 3 // klauspost/compress s2 block
	CodecXORRLE Codec = 4 // deltacomp's XOR patches with run-length coding
	codecEnd    Codec = 5
)

var codecNames = [...]string{
	CodecNone:   "none",
	CodecLZ4:    "lz4",
	CodecZstd:   "zstd",
	CodecS2:     "s2",
	CodecXORRLE: "xor+rle",
}

func (c Codec) String() string {
	if c < codecEnd {
		return codecNames[c]
	}
	return "unknown"
}

// Valid reports whether c is a codec this version defines.
func (c Codec) Valid() bool { return c < codecEnd }

// MaxSnapshotSize bounds the decoded size of a full snapshot, so a
// malicious length cannot make a receiver allocate without limit.
const MaxSnapshotSize = 16 << 20
