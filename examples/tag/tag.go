// Package tag is the game of docs/GUIDE.md, the smallest complete game on
// tickwire: two to four players run around a square field; one of them
// is "it", and touching another player passes it on and scores a point.
// Players predict their own runner, see the others interpolated, and
// hear every tag (an effect the server sends everyone).
package tag

import (
	"errors"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Sizes, in the game's units (1/256 m) and ticks (60 Hz).
const (
	Unit     = 256
	Field    = 32 * Unit // the field is Field × Field, from (0, 0)
	Speed    = Unit / 12 // 5 m/s
	ItSpeed  = Unit / 10 // 6 m/s: "it" is a little faster
	Reach    = Unit      // touching distance: 1 m between centres
	Cooldown = 60        // ticks a new "it" cannot tag back
)

// EffectTagged is the effect of a tag: Player is the new "it", Data[0]
// the tagger.
const EffectTagged = 1

// InputSize is one input: a stick (dx, dy), -127..127 each.
const InputSize = 2

// Runner is one player's runner.
type Runner struct {
	Slot     uint16
	X, Y     int32
	It       bool
	Score    uint16
	Cooldown uint8 // ticks before this runner, "it", may tag
}

// The record of a runner: its fields, laid out by deltacomp so a small
// move changes few bytes.
var record = mustSchema(
	deltacomp.Field{Name: "x", Bits: 16},
	deltacomp.Field{Name: "y", Bits: 16},
	deltacomp.Field{Name: "it", Bits: 1},
	deltacomp.Field{Name: "score", Bits: 16},
	deltacomp.Field{Name: "cooldown", Bits: 7},
)

const (
	fX = iota
	fY
	fIt
	fScore
	fCooldown
)

func mustSchema(f ...deltacomp.Field) *deltacomp.Schema {
	s, err := deltacomp.NewSchema(f...)
	if err != nil {
		panic(err)
	}
	return s
}

// Game is the tag world: the runners in slot order.
type Game struct {
	Runners []Runner
}

// New returns an empty field.
func New() *Game { return &Game{} }

// ID is the entity id of the runner of slot.
func ID(slot uint16) proto.NetworkID { return proto.MakeNetworkID(0, uint32(slot)) }

// Runner returns the runner of slot, or nil.
func (g *Game) Runner(slot uint16) *Runner {
	i, ok := slices.BinarySearchFunc(g.Runners, slot, func(r Runner, s uint16) int { return int(r.Slot) - int(s) })
	if !ok {
		return nil
	}
	return &g.Runners[i]
}

// It is the slot of the runner who is "it" (0: nobody).
func (g *Game) It() uint16 {
	for _, r := range g.Runners {
		if r.It {
			return r.Slot
		}
	}
	return 0
}

// Schema is the game's layout: 2-byte inputs without actions, one record
// per runner.
func (g *Game) Schema() sim.Schema {
	return sim.Schema{InputSize: InputSize, RecordSize: record.Size()}
}

func (g *Game) Clone() sim.Game { return &Game{Runners: slices.Clone(g.Runners)} }

func (g *Game) CopyFrom(src sim.Game) {
	g.Runners = append(g.Runners[:0], src.(*Game).Runners...)
}

// Step moves every runner by its stick, then lets "it" tag the nearest
// runner in reach.
func (g *Game) Step(t *sim.Tick) {
	for i := range g.Runners {
		r := &g.Runners[i]
		in := t.Input(r.Slot)
		if in == nil {
			continue
		}
		speed := int32(Speed)
		if r.It {
			speed = ItSpeed
		}
		r.X = clamp(r.X+int32(int8(in.Data[0]))*speed/127, 0, Field)
		r.Y = clamp(r.Y+int32(int8(in.Data[1]))*speed/127, 0, Field)
		if r.Cooldown > 0 {
			r.Cooldown--
		}
	}
	it := g.Runner(g.It())
	if it == nil || it.Cooldown > 0 {
		return
	}
	for i := range g.Runners {
		r := &g.Runners[i]
		if r == it || dist2(r, it) > Reach*Reach {
			continue
		}
		it.It, it.Score = false, it.Score+1
		r.It, r.Cooldown = true, Cooldown
		t.Emit(EffectTagged, ID(r.Slot), r.Slot, [4]int32{int32(it.Slot)})
		return
	}
}

func dist2(a, b *Runner) int64 {
	dx, dy := int64(a.X-b.X), int64(a.Y-b.Y)
	return dx*dx + dy*dy
}

func clamp(v, lo, hi int32) int32 { return max(lo, min(v, hi)) }

// No actions in tag: nothing to validate.
func (g *Game) ValidateAction(uint16, uint32, []byte) error { return nil }

// OnPlayerJoin puts the runner on its corner of the field; the first
// runner is "it".
func (g *Game) OnPlayerJoin(t *sim.Tick, slot uint16) error {
	if len(g.Runners) == 4 {
		return errFull
	}
	corner := int32(slot-1) % 4
	r := Runner{Slot: slot, X: Field / 4 * (1 + 2*(corner&1)), Y: Field / 4 * (1 + (corner & 2)), It: g.It() == 0}
	i, _ := slices.BinarySearchFunc(g.Runners, slot, func(r Runner, s uint16) int { return int(r.Slot) - int(s) })
	g.Runners = slices.Insert(g.Runners, i, r)
	return nil
}

var errFull = errors.New("tag: four runners already")

// OnPlayerLeave removes the runner; if it was "it", the first runner left
// is.
func (g *Game) OnPlayerLeave(t *sim.Tick, slot uint16, reason string) {
	r := g.Runner(slot)
	if r == nil {
		return
	}
	wasIt := r.It
	g.Runners = slices.DeleteFunc(g.Runners, func(r Runner) bool { return r.Slot == slot })
	if wasIt && len(g.Runners) > 0 {
		g.Runners[0].It = true
	}
}

// WriteSnapshot writes every runner's record.
func (g *Game) WriteSnapshot(s *deltacomp.Snapshot) {
	var rec [16]byte
	for _, r := range g.Runners {
		b := rec[:record.Size()]
		record.Set(b, fX, uint32(r.X))
		record.Set(b, fY, uint32(r.Y))
		record.Set(b, fIt, b2u(r.It))
		record.Set(b, fScore, uint32(r.Score))
		record.Set(b, fCooldown, uint32(r.Cooldown))
		s.Append(ID(r.Slot), b)
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

var errRecord = errors.New("tag: runner record out of range")

// ReadSnapshot rebuilds the runners from records.
func (g *Game) ReadSnapshot(s *deltacomp.Snapshot) error {
	g.Runners = g.Runners[:0]
	for i, id := range s.IDs {
		b := s.Record(i)
		r := Runner{Slot: uint16(id.Index()), X: int32(record.Get(b, fX)), Y: int32(record.Get(b, fY)),
			It: record.Get(b, fIt) == 1, Score: uint16(record.Get(b, fScore)), Cooldown: uint8(record.Get(b, fCooldown))}
		if id.Spawner() != 0 || r.Slot == 0 || r.X > Field || r.Y > Field {
			return errRecord
		}
		g.Runners = append(g.Runners, r)
	}
	return nil
}

// AppendCanonical: the snapshot is the whole state.
func (g *Game) AppendCanonical(b []byte) []byte { return sim.SnapshotCanonical(g, b) }

// AppendBodies makes every runner a 0.5 m sphere, for lag compensation
// and smoothing.
func (g *Game) AppendBodies(dst []sim.Body) []sim.Body {
	for _, r := range g.Runners {
		dst = append(dst, sim.Body{ID: ID(r.Slot), Shape: sim.ShapeSphere, Pos: sim.Vec3{X: r.X, Y: r.Y}, Size: sim.Vec3{X: Reach / 2}})
	}
	return dst
}

// Owner: a player owns its runner (sim.EntityOwner), so its client
// predicts it and interpolates the others.
func (g *Game) Owner(id proto.NetworkID) uint16 { return uint16(id.Index()) }
