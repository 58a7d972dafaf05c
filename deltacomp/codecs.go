package deltacomp

import (
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/tickwire/tickwire/proto"
)

// Codecs compresses and decompresses full snapshots and other large
// payloads (join and resync state, big reliable messages) with lz4 (block
// format), zstd (one frame) or s2 (block format). It keeps the lz4 hash
// table and one zstd encoder and decoder for reuse, so in steady state
// compression and decompression into buffers with enough capacity do not
// allocate (checked by TestCodecsZeroAlloc; the first zstd use allocates
// the coder's tables). The zero value is ready to use. A Codecs is not safe
// for concurrent use: give each goroutine its own.
type Codecs struct {
	lz4  lz4.Compressor
	zenc *zstd.Encoder
	zdec *zstd.Decoder
	raw  []byte // full snapshot scratch
	comp []byte
}

var (
	errCodec       = malformed("codec")
	errDecoded     = malformed("compressed data: decoded size differs from raw length")
	errCorrupt     = malformed("compressed data")
	errRawTooLarge = tooLarge("raw length")
)

func (c *Codecs) encoder() (*zstd.Encoder, error) {
	if c.zenc == nil {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, err
		}
		c.zenc = enc
	}
	return c.zenc, nil
}

func (c *Codecs) decoder() (*zstd.Decoder, error) {
	if c.zdec == nil {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(proto.MaxSnapshotSize), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return nil, err
		}
		c.zdec = dec
	}
	return c.zdec, nil
}

// AppendCompress appends src compressed with codec (proto.CodecNone,
// CodecLZ4, CodecZstd or CodecS2) to dst.
func (c *Codecs) AppendCompress(dst, src []byte, codec proto.Codec) ([]byte, error) {
	if len(src) > proto.MaxSnapshotSize {
		return dst, errRawTooLarge
	}
	switch codec {
	case proto.CodecNone:
		return append(dst, src...), nil
	case proto.CodecLZ4:
		n0 := len(dst)
		dst = grow(dst, lz4.CompressBlockBound(len(src)))
		n, err := c.lz4.CompressBlock(src, dst[n0:cap(dst)])
		if err != nil {
			return dst[:n0], err
		}
		return dst[:n0+n], nil
	case proto.CodecZstd:
		enc, err := c.encoder()
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	case proto.CodecS2:
		n0 := len(dst)
		dst = grow(dst, s2.MaxEncodedLen(len(src)))
		out := s2.Encode(dst[n0:cap(dst)], src)
		return dst[:n0+len(out)], nil
	}
	return dst, errCodec
}

// AppendDecompress appends the decompression of src to dst. rawLen is the
// decoded size the sender declared; it must be at most
// proto.MaxSnapshotSize and the data must decode to exactly that many
// bytes, so a small malicious input cannot make the receiver allocate more
// (no decompression bombs).
func (c *Codecs) AppendDecompress(dst, src []byte, codec proto.Codec, rawLen int) ([]byte, error) {
	if rawLen < 0 || rawLen > proto.MaxSnapshotSize {
		return dst, errRawTooLarge
	}
	n0 := len(dst)
	switch codec {
	case proto.CodecNone:
		if len(src) != rawLen {
			return dst, errDecoded
		}
		return append(dst, src...), nil
	case proto.CodecLZ4:
		if rawLen == 0 {
			// lz4 codes nothing as one zero token; its decoder must not
			// see an empty destination (it faults on a nil one).
			if len(src) != 1 || src[0] != 0 {
				return dst, errCorrupt
			}
			return dst, nil
		}
		dst = grow(dst, rawLen)
		n, err := lz4.UncompressBlock(src, dst[n0:n0+rawLen])
		if err != nil || n != rawLen {
			if err == nil {
				err = errDecoded
			} else {
				err = errCorrupt
			}
			return dst[:n0], err
		}
		return dst[:n0+rawLen], nil
	case proto.CodecZstd:
		dec, err := c.decoder()
		if err != nil {
			return dst, err
		}
		dst = grow(dst, rawLen)
		out, err := dec.DecodeAll(src, dst[:n0:n0+rawLen])
		if err != nil {
			return dst[:n0], errCorrupt
		}
		if len(out) != n0+rawLen {
			return dst[:n0], errDecoded
		}
		return out, nil
	case proto.CodecS2:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return dst, errCorrupt
		}
		if n != rawLen {
			return dst, errDecoded
		}
		dst = grow(dst, rawLen)
		if _, err := s2.Decode(dst[n0:n0+rawLen], src); err != nil {
			return dst[:n0], errCorrupt
		}
		return dst[:n0+rawLen], nil
	}
	return dst, errCodec
}

// grow returns b with room for n more bytes (len unchanged).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n+len(b)/4)
	copy(nb, b)
	return nb
}

// Close releases the zstd coders' resources.
func (c *Codecs) Close() {
	if c.zenc != nil {
		c.zenc.Close()
		c.zenc = nil
	}
	if c.zdec != nil {
		c.zdec.Close()
		c.zdec = nil
	}
}
