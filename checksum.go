package tickwire

import (
	"encoding/binary"

	"github.com/tickwire/tickwire/deltacomp"
)

// FNV-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// SumEntities is the checksum of desync detection: 64-bit FNV-1a over
// the id (uint32 little-endian) and record of the entities of s at the
// indices sel, in that order. The server sends it, every
// ChecksumInterval ticks, for the entities of the snapshot delta it just
// wrote; the client computes it over the same entities of its replica
// after applying that delta (sumReplica), so any divergence in what the
// client rebuilt (a wrong baseline, a bad patch) shows at once. It
// allocates nothing.
func SumEntities(s *deltacomp.Snapshot, sel []int32) uint64 {
	h := uint64(fnvOffset)
	var id [4]byte
	for _, i := range sel {
		binary.LittleEndian.PutUint32(id[:], uint32(s.IDs[i]))
		h = fnvBytes(h, id[:])
		h = fnvBytes(h, s.Record(int(i)))
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}
