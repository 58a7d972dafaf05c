package sim

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// toyGame is a minimal deterministic game for the engine's own tests:
// players on a line move by their input, fire bullets (predicted spawns
// with a "shot" effect) and may disarm everyone else (an action a client
// cannot foresee for another player).
//
// Input: [0] move (int8), [1] action: toyFire, toyDisarm; toyBad is
// rejected by ValidateAction.
type toyGame struct {
	ents    []toyEnt
	spawned []toyEnt
	// strict (set on the server's world only) also rejects toyFire|toyOdd,
	// a rule clients do not know.
	strict bool
}

type toyEnt struct {
	id    proto.NetworkID
	x     int32
	ammo  uint8
	ttl   uint8
	kind  uint8 // 1 player, 2 bullet
	owner uint8
}

const (
	toyFire   = 1
	toyDisarm = 2
	toyOdd    = 0x40
	toyBad    = 0x80

	toyEffectShot   = 1
	toyEffectDisarm = 2
)

var errToyBad = errors.New("toy: bad action")

func toyPlayerID(slot uint16) proto.NetworkID { return proto.MakeNetworkID(0, uint32(slot)) }

func (g *toyGame) Schema() Schema { return Schema{InputSize: 2, ActionBytes: 1, RecordSize: 8} }
func (g *toyGame) Clone() Game    { return &toyGame{ents: slices.Clone(g.ents)} }
func (g *toyGame) CopyFrom(src Game) {
	g.ents = append(g.ents[:0], src.(*toyGame).ents...)
}

func (g *toyGame) insert(e toyEnt) {
	i, _ := slices.BinarySearchFunc(g.ents, e.id, func(e toyEnt, id proto.NetworkID) int {
		return int(int64(e.id) - int64(id))
	})
	g.ents = slices.Insert(g.ents, i, e)
}

func (g *toyGame) Step(t *Tick) {
	g.spawned = g.spawned[:0]
	for i := range g.ents {
		e := &g.ents[i]
		switch e.kind {
		case 1:
			in := t.Input(uint16(e.owner))
			if in == nil {
				continue
			}
			e.x += int32(int8(in.Data[0]))
			act := in.Data[1]
			if act&toyFire != 0 && e.ammo > 0 {
				if id, ok := t.Spawn(uint16(e.owner)); ok {
					e.ammo--
					t.Emit(toyEffectShot, id, uint16(e.owner), [4]int32{e.x})
					g.spawned = append(g.spawned, toyEnt{id: id, x: e.x, ttl: 20, kind: 2, owner: e.owner})
				}
			}
			if act&toyDisarm != 0 {
				for j := range g.ents {
					if o := &g.ents[j]; o.kind == 1 && o.owner != e.owner {
						o.ammo = 0
					}
				}
				t.Emit(toyEffectDisarm, e.id, uint16(e.owner), [4]int32{})
			}
		case 2:
			e.x += 3
			e.ttl--
		}
	}
	g.ents = slices.DeleteFunc(g.ents, func(e toyEnt) bool { return e.kind == 2 && e.ttl == 0 })
	for _, b := range g.spawned {
		g.insert(b)
	}
}

func (g *toyGame) ValidateAction(player uint16, tick uint32, action []byte) error {
	if action[0]&toyBad != 0 || g.strict && action[0]&toyOdd != 0 {
		return errToyBad
	}
	return nil
}

func (g *toyGame) OnPlayerJoin(t *Tick, player uint16) error {
	g.insert(toyEnt{id: toyPlayerID(player), ammo: 100, kind: 1, owner: uint8(player)})
	return nil
}

func (g *toyGame) OnPlayerLeave(t *Tick, player uint16, reason string) {
	g.ents = slices.DeleteFunc(g.ents, func(e toyEnt) bool { return e.owner == uint8(player) })
}

func (g *toyGame) WriteSnapshot(s *deltacomp.Snapshot) {
	var r [8]byte
	for _, e := range g.ents {
		binary.LittleEndian.PutUint32(r[:], uint32(e.x))
		r[4], r[5], r[6], r[7] = e.ammo, e.ttl, e.kind, e.owner
		s.Append(e.id, r[:])
	}
}

func (g *toyGame) ReadSnapshot(s *deltacomp.Snapshot) error {
	if s.RecordSize != 8 {
		return errToyBad
	}
	g.ents = g.ents[:0]
	for i, id := range s.IDs {
		r := s.Record(i)
		e := toyEnt{id: id, x: int32(binary.LittleEndian.Uint32(r)), ammo: r[4], ttl: r[5], kind: r[6], owner: r[7]}
		if e.kind != 1 && e.kind != 2 {
			return errToyBad
		}
		g.ents = append(g.ents, e)
	}
	return nil
}

func (g *toyGame) AppendCanonical(b []byte) []byte {
	var s deltacomp.Snapshot
	s.Reset(0, 8)
	g.WriteSnapshot(&s)
	for i, id := range s.IDs {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
		b = append(b, s.Record(i)...)
	}
	return b
}

func (g *toyGame) AppendBodies(dst []Body) []Body {
	for _, e := range g.ents {
		dst = append(dst, Body{ID: e.id, Shape: ShapeSphere, Pos: Vec3{X: e.x}, Size: Vec3{X: 1}})
	}
	return dst
}
func (g *toyGame) find(id proto.NetworkID) int {
	i, ok := slices.BinarySearchFunc(g.ents, id, func(e toyEnt, id proto.NetworkID) int {
		return int(int64(e.id) - int64(id))
	})
	if !ok {
		return -1
	}
	return i
}

func (g *toyGame) entity(id proto.NetworkID) *toyEnt {
	if i := g.find(id); i >= 0 {
		return &g.ents[i]
	}
	return nil
}
