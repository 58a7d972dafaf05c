package testrig

import (
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/sim"
)

// FlawedArena is the arena with a bug only one peer runs, as a client
// built from other game code would: at tick At the avatar of Player
// loses 3 hp that the server's rules do not take. On a state-sync
// client it shows in what the client predicts from the server's state.
type FlawedArena struct {
	*arena.Game
	At     uint32
	Player uint16
}

// Clone is a FlawedArena's (the engine clones its worlds).
func (g *FlawedArena) Clone() sim.Game {
	return &FlawedArena{Game: g.Game.Clone().(*arena.Game), At: g.At, Player: g.Player}
}

// CopyFrom copies another FlawedArena.
func (g *FlawedArena) CopyFrom(src sim.Game) { g.Game.CopyFrom(src.(*FlawedArena).Game) }

// Step is the arena's, with the flaw at tick At.
func (g *FlawedArena) Step(t *sim.Tick) {
	g.Game.Step(t)
	if e := g.W.Entity(arena.PlayerID(g.Player)); t.Tick == g.At && e != nil && e.HP > 3 {
		e.HP -= 3
	}
}

// FlawedSwarm is the swarm with a bug only one peer runs: at tick At,
// unit Unit loses 7 hp that the other peers' rules do not take. In
// commits mode it shows in that peer's committed state.
type FlawedSwarm struct {
	*swarm.Game
	At   uint32
	Unit int
}

// Clone is a FlawedSwarm's.
func (g *FlawedSwarm) Clone() sim.CommitGame {
	return &FlawedSwarm{Game: g.Game.Clone().(*swarm.Game), At: g.At, Unit: g.Unit}
}

// CopyFrom copies another FlawedSwarm.
func (g *FlawedSwarm) CopyFrom(src sim.CommitGame) { g.Game.CopyFrom(src.(*FlawedSwarm).Game) }

// Step is the swarm's, with the flaw at tick At.
func (g *FlawedSwarm) Step(t *sim.Tick) {
	g.Game.Step(t)
	if t.Tick != g.At {
		return
	}
	// A unit is x, y (i32), team, group and hp (u8), after the tick
	// and the count (u32 each).
	b := g.Game.AppendCanonical(nil)
	b[4+4+11*g.Unit+10] -= 7
	if err := g.Game.LoadCanonical(b); err != nil {
		panic(err)
	}
}
