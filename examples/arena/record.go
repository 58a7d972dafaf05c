package arena

import (
	"errors"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// RecordSize is the size of an entity's networked record.
//
// Layout, chosen so that the XOR of two records of a moving entity is
// mostly zero: the bytes that change every tick (low bytes of the
// position) come first and together, the ones that change rarely after.
//
//	0  x low     1  y low     2  x high    3  y high
//	4  vx (i8)   5  vy (i8)   6  aim       7  hp
//	8  timer     9  kind      10 owner (u16)
//	12 spawn counter (u24)                 15 score
const RecordSize = 16

// AppendSnapshot appends the world's entities to s in id order (they are
// kept sorted). s must have been reset first with the world's tick and
// RecordSize, as the engine does before it calls sim.Game.WriteSnapshot.
func (w *World) AppendSnapshot(s *deltacomp.Snapshot) {
	var r [RecordSize]byte
	for i := range w.Entities {
		encodeRecord(&r, &w.Entities[i])
		s.Append(w.Entities[i].ID, r[:])
	}
}

func encodeRecord(r *[RecordSize]byte, e *Entity) {
	r[0], r[1], r[2], r[3] = byte(e.X), byte(e.Y), byte(e.X>>8), byte(e.Y>>8)
	r[4], r[5], r[6], r[7] = byte(int8(e.VX)), byte(int8(e.VY)), e.Aim, e.HP
	r[8], r[9], r[10], r[11] = e.Timer, byte(e.Kind), byte(e.Owner), byte(e.Owner>>8)
	r[12], r[13], r[14], r[15] = byte(e.Spawn), byte(e.Spawn>>8), byte(e.Spawn>>16), e.Score
}

// ErrBadRecord reports a snapshot record that no arena server writes.
var ErrBadRecord = errors.New("arena: bad entity record")

func decodeRecord(id proto.NetworkID, r []byte) (Entity, error) {
	if len(r) < RecordSize {
		return Entity{}, ErrBadRecord
	}
	e := rawRecord(id, (*[RecordSize]byte)(r))
	if e.Kind < KindPlayer || e.Kind > KindNPC || e.Spawn > proto.MaxIndex {
		return Entity{}, ErrBadRecord
	}
	return e, nil
}

// rawRecord decodes a record's fields, whatever their values.
func rawRecord(id proto.NetworkID, r *[RecordSize]byte) Entity {
	return Entity{
		ID:    id,
		X:     int32(r[0]) | int32(r[2])<<8,
		Y:     int32(r[1]) | int32(r[3])<<8,
		VX:    int32(int8(r[4])),
		VY:    int32(int8(r[5])),
		Aim:   r[6],
		HP:    r[7],
		Timer: r[8],
		Kind:  Kind(r[9]),
		Owner: uint16(r[10]) | uint16(r[11])<<8,
		Spawn: uint32(r[12]) | uint32(r[13])<<8 | uint32(r[14])<<16,
		Score: r[15],
	}
}

// AppendRecordFields names a record's fields (sim.RecordFields), for
// tools that compare two states of a game: x, y, vx, vy, aim, hp,
// timer, kind, owner, spawn, score, as the layout above stores them.
// A record of another size has no fields.
func (g *Game) AppendRecordFields(dst []sim.Field, record []byte) []sim.Field {
	if len(record) != RecordSize {
		return dst
	}
	e := rawRecord(0, (*[RecordSize]byte)(record))
	return append(dst,
		sim.Field{Name: "x", Value: int64(e.X)}, sim.Field{Name: "y", Value: int64(e.Y)},
		sim.Field{Name: "vx", Value: int64(e.VX)}, sim.Field{Name: "vy", Value: int64(e.VY)},
		sim.Field{Name: "aim", Value: int64(e.Aim)}, sim.Field{Name: "hp", Value: int64(e.HP)},
		sim.Field{Name: "timer", Value: int64(e.Timer)}, sim.Field{Name: "kind", Value: int64(e.Kind)},
		sim.Field{Name: "owner", Value: int64(e.Owner)}, sim.Field{Name: "spawn", Value: int64(e.Spawn)},
		sim.Field{Name: "score", Value: int64(e.Score)})
}

// SetSnapshot replaces the world with the state in s.
func (w *World) SetSnapshot(s *deltacomp.Snapshot) error {
	if s.RecordSize != RecordSize {
		return ErrBadRecord
	}
	w.Tick = s.Tick
	w.Entities = w.Entities[:0]
	for i := range s.Len() {
		e, err := decodeRecord(s.IDs[i], s.Record(i))
		if err != nil {
			return err
		}
		w.Entities = append(w.Entities, e)
	}
	return nil
}
