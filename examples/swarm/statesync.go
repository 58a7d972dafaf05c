package swarm

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// StateSync is the swarm world played in state sync (a sim.Game, for
// game.Host and game.Client): the same units and rules, networked as a
// snapshot record per unit. It exists for the bandwidth comparison of
// the two modes (bench/, TestSwarmBandwidth); the game itself is a
// commits-mode game, and Game needs none of this.
type StateSync struct {
	*Game
}

var (
	_ sim.Game         = (*StateSync)(nil)
	_ sim.EntityKinder = (*StateSync)(nil)
	_ sim.RecordFields = (*StateSync)(nil)
)

// RecordSize is a unit's snapshot record size in bytes.
const RecordSize = 6

// NewStateSync returns a world of units units at their teams' bases.
func NewStateSync(units int) (*StateSync, error) {
	g, err := NewGame(units)
	if err != nil {
		return nil, err
	}
	return &StateSync{g}, nil
}

// Schema is Game's with the records' size.
func (s *StateSync) Schema() sim.Schema {
	sc := s.Game.Schema()
	sc.RecordSize = RecordSize
	return sc
}

// Clone returns an independent copy.
func (s *StateSync) Clone() sim.Game { return &StateSync{s.Game.Clone().(*Game)} }

// CopyFrom makes s equal to src, reusing memory.
func (s *StateSync) CopyFrom(src sim.Game) { s.Game.copyFrom(src.(*StateSync).Game) }

// UnitID is unit i's NetworkID.
func UnitID(i int) proto.NetworkID { return proto.MakeNetworkID(0, uint32(i+1)) }

// WriteSnapshot writes every unit: x, y (uint16 sixteenths), team<<4 |
// group, HP. Targets are not networked: a state-sync client shows the
// units, the server alone steps them.
func (s *StateSync) WriteSnapshot(snap *deltacomp.Snapshot) {
	var r [RecordSize]byte
	for i := range s.units {
		u := &s.units[i]
		binary.LittleEndian.PutUint16(r[0:], uint16(u.X))
		binary.LittleEndian.PutUint16(r[2:], uint16(u.Y))
		r[4] = u.Team<<4 | u.Group
		r[5] = u.HP
		snap.Append(UnitID(i), r[:])
	}
}

// AppendRecordFields names a unit record's fields (sim.RecordFields):
// x, y, team, group, hp. A record of another size has no fields.
func (s *StateSync) AppendRecordFields(dst []sim.Field, r []byte) []sim.Field {
	if len(r) != RecordSize {
		return dst
	}
	return append(dst, sim.Field{Name: "x", Value: int64(binary.LittleEndian.Uint16(r[0:]))},
		sim.Field{Name: "y", Value: int64(binary.LittleEndian.Uint16(r[2:]))},
		sim.Field{Name: "team", Value: int64(r[4] >> 4)}, sim.Field{Name: "group", Value: int64(r[4] & 15)},
		sim.Field{Name: "hp", Value: int64(r[5])})
}

var errRecords = errors.New("swarm: snapshot records malformed")

// ReadSnapshot rebuilds the units from records: ids 1..n in order.
func (s *StateSync) ReadSnapshot(snap *deltacomp.Snapshot) error {
	n := snap.Len()
	if n > MaxUnits || snap.RecordSize != RecordSize {
		return errRecords
	}
	for i := range n {
		r := snap.Record(i)
		if snap.IDs[i] != UnitID(i) || r[4]>>4 >= Teams || r[4]&15 >= Groups || r[5] == 0 || r[5] > MaxHP {
			return errRecords
		}
	}
	s.units = slices.Grow(s.units[:0], n)[:n]
	for i := range n {
		r := snap.Record(i)
		s.units[i] = Unit{X: int32(binary.LittleEndian.Uint16(r[0:])), Y: int32(binary.LittleEndian.Uint16(r[2:])),
			Team: r[4] >> 4, Group: r[4] & 15, HP: r[5]}
	}
	s.tick = snap.Tick
	return nil
}

// AppendBodies appends a small sphere per unit.
func (s *StateSync) AppendBodies(dst []sim.Body) []sim.Body {
	for i := range s.units {
		u := &s.units[i]
		dst = append(dst, sim.Body{ID: UnitID(i), Shape: sim.ShapeSphere, Pos: sim.Vec3{X: u.X, Y: u.Y}, Size: sim.Vec3{X: Sub / 2}})
	}
	return dst
}

// EntityKind is a unit's team (sim.EntityKinder).
func (s *StateSync) EntityKind(id proto.NetworkID) uint8 {
	i := int(uint32(id)&proto.MaxIndex) - 1
	if i < 0 || i >= len(s.units) {
		return 0
	}
	return s.units[i].Team
}

// View is where a player looks from: the centroid of its team's units
// (a game.Config.View).
func View(world sim.Game, player uint16) (interest.Vec3, bool) {
	s, ok := world.(*StateSync)
	if !ok || player == 0 {
		return interest.Vec3{}, false
	}
	team := TeamOf(player)
	var sx, sy, n int64
	for i := int(team); i < len(s.units); i += Teams {
		sx += int64(s.units[i].X)
		sy += int64(s.units[i].Y)
		n++
	}
	if n == 0 {
		return interest.Vec3{}, false
	}
	return interest.Vec3{X: float32(sx / n), Y: float32(sy / n)}, true
}
