// Package swarm is tickwire's commits-mode demo game: thousands of units
// (DefaultUnits) in eight teams, moved by group commands. A command is a
// few bytes whatever the number of units it moves, which is why the game
// replicates commands (commits.Host) rather than state: its bandwidth
// does not grow with the units.
//
// Game implements sim.CommitGame and nothing more: commits mode calls
// no other method. StateSync plays the same world in state sync, for the
// bandwidth comparison of the two modes (bench/).
//
// Everything is integer arithmetic, so every peer steps the same world to
// the same bits (sim.World's determinism rules).
package swarm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/sim/fixed"
)

// Sizes and rules.
const (
	DefaultUnits = 5000
	MaxUnits     = 1 << 20
	Teams        = 8 // team t is played by slots t+1, t+9, ...
	Groups       = 8 // each team's units, by index, in eight groups
	// WorldSize is the side of the square world in cells; positions are
	// in sixteenths of a cell (Sub).
	WorldSize = 4096
	Sub       = 16
	// Speed is how far a unit moves per tick, in sixteenths.
	Speed = 24
	// MaxHP is a unit's health; it loses one per tick in a bucket held by
	// more enemies than friends and respawns at its team's base at zero.
	MaxHP = 100

	bucketShift = 10 // buckets of 64 cells (1024 sixteenths)
	bucketSide  = WorldSize * Sub >> bucketShift
	maxPos      = WorldSize*Sub - 1
)

// InputSize is a command's size in bytes.
const InputSize = 8

// Unit is one unit's state.
type Unit struct {
	X, Y        int32 // sixteenths of a cell
	Team, Group uint8
	HP          uint8
}

type target struct {
	x, y int32
	set  bool
}

// Game is the swarm world (sim.CommitGame).
type Game struct {
	tick    uint32
	units   []Unit
	targets [Teams][Groups]target
	players []uint16 // present, ascending
	// scratch of Step: unit counts per bucket and team
	count []uint16
}

var (
	_ sim.CommitGame      = (*Game)(nil)
	_ sim.CanonicalFields = (*Game)(nil)
)

// NewGame returns a world of units units at their teams' bases.
func NewGame(units int) (*Game, error) {
	if units < 1 || units > MaxUnits {
		return nil, fmt.Errorf("swarm: %d units out of 1..%d", units, MaxUnits)
	}
	g := &Game{units: make([]Unit, units)}
	for i := range g.units {
		u := &g.units[i]
		u.Team, u.Group, u.HP = uint8(i%Teams), uint8(i/Teams%Groups), MaxHP
		u.X, u.Y = spawn(u.Team, uint32(i))
	}
	return g, nil
}

// base is the centre of a team's base: eight points on a ring.
var base = [Teams][2]int32{
	{1, 1}, {2, 0}, {3, 1}, {4, 2}, {3, 3}, {2, 4}, {1, 3}, {0, 2},
}

// spawn is a unit's spawn point: its team's base plus a hashed offset.
func spawn(team uint8, salt uint32) (int32, int32) {
	h := fixed.Mix(uint64(team), uint64(salt))
	cx := base[team][0]*WorldSize*Sub/4 + WorldSize*Sub/8
	cy := base[team][1]*WorldSize*Sub/5 + WorldSize*Sub/10
	ox := int32(h&0x3ff) - 512
	oy := int32(h>>10&0x3ff) - 512
	return clamp(cx + ox*8), clamp(cy + oy*8)
}

func clamp(v int32) int32 { return max(0, min(v, maxPos)) }

// TeamOf is the team a player slot plays.
func TeamOf(slot uint16) uint8 { return uint8((int(slot) - 1) % Teams) }

// Command is a player's order: move a group of its team.
type Command struct {
	Op    uint8 // OpMove (0: none)
	Group uint8
	X, Y  uint16 // target cell
	Tag   uint16 // the sender's, carried through (tests tell commands apart by it)
}

// OpMove sends a group to a cell.
const OpMove = 1

// AppendCommand appends c's InputSize bytes.
func AppendCommand(b []byte, c Command) []byte {
	b = append(b, c.Op, c.Group)
	b = binary.LittleEndian.AppendUint16(b, c.X)
	b = binary.LittleEndian.AppendUint16(b, c.Y)
	return binary.LittleEndian.AppendUint16(b, c.Tag)
}

// ParseCommand reads a command from InputSize bytes.
func ParseCommand(b []byte) Command {
	return Command{Op: b[0], Group: b[1], X: binary.LittleEndian.Uint16(b[2:]),
		Y: binary.LittleEndian.Uint16(b[4:]), Tag: binary.LittleEndian.Uint16(b[6:])}
}

