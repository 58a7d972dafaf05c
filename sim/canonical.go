package sim

import (
	"encoding/binary"

	"github.com/tickwire/tickwire/deltacomp"
)

// SnapshotCanonical appends a canonical serialisation of g built from
// what its WriteSnapshot writes: every entity's id (4 bytes, little
// endian) followed by its record, in id order. It is a complete
// AppendCanonical for a game whose networked state is its whole
// simulation state — what the networking contract asks for anyway (see
// Game) — so a game can implement AppendCanonical with one line:
//
//	func (g *MyGame) AppendCanonical(b []byte) []byte { return sim.SnapshotCanonical(g, b) }
//
// A game that keeps state it does not network (a random generator, a
// cooldown) must add it by hand. It allocates a snapshot per call.
func SnapshotCanonical(g Game, b []byte) []byte {
	var s deltacomp.Snapshot
	s.Reset(0, g.Schema().RecordSize)
	g.WriteSnapshot(&s)
	for i, id := range s.IDs {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
		b = append(b, s.Record(i)...)
	}
	return b
}
