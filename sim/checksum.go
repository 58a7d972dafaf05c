package sim

import (
	"encoding/binary"
	"hash"
	"hash/fnv"

	"github.com/tickwire/tickwire/deltacomp"
)

// Checksummer computes the 64-bit FNV-1a checksums of desync detection
// over canonical serialisations. It reuses its buffers: one per
// goroutine, zero allocations after the first use.
//
// Snapshot mode checksums the networked state (SnapshotSum: what a client
// can rebuild), so a client compares it with the snapshot it decoded.
// With interest management a client holds only part of the state: checksum
// the same filtered snapshot the client was sent. WorldSum checksums the
// whole simulation (Game.AppendCanonical), for peers that all simulate
// everything and for tests that compare worlds.
type Checksummer struct {
	h   hash.Hash64
	buf []byte
}

// SnapshotSum is FNV-1a over: record size and entity count (uint32 LE
// each), then per entity its id (uint32 LE) and record bytes, in order.
func (c *Checksummer) SnapshotSum(s *deltacomp.Snapshot) uint64 {
	c.init()
	b := binary.LittleEndian.AppendUint32(c.buf[:0], uint32(s.RecordSize))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.IDs)))
	for i, id := range s.IDs {
		if len(b) > 4096 {
			c.h.Write(b)
			b = b[:0]
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
		b = append(b, s.Records[i*s.RecordSize:(i+1)*s.RecordSize]...)
	}
	c.h.Write(b)
	c.buf = b[:0]
	return c.h.Sum64()
}

// WorldSum is FNV-1a over g.AppendCanonical.
func (c *Checksummer) WorldSum(g Game) uint64 {
	c.init()
	c.buf = g.AppendCanonical(c.buf[:0])
	c.h.Write(c.buf)
	return c.h.Sum64()
}

func (c *Checksummer) init() {
	if c.h == nil {
		c.h = fnv.New64a()
		c.buf = make([]byte, 0, 8192)
	}
	c.h.Reset()
}