// Errors of ValidateAction.
var (
	ErrUnknownOp = errors.New("swarm: unknown command")
	ErrGroup     = errors.New("swarm: no such group")
	ErrOutside   = errors.New("swarm: target outside the world")
)

// Schema: 8-byte commands, every byte an action (nothing repeats).
func (g *Game) Schema() sim.Schema {
	return sim.Schema{InputSize: InputSize, ActionBytes: InputSize}
}

// Clone returns an independent copy.
func (g *Game) Clone() sim.CommitGame {
	c := &Game{}
	c.copyFrom(g)
	return c
}

// CopyFrom makes g equal to src, reusing memory.
func (g *Game) CopyFrom(src sim.CommitGame) { g.copyFrom(src.(*Game)) }

func (g *Game) copyFrom(s *Game) {
	g.tick = s.tick
	g.units = append(g.units[:0], s.units...)
	g.targets = s.targets
	g.players = append(g.players[:0], s.players...)
}

// ValidateAction refuses unknown commands, groups and targets.
func (g *Game) ValidateAction(player uint16, tick uint32, action []byte) error {
	c := ParseCommand(action)
	switch {
	case c.Op != OpMove:
		return ErrUnknownOp
	case c.Group >= Groups:
		return ErrGroup
	case c.X >= WorldSize || c.Y >= WorldSize:
		return ErrOutside
	}
	return nil
}

// OnPlayerJoin notes the player; its team's units were there all along.
func (g *Game) OnPlayerJoin(t *sim.Tick, player uint16) error {
	if i, found := slices.BinarySearch(g.players, player); !found {
		g.players = slices.Insert(g.players, i, player)
	}
	return nil
}

// OnPlayerLeave forgets the player; its groups keep their orders.
func (g *Game) OnPlayerLeave(t *sim.Tick, player uint16, reason string) {
	if i, found := slices.BinarySearch(g.players, player); found {
		g.players = slices.Delete(g.players, i, i+1)
	}
}

// Step applies the tick's commands, moves every unit toward its group's
// target (in formation around it) and fights: a unit in a bucket with
// more enemies than friends loses a hit point.
func (g *Game) Step(t *sim.Tick) {
	g.tick = t.Tick
	for _, in := range t.Inputs {
		if in.Missing || in.Rejected {
			continue
		}
		c := ParseCommand(in.Data)
		if c.Op != OpMove {
			continue
		}
		g.targets[TeamOf(in.Player)][c.Group] = target{x: int32(c.X)*Sub + Sub/2, y: int32(c.Y)*Sub + Sub/2, set: true}
	}
	if n := bucketSide * bucketSide * Teams; len(g.count) != n {
		g.count = make([]uint16, n)
	} else {
		clear(g.count)
	}
	for i := range g.units {
		u := &g.units[i]
		if tg := g.targets[u.Team][u.Group]; tg.set {
			ox, oy := formation(i)
			move(u, clamp(tg.x+ox), clamp(tg.y+oy))
		}
		k := bucket(u)*Teams + int(u.Team)
		if g.count[k] < 0xffff {
			g.count[k]++
		}
	}
	for i := range g.units {
		u := &g.units[i]
		b := bucket(u) * Teams
		friends := int(g.count[b+int(u.Team)])
		enemies := 0
		for tm := range Teams {
			if tm != int(u.Team) {
				enemies += int(g.count[b+tm])
			}
		}
		if enemies > friends {
			u.HP--
			if u.HP == 0 {
				u.X, u.Y = spawn(u.Team, t.Tick^uint32(i))
				u.HP = MaxHP
			}
		}
	}
}

func bucket(u *Unit) int {
	return int(u.Y>>bucketShift)*bucketSide + int(u.X>>bucketShift)
}

// formation spreads a group around its target: unit i's slot in a block
// ten units wide, two cells apart.
func formation(i int) (int32, int32) {
	n := int32(i / (Teams * Groups)) // the unit's rank in its group
	const step = 2 * Sub
	return (n%10 - 5) * step, (n/10 - 4) * step
}

// move takes u a step of at most Speed toward (x, y).
func move(u *Unit, x, y int32) {
	dx, dy := fixed.Limit(x-u.X, y-u.Y, Speed)
	u.X += dx
	u.Y += dy
}

// Units is how many units there are.
func (g *Game) Units() int { return len(g.units) }

// Unit returns unit i.
func (g *Game) Unit(i int) Unit { return g.units[i] }

// Tick is the tick the world is at.
func (g *Game) Tick() uint32 { return g.tick }

