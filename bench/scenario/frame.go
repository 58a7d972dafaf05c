package scenario

import (
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
)

// Frame is one tick of a scenario: the snapshot and, aligned with its
// entities, their positions and kinds.
type Frame struct {
	Snap deltacomp.Snapshot
	Pos  []interest.Vec3
	Kind []uint8
}

func (f *Frame) reset(tick uint32, recordSize int) {
	f.Snap.Reset(tick, recordSize)
	f.Pos, f.Kind = f.Pos[:0], f.Kind[:0]
}

// Scenario produces frames, one per tick.
type Scenario interface {
	Name() string
	// RecordSize is the size of every record.
	RecordSize() int
	// Next fills f with the next tick; false when a finite scenario ended.
	Next(f *Frame) bool
}

// Entity kinds used by the scenarios (interest.Kind indexes).
const (
	KindCube       = 0
	KindPlayer     = 1
	KindProjectile = 2
	KindNPC        = 3
)
