package arena

import (
	"errors"
	"github.com/tickwire/tickwire/interest"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// DefaultNPCs is how many NPCs the demo game's arena holds.
const DefaultNPCs = 300

// Game is the arena as a tickwire game (sim.Game): the World plus the
// glue the tick engine needs. It is the reference for writing one.
type Game struct {
	W *World

	t    *sim.Tick // the step in progress (for inputs and lag compensation)
	rays rewindRays
}

var (
	_ sim.Game         = (*Game)(nil)
	_ sim.RecordFields = (*Game)(nil)
)

// NewGame returns an arena with npcs NPCs and no players.
func NewGame(npcs int) *Game {
	g := &Game{W: NewWorld(npcs)}
	g.rays.g = g
	return g
}

// Input layout: MoveX, MoveY, Aim (u16), then the action bytes: Buttons
// and three reserved zero bytes.
const actionBytes = InputSize - 4

// Schema: 8-byte inputs whose last 4 bytes are one-shot actions, 16-byte
// records.
func (g *Game) Schema() sim.Schema {
	return sim.Schema{InputSize: InputSize, ActionBytes: actionBytes, RecordSize: RecordSize}
}

// Clone returns an independent copy.
func (g *Game) Clone() sim.Game {
	c := &Game{W: &World{}}
	c.rays.g = c
	c.W.CopyFrom(g.W)
	return c
}

// CopyFrom makes g equal to src (another *Game), reusing memory.
func (g *Game) CopyFrom(src sim.Game) { g.W.CopyFrom(src.(*Game).W) }

// Step advances the world to t.Tick with the players' inputs; hitscan
// shots are judged against what each shooter saw (t.Rewind).
func (g *Game) Step(t *sim.Tick) {
	g.t = t
	g.W.Tick = t.Tick - 1
	g.W.Step(g.input, &g.rays)
	g.t = nil
}

func (g *Game) input(slot uint16) Input {
	if in := g.t.Input(slot); in != nil {
		return ParseInput(in.Data)
	}
	return Input{}
}

// Errors of ValidateAction.
var (
	ErrUnknownButton = errors.New("arena: unknown button")
	ErrReserved      = errors.New("arena: reserved input bytes set")
	ErrDead          = errors.New("arena: dead players cannot fire")
)

// ValidateAction rejects buttons the game does not have, and firing while
// dead.
func (g *Game) ValidateAction(player uint16, tick uint32, action []byte) error {
	switch {
	case action[0]&^(FireRay|FireProjectile) != 0:
		return ErrUnknownButton
	case action[1]|action[2]|action[3] != 0:
		return ErrReserved
	}
	if e := g.W.Entity(PlayerID(player)); e != nil && e.HP == 0 {
		return ErrDead
	}
	return nil
}

// FirstSpectator is the first spectator slot: a player in slot
// FirstSpectator or above (up to proto.MaxSpawner) watches the arena
// without an avatar, and its inputs do nothing.
const FirstSpectator = 4000

// OnPlayerJoin puts the player's avatar into the arena (a spectator's
// none).
func (g *Game) OnPlayerJoin(t *sim.Tick, player uint16) error {
	if player < FirstSpectator {
		g.W.AddPlayer(player)
	}
	return nil
}

// OnPlayerLeave takes the avatar and its projectiles out.
func (g *Game) OnPlayerLeave(t *sim.Tick, player uint16, reason string) {
	g.W.RemovePlayer(player)
}

// Owner makes the game a sim.EntityOwner: a client's own entities are its
// avatar and its projectiles.
func (g *Game) Owner(id proto.NetworkID) uint16 { return Owner(id) }

// WriteSnapshot writes every entity's record.
func (g *Game) WriteSnapshot(s *deltacomp.Snapshot) { g.W.AppendSnapshot(s) }

// ReadSnapshot rebuilds the world from records.
func (g *Game) ReadSnapshot(s *deltacomp.Snapshot) error { return g.W.SetSnapshot(s) }

// AppendCanonical appends the tick and every entity's id and record.
func (g *Game) AppendCanonical(b []byte) []byte {
	b = append(b, byte(g.W.Tick), byte(g.W.Tick>>8), byte(g.W.Tick>>16), byte(g.W.Tick>>24))
	var r [RecordSize]byte
	for i := range g.W.Entities {
		e := &g.W.Entities[i]
		encodeRecord(&r, e)
		b = append(b, byte(e.ID), byte(e.ID>>8), byte(e.ID>>16), byte(e.ID>>24))
		b = append(b, r[:]...)
	}
	return b
}

// AppendBodies appends live players and NPCs as hit-testable circles and
// projectiles as shapeless bodies, in id order.
func (g *Game) AppendBodies(dst []sim.Body) []sim.Body {
	for i := range g.W.Entities {
		e := &g.W.Entities[i]
		b := sim.Body{ID: e.ID, Pos: sim.Vec3{X: e.X, Y: e.Y}}
		if e.Kind != KindProjectile && e.HP > 0 {
			b.Shape = sim.ShapeSphere
			b.Size.X = radius(e.Kind)
		}
		dst = append(dst, b)
	}
	return dst
}

// rewindRays judges hitscan shots against the bodies the shooter saw.
type rewindRays struct{ g *Game }

func (r *rewindRays) Raycast(shooter uint16, ox, oy, dx, dy, reach int32) (proto.NetworkID, bool) {
	t := r.g.t
	if t == nil {
		return r.g.W.Raycast(shooter, ox, oy, dx, dy, reach)
	}
	bodies, _ := t.Rewind(shooter)
	if bodies == nil {
		return r.g.W.Raycast(shooter, ox, oy, dx, dy, reach)
	}
	self := PlayerID(shooter)
	var best proto.NetworkID
	bestT := int64(reach) + 1
	var at sim.Vec3
	for i := range bodies {
		b := &bodies[i]
		if b.Shape != sim.ShapeSphere || b.ID == self {
			continue
		}
		if d, ok := RayCircle(ox, oy, dx, dy, b.Pos.X, b.Pos.Y, b.Size.X); ok && d < bestT {
			best, bestT, at = b.ID, d, b.Pos
		}
	}
	hit := bestT <= int64(reach)
	if !hit {
		best = 0
		at = sim.Vec3{X: ox + int32(int64(dx)*int64(reach)/trigOne), Y: oy + int32(int64(dy)*int64(reach)/trigOne)}
	}
	t.Emit(EffectShot, best, shooter, [4]int32{ox, oy, at.X, at.Y})
	return best, hit
}

// EffectShot is the effect (sim.Tick.Emit) of a hitscan shot judged with
// lag compensation: Player shot from (Data[0], Data[1]); Entity is the
// body hit (0: a miss) where the shooter's view put it, (Data[2],
// Data[3]) — for a miss, the end of the ray. A client predicts it with
// its own view; the server's copy (SendShots) says what the server
// judged, so the two can be drawn over each other.
const EffectShot uint16 = 1

// SendShots is a tickwire.GameConfig.SendEffects that sends each shot's
// effect to its shooter.
func SendShots(e *sim.Effect) (to uint16, ok bool) {
	return e.Player, e.Kind == EffectShot
}

// ViewRadius is the demo's view distance: entities farther from a
// player's avatar are not replicated to it (the arena is 256 m across).
const ViewRadius = 64 * Unit

// Interest is the demo's interest management, for tickwire.GameConfig's
// Interest and Scheduler: a grid of cells half the view radius wide; the
// view radius; and far entities at lower rates, as area-of-interest
// systems do: beyond half the radius every 2nd tick (30 Hz at 60 Hz),
// beyond three quarters every 4th (15 Hz). Clients interpolate between
// the updates they get, so the far half of the view costs a third of
// what it would at the full rate.
func Interest() (interest.WorldConfig, interest.SchedulerConfig) {
	return interest.WorldConfig{CellSize: ViewRadius / 2}, interest.SchedulerConfig{
		Radius: ViewRadius,
		Bands:  []interest.Band{{From: 0.5, Every: 2}, {From: 0.75, Every: 4}},
	}
}

// View returns where player sees the world from: its avatar's position,
// in the units of interest.Vec3 (the arena's 1/256 m). It is a
// tickwire.GameConfig.View as it stands.
func View(world sim.Game, player uint16) (pos interest.Vec3, ok bool) {
	g, isArena := world.(*Game)
	if !isArena {
		return interest.Vec3{}, false
	}
	if player >= FirstSpectator {
		return interest.Vec3{X: Size / 2, Y: Size / 2}, true // the middle
	}
	e := g.W.Entity(PlayerID(player))
	if e == nil {
		return interest.Vec3{}, false
	}
	return interest.Vec3{X: float32(e.X), Y: float32(e.Y)}, true
}

// EntityKind is the entity's Kind, as the interest kind byte
// (sim.EntityKinder): configure tickwire.GameConfig.Interest.Kinds[KindPlayer]
// to weight or always replicate avatars, say. The id says it (KindOf),
// so it takes no search: the game host asks it of every entity each
// tick.
func (g *Game) EntityKind(id proto.NetworkID) uint8 { return uint8(KindOf(id)) }
