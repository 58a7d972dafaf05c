package sim

import (
	"encoding/binary"

	"github.com/tickwire/tickwire/deltacomp"
)

// Checksummer computes the 64-bit FNV-1a checksums of desync detection.
// WorldSum reuses a buffer: keep one Checksummer per goroutine; nothing
// allocates after WorldSum's first use.
//
// Snapshot mode checks what a client rebuilt from the wire, entity by
// entity, not the whole world: EntitiesSum covers the entities a snapshot
// delta carried (their ids and records at the delta's tick) and is the sum
// of the checksum frame (docs/PROTOCOL.md, frame 0x09). With interest
// management and a packet budget no client holds a whole tick's state, so
// the host sums, for each connection, the entities of the delta it wrote
// for it, and the client sums the same entities of its replica after
// applying that delta. SnapshotSum is the same sum over every entity of a
// snapshot (what Server.Checksum reports). WorldSum checksums the whole
// simulation (Game.AppendCanonical), for peers that all simulate
// everything and for tests that compare worlds.
type Checksummer struct {
	buf []byte
}

// FNV-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// EntitiesSum is FNV-1a over, for each index i in sel in that order, the
// id of s's entity i (uint32 little-endian) and its record.
func (c *Checksummer) EntitiesSum(s *deltacomp.Snapshot, sel []int32) uint64 {
	h := uint64(fnvOffset)
	for _, i := range sel {
		h = sumEntity(h, s, int(i))
	}
	return h
}

// SnapshotSum is EntitiesSum over every entity of s, in order.
func (c *Checksummer) SnapshotSum(s *deltacomp.Snapshot) uint64 {
	h := uint64(fnvOffset)
	for i := range s.IDs {
		h = sumEntity(h, s, i)
	}
	return h
}

// WorldSum is FNV-1a over g.AppendCanonical.
func (c *Checksummer) WorldSum(g World) uint64 {
	c.buf = g.AppendCanonical(c.buf[:0])
	return fnv1a(fnvOffset, c.buf)
}

func sumEntity(h uint64, s *deltacomp.Snapshot, i int) uint64 {
	var id [4]byte
	binary.LittleEndian.PutUint32(id[:], uint32(s.IDs[i]))
	return fnv1a(fnv1a(h, id[:]), s.Record(i))
}

func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}
