package deltacomp

import "github.com/tickwire/tickwire/proto"

// FullCodec is how full snapshots (joins, resyncs, committed states)
// are compressed: a configuration value, the zero value being zstd.
type FullCodec uint8

// Full snapshot codecs.
const (
	FullZstd FullCodec = iota // klauspost/compress zstd: smallest (default)
	FullLZ4                   // pierrec/lz4: fastest to compress
	FullS2                    // klauspost/compress s2
	FullRaw                   // uncompressed records
)

// Codec is the wire codec c names, or false when c names none.
func (c FullCodec) Codec() (proto.Codec, bool) {
	switch c {
	case FullZstd:
		return proto.CodecZstd, true
	case FullLZ4:
		return proto.CodecLZ4, true
	case FullS2:
		return proto.CodecS2, true
	case FullRaw:
		return proto.CodecNone, true
	}
	return 0, false
}
