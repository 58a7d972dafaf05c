package sim

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// testGame is a tiny deterministic Game for the engine's tests.
//
// Input (4 bytes): dx int8, dy int8, then two action bytes. Action
// actSpawn spawns action[1] projectiles for the player (Tick.Spawn);
// actBad is rejected by ValidateAction with errBadAction.
//
// Entities: one per joined player (id tgPlayerID(slot)) that moves by its
// input, plus spawned projectiles that stand still. Record: x, y int32 LE
// and owner uint16 LE.
type testGame struct {
	ents []tgEntity
	// hooks and observations shared by the clones of one test.
	t *tgTest
}

type tgEntity struct {
	id    proto.NetworkID
	x, y  int32
	owner uint16
}

const (
	tgInputSize  = 4
	tgRecordSize = 10
	actSpawn     = 1
	actBad       = 0xba
)

var errBadAction = errors.New("bad action")

// tgTest holds a test's knobs and what the game observed.
type tgTest struct {
	// joinErr makes OnPlayerJoin add the entity, move every other entity
	// and then fail with it; joinPanic makes it panic instead.
	joinErr   error
	joinPanic bool
	// duringHook runs inside OnPlayerJoin / OnPlayerLeave.
	duringHook func()
	// rewindFor: Step calls Tick.Rewind for this player (0: none).
	rewindFor uint16

	record   bool // log inputs and messages of each step
	steps    []tgStep
	leaves   []string
	rewound  []Body
	rewind   RewindInfo
	rewindAt uint32
}

type tgStep struct {
	tick   uint32
	inputs []tgInput
	msgs   []Message
}

type tgInput struct {
	player            uint16
	data              []byte
	missing, rejected bool
}

func tgPlayerID(slot uint16) proto.NetworkID { return proto.MakeNetworkID(0, uint32(slot)) }

func newTestGame(t *tgTest) *testGame { return &testGame{t: t} }

func tgInputBytes(dx, dy int8, action, arg byte) []byte {
	return []byte{byte(dx), byte(dy), action, arg}
}

func (g *testGame) Schema() Schema {
	return Schema{InputSize: tgInputSize, ActionBytes: 2, RecordSize: tgRecordSize}
}

func (g *testGame) Clone() Game {
	return &testGame{ents: slices.Clone(g.ents), t: g.t}
}

func (g *testGame) CopyFrom(src Game) { g.ents = append(g.ents[:0], src.(*testGame).ents...) }

func (g *testGame) find(id proto.NetworkID) int {
	i, ok := slices.BinarySearchFunc(g.ents, id, func(e tgEntity, id proto.NetworkID) int {
		return int(int64(e.id) - int64(id))
	})
	if !ok {
		return -1
	}
	return i
}

func (g *testGame) insert(e tgEntity) {
	i, _ := slices.BinarySearchFunc(g.ents, e.id, func(e tgEntity, id proto.NetworkID) int {
		return int(int64(e.id) - int64(id))
	})
	g.ents = slices.Insert(g.ents, i, e)
}

func (g *testGame) Step(t *Tick) {
	if g.t.record {
		st := tgStep{tick: t.Tick}
		for _, in := range t.Inputs {
			st.inputs = append(st.inputs, tgInput{player: in.Player, data: slices.Clone(in.Data), missing: in.Missing, rejected: in.Rejected})
		}
		for _, m := range t.Messages {
			m.Data = slices.Clone(m.Data)
			st.msgs = append(st.msgs, m)
		}
		g.t.steps = append(g.t.steps, st)
	}
	if p := g.t.rewindFor; p != 0 {
		bodies, info := t.Rewind(p)
		g.t.rewound = append(g.t.rewound[:0], bodies...)
		g.t.rewind, g.t.rewindAt = info, t.Tick
	}
	for _, in := range t.Inputs {
		if i := g.find(tgPlayerID(in.Player)); i >= 0 {
			g.ents[i].x += int32(int8(in.Data[0]))
			g.ents[i].y += int32(int8(in.Data[1]))
		}
		if in.Data[2] == actSpawn {
			for range in.Data[3] {
				id, ok := t.Spawn(in.Player)
				if !ok {
					break
				}
				g.insert(tgEntity{id: id, owner: in.Player})
			}
		}
	}
}

func (g *testGame) ValidateAction(player uint16, tick uint32, action []byte) error {
	if action[0] == actBad {
		return errBadAction
	}
	return nil
}

func (g *testGame) OnPlayerJoin(t *Tick, player uint16) error {
	if g.t.duringHook != nil {
		g.t.duringHook()
	}
	g.insert(tgEntity{id: tgPlayerID(player), x: int32(player) * 100, owner: player})
	if g.t.joinErr != nil || g.t.joinPanic {
		for i := range g.ents {
			g.ents[i].x += 7 // damage the world before failing
		}
		if g.t.joinPanic {
			panic("join hook exploded")
		}
		return g.t.joinErr
	}
	return nil
}

func (g *testGame) OnPlayerLeave(t *Tick, player uint16, reason string) {
	if g.t.duringHook != nil {
		g.t.duringHook()
	}
	g.t.leaves = append(g.t.leaves, reason)
	g.ents = slices.DeleteFunc(g.ents, func(e tgEntity) bool { return e.owner == player })
}

func (g *testGame) WriteSnapshot(s *deltacomp.Snapshot) {
	var r [tgRecordSize]byte
	for _, e := range g.ents {
		binary.LittleEndian.PutUint32(r[0:], uint32(e.x))
		binary.LittleEndian.PutUint32(r[4:], uint32(e.y))
		binary.LittleEndian.PutUint16(r[8:], e.owner)
		s.Append(e.id, r[:])
	}
}

func (g *testGame) ReadSnapshot(s *deltacomp.Snapshot) error {
	if s.RecordSize != tgRecordSize {
		return errors.New("testgame: record size")
	}
	g.ents = g.ents[:0]
	for i, id := range s.IDs {
		r := s.Record(i)
		g.ents = append(g.ents, tgEntity{id: id,
			x: int32(binary.LittleEndian.Uint32(r[0:])), y: int32(binary.LittleEndian.Uint32(r[4:])),
			owner: binary.LittleEndian.Uint16(r[8:])})
	}
	return nil
}

func (g *testGame) AppendCanonical(b []byte) []byte {
	for _, e := range g.ents {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.id))
		b = binary.LittleEndian.AppendUint32(b, uint32(e.x))
		b = binary.LittleEndian.AppendUint32(b, uint32(e.y))
		b = binary.LittleEndian.AppendUint16(b, e.owner)
	}
	return b
}

func (g *testGame) AppendBodies(dst []Body) []Body {
	for _, e := range g.ents {
		dst = append(dst, Body{ID: e.id, Shape: ShapeSphere, Pos: Vec3{X: e.x, Y: e.y}, Size: Vec3{X: 10}})
	}
	return dst
}
