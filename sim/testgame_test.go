package sim

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// testGame is the tiny deterministic Game of the engine's own tests, the
// server's and the client's: players on a plane move by their input, fire
// bullets (predicted spawns with a "shot" effect) and may disarm everyone
// else (an action a client cannot foresee for another player).
//
// Input (4 bytes): dx int8, dy int8, then two action bytes: the flags
// (actFire, actDisarm; actBad is always rejected by ValidateAction with
// errBadAction, actOdd only by a strict world) and a count: actFire spawns
// that many bullets (Tick.Spawn), one round of ammo each.
//
// Entities: one player per joined slot (id tgPlayerID(slot), at x = 100 ×
// slot with 100 rounds) and bullets that fly +3 in x for 20 ticks. Record
// (tgRecordSize bytes): x, y int32 LE, owner uint16 LE, ammo, ttl, kind.
type testGame struct {
	ents    []tgEntity
	spawned []tgEntity
	// strict (set on the server's world only; Clone drops it) also
	// rejects actOdd, a rule clients do not know.
	strict bool
	// hooks and observations shared by the clones of one test (nil:
	// none).
	t *tgTest
}

type tgEntity struct {
	id        proto.NetworkID
	x, y      int32
	owner     uint16
	ammo, ttl uint8
	kind      uint8 // tgPlayer or tgBullet
}

const (
	tgInputSize  = 4
	tgRecordSize = 13

	tgPlayer = 1
	tgBullet = 2

	actFire   = 0x01
	actDisarm = 0x02
	actOdd    = 0x40
	actBad    = 0x80

	tgEffectShot   = 1
	tgEffectDisarm = 2
)

var (
	errBadAction = errors.New("bad action")
	errBadRecord = errors.New("testgame: bad record")
)

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

func tgInputBytes(dx, dy int8, action, count byte) []byte {
	return []byte{byte(dx), byte(dy), action, count}
}

// tgOwn tells the entities of player slot: its player and its bullets.
func tgOwn(slot uint16) func(proto.NetworkID) bool {
	return func(id proto.NetworkID) bool { return id == tgPlayerID(slot) || id.Spawner() == slot }
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

func (g *testGame) entity(id proto.NetworkID) *tgEntity {
	if i := g.find(id); i >= 0 {
		return &g.ents[i]
	}
	return nil
}

func (g *testGame) insert(e tgEntity) {
	i, _ := slices.BinarySearchFunc(g.ents, e.id, func(e tgEntity, id proto.NetworkID) int {
		return int(int64(e.id) - int64(id))
	})
	g.ents = slices.Insert(g.ents, i, e)
}

func (g *testGame) Step(t *Tick) {
	if h := g.t; h != nil && h.record {
		st := tgStep{tick: t.Tick}
		for _, in := range t.Inputs {
			st.inputs = append(st.inputs, tgInput{player: in.Player, data: slices.Clone(in.Data), missing: in.Missing, rejected: in.Rejected})
		}
		for _, m := range t.Messages {
			m.Data = slices.Clone(m.Data)
			st.msgs = append(st.msgs, m)
		}
		h.steps = append(h.steps, st)
	}
	if h := g.t; h != nil && h.rewindFor != 0 {
		bodies, info := t.Rewind(h.rewindFor)
		h.rewound = append(h.rewound[:0], bodies...)
		h.rewind, h.rewindAt = info, t.Tick
	}
	g.spawned = g.spawned[:0]
	for i := range g.ents {
		e := &g.ents[i]
		if e.kind == tgBullet {
			e.x += 3
			e.ttl--
			continue
		}
		in := t.Input(e.owner)
		if in == nil {
			continue
		}
		e.x += int32(int8(in.Data[0]))
		e.y += int32(int8(in.Data[1]))
		act := in.Data[2]
		if act&actFire != 0 {
			for range in.Data[3] {
				if e.ammo == 0 {
					break
				}
				id, ok := t.Spawn(e.owner)
				if !ok {
					break
				}
				e.ammo--
				t.Emit(tgEffectShot, id, e.owner, [4]int32{e.x, e.y})
				g.spawned = append(g.spawned, tgEntity{id: id, x: e.x, y: e.y, owner: e.owner, ttl: 20, kind: tgBullet})
			}
		}
		if act&actDisarm != 0 {
			for j := range g.ents {
				if o := &g.ents[j]; o.kind == tgPlayer && o.owner != e.owner {
					o.ammo = 0
				}
			}
			t.Emit(tgEffectDisarm, e.id, e.owner, [4]int32{})
		}
	}
	g.ents = slices.DeleteFunc(g.ents, func(e tgEntity) bool { return e.kind == tgBullet && e.ttl == 0 })
	for _, b := range g.spawned {
		g.insert(b)
	}
}

func (g *testGame) ValidateAction(player uint16, tick uint32, action []byte) error {
	if action[0]&actBad != 0 || g.strict && action[0]&actOdd != 0 {
		return errBadAction
	}
	return nil
}

func (g *testGame) OnPlayerJoin(t *Tick, player uint16) error {
	h := g.t
	if h != nil && h.duringHook != nil {
		h.duringHook()
	}
	g.insert(tgEntity{id: tgPlayerID(player), x: int32(player) * 100, owner: player, ammo: 100, kind: tgPlayer})
	if h != nil && (h.joinErr != nil || h.joinPanic) {
		for i := range g.ents {
			g.ents[i].x += 7 // damage the world before failing
		}
		if h.joinPanic {
			panic("join hook exploded")
		}
		return h.joinErr
	}
	return nil
}

func (g *testGame) OnPlayerLeave(t *Tick, player uint16, reason string) {
	if h := g.t; h != nil {
		if h.duringHook != nil {
			h.duringHook()
		}
		h.leaves = append(h.leaves, reason)
	}
	g.ents = slices.DeleteFunc(g.ents, func(e tgEntity) bool { return e.owner == player })
}

// appendRecord appends e's record.
func appendRecord(b []byte, e *tgEntity) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(e.x))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.y))
	b = binary.LittleEndian.AppendUint16(b, e.owner)
	return append(b, e.ammo, e.ttl, e.kind)
}

func (g *testGame) WriteSnapshot(s *deltacomp.Snapshot) {
	var r [tgRecordSize]byte
	for i := range g.ents {
		s.Append(g.ents[i].id, appendRecord(r[:0], &g.ents[i]))
	}
}

func (g *testGame) ReadSnapshot(s *deltacomp.Snapshot) error {
	if s.RecordSize != tgRecordSize {
		return errBadRecord
	}
	g.ents = g.ents[:0]
	for i, id := range s.IDs {
		r := s.Record(i)
		e := tgEntity{id: id,
			x: int32(binary.LittleEndian.Uint32(r[0:])), y: int32(binary.LittleEndian.Uint32(r[4:])),
			owner: binary.LittleEndian.Uint16(r[8:]), ammo: r[10], ttl: r[11], kind: r[12]}
		if e.kind != tgPlayer && e.kind != tgBullet {
			return errBadRecord
		}
		g.ents = append(g.ents, e)
	}
	return nil
}

func (g *testGame) AppendCanonical(b []byte) []byte {
	for i := range g.ents {
		b = binary.LittleEndian.AppendUint32(b, uint32(g.ents[i].id))
		b = appendRecord(b, &g.ents[i])
	}
	return b
}

func (g *testGame) AppendBodies(dst []Body) []Body {
	for _, e := range g.ents {
		dst = append(dst, Body{ID: e.id, Shape: ShapeSphere, Pos: Vec3{X: e.x, Y: e.y}, Size: Vec3{X: 10}})
	}
	return dst
}