// Target is a group's target, in sixteenths of a cell.
func (g *Game) Target(team, group int) (x, y int32, ok bool) {
	t := g.targets[team][group]
	return t.x, t.y, t.set
}

// Players are the present players.
func (g *Game) Players() []uint16 { return g.players }

// AppendCanonical appends the whole state: tick, units, targets,
// players.
func (g *Game) AppendCanonical(b []byte) []byte {
	w := sim.NewCanonicalWriter(b)
	w.Uint32(g.tick)
	w.Count(len(g.units))
	for i := range g.units {
		u := &g.units[i]
		w.Int32(u.X)
		w.Int32(u.Y)
		w.Uint8(u.Team)
		w.Uint8(u.Group)
		w.Uint8(u.HP)
	}
	for tm := range Teams {
		for _, t := range g.targets[tm] {
			w.Int32(t.x)
			w.Int32(t.y)
			w.Bool(t.set)
		}
	}
	w.Count(len(g.players))
	for _, p := range g.players {
		w.Uint16(p)
	}
	return w.Bytes()
}

// errCanonical is a canonical state with a value out of the game's
// ranges.
var errCanonical = errors.New("swarm: canonical state out of range")

// unitBytes is a unit's size in the canonical state.
const unitBytes = 4 + 4 + 3

// LoadCanonical restores AppendCanonical's output; on error the world
// is unchanged.
func (g *Game) LoadCanonical(b []byte) error {
	r := sim.NewCanonicalReader(b)
	tick := r.Uint32()
	units := make([]Unit, r.Count(unitBytes))
	if len(units) < 1 || len(units) > MaxUnits {
		r.Fail(errCanonical)
	}
	for i := range units {
		u := Unit{X: r.Int32(), Y: r.Int32(), Team: r.Uint8(), Group: r.Uint8(), HP: r.Uint8()}
		if !onMap(u.X, u.Y) || u.Team >= Teams || u.Group >= Groups || u.HP == 0 || u.HP > MaxHP {
			r.Fail(errCanonical)
		}
		units[i] = u
	}
	var targets [Teams][Groups]target
	for tm := range targets {
		for gr := range targets[tm] {
			t := target{x: r.Int32(), y: r.Int32(), set: r.Bool()}
			if !onMap(t.x, t.y) {
				r.Fail(errCanonical)
			}
			targets[tm][gr] = t
		}
	}
	players := make([]uint16, r.Count(2))
	for i := range players {
		players[i] = r.Uint16()
		if players[i] == 0 || i > 0 && players[i] <= players[i-1] {
			r.Fail(errCanonical)
		}
	}
	if err := r.Finish(); err != nil {
		return err
	}
	g.tick, g.units, g.targets, g.players = tick, units, targets, players
	return nil
}

// onMap reports whether a position is inside the world.
func onMap(x, y int32) bool { return x >= 0 && x <= maxPos && y >= 0 && y <= maxPos }

// AppendCanonicalFields names the fields of a canonical state
// (sim.CanonicalFields), for tools that compare two states of a game:
// the tick, each unit's x, y, team, group and hp ("unit 17"), each
// group's target ("team 2 group 5": x, y, set) and the players.
func (g *Game) AppendCanonicalFields(dst []sim.Field, b []byte) ([]sim.Field, error) {
	var w Game
	if err := w.LoadCanonical(b); err != nil {
		return dst, err
	}
	dst = append(dst, sim.Field{Name: "tick", Value: int64(w.tick)})
	for i := range w.units {
		u := &w.units[i]
		name := fmt.Sprintf("unit %d", i)
		dst = append(dst, sim.Field{Entity: name, Name: "x", Value: int64(u.X)}, sim.Field{Entity: name, Name: "y", Value: int64(u.Y)},
			sim.Field{Entity: name, Name: "team", Value: int64(u.Team)}, sim.Field{Entity: name, Name: "group", Value: int64(u.Group)},
			sim.Field{Entity: name, Name: "hp", Value: int64(u.HP)})
	}
	for tm := range w.targets {
		for gr, t := range w.targets[tm] {
			name := fmt.Sprintf("team %d group %d", tm, gr)
			set := int64(0)
			if t.set {
				set = 1
			}
			dst = append(dst, sim.Field{Entity: name, Name: "target x", Value: int64(t.x)},
				sim.Field{Entity: name, Name: "target y", Value: int64(t.y)}, sim.Field{Entity: name, Name: "target set", Value: set})
		}
	}
	for i, p := range w.players {
		dst = append(dst, sim.Field{Entity: "players", Name: fmt.Sprintf("player %d", i), Value: int64(p)})
	}
	return dst, nil
}
