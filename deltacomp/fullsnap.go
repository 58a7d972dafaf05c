package deltacomp

import (
	"github.com/tickwire/tickwire/proto"
)

// Full snapshots (proto.FullSnapshotFrame) carry a whole Snapshot. Before
// compression their data ("raw") is:
//
//	record size  varint
//	count        varint
//	ids          count varints: id − previous id − 1 (previous 0 at first)
//	records      count × record size bytes; with codec 4 (xor+rle) instead
//	             each record as a group-mask RLE patch against zeros
//
// Codecs none, lz4, zstd and s2 compress the raw bytes; codec 4 is the raw
// bytes themselves with RLE records.

var (
	errFullRaw   = malformed("full snapshot data")
	errFullTrunc = truncated("full snapshot data")
	errFullIDs   = malformed("full snapshot ids")
	errFullSize  = tooLarge("full snapshot")
)

// AppendFullSnapshot appends a full snapshot frame holding s at revision
// (cause says why: join, resync, host migration) with the data encoded by
// codec. It reuses c's buffers.
func (c *Codecs) AppendFullSnapshot(b []byte, s *Snapshot, cause proto.SnapshotCause, revision uint32, codec proto.Codec) ([]byte, error) {
	if err := s.Check(); err != nil {
		return b, err
	}
	raw := appendVarint(c.raw[:0], uint64(s.RecordSize))
	raw = appendVarint(raw, uint64(s.Len()))
	var prev proto.NetworkID
	for _, id := range s.IDs {
		raw = appendVarint(raw, uint64(id-prev-1))
		prev = id
	}
	if codec == proto.CodecXORRLE {
		for i := range s.IDs {
			raw = AppendPatch(raw, s.Record(i))
		}
	} else {
		raw = append(raw, s.Records...)
	}
	c.raw = raw
	if len(raw) > proto.MaxSnapshotSize {
		return b, errFullSize
	}
	data := raw
	if codec != proto.CodecXORRLE {
		var err error
		c.comp, err = c.AppendCompress(c.comp[:0], raw, codec)
		if err != nil {
			return b, err
		}
		data = c.comp
	}
	f := proto.FullSnapshotFrame{Cause: cause, Tick: s.Tick, Revision: revision, Codec: codec, RawLen: uint32(len(raw)), Data: data}
	return f.Append(b)
}

// DecodeFullSnapshot decodes the state a full snapshot frame carries into
// dst (reusing its buffers). Garbage gives an error; the decoded size is
// bounded by proto.MaxSnapshotSize whatever the frame claims.
func (c *Codecs) DecodeFullSnapshot(dst *Snapshot, f *proto.FullSnapshotFrame) error {
	raw := f.Data
	if f.Codec != proto.CodecXORRLE {
		var err error
		c.raw, err = c.AppendDecompress(c.raw[:0], f.Data, f.Codec, int(f.RawLen))
		if err != nil {
			return err
		}
		raw = c.raw
	} else if int(f.RawLen) != len(raw) {
		return errDecoded
	}
	rs, n := parseVarint(raw)
	if n <= 0 {
		return errFullTrunc
	}
	raw = raw[n:]
	count, n := parseVarint(raw)
	if n <= 0 {
		return errFullTrunc
	}
	raw = raw[n:]
	if rs == 0 || rs > MaxRecordSize {
		return errFullRaw
	}
	// Every id takes at least one byte and every record at least one, so
	// count is bounded by the data left; the records' total is bounded by
	// MaxSnapshotSize.
	if count > uint64(len(raw)) || count*rs > proto.MaxSnapshotSize {
		return errFullSize
	}
	dst.Reset(f.Tick, int(rs))
	var prev uint64
	for k := uint64(0); k < count; k++ {
		gap, n := parseVarint(raw)
		if n <= 0 {
			return errFullTrunc
		}
		raw = raw[n:]
		id := prev + gap + 1
		if id > 0xffffffff {
			return errFullIDs
		}
		dst.IDs = append(dst.IDs, proto.NetworkID(id))
		prev = id
	}
	if f.Codec == proto.CodecXORRLE {
		dst.Records = resizeBytes(dst.Records, int(count*rs))
		clear(dst.Records)
		for i := range dst.IDs {
			n, err := ApplyPatch(dst.Record(i), raw)
			if err != nil {
				return err
			}
			raw = raw[n:]
		}
	} else {
		if uint64(len(raw)) < count*rs {
			return errFullTrunc
		}
		dst.Records = append(dst.Records[:0], raw[:count*rs]...)
		raw = raw[count*rs:]
	}
	if len(raw) != 0 {
		return errFullRaw
	}
	return nil
}
