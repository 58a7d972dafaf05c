package deltacomp

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// movingSnapshots evolves entities that move: each has a position and a
// heading it keeps for a while, with a little noise, then rests or turns;
// about a fifth of them move at a time.
// Its records are laid out by a schema with a predictor extrapolating
// position and heading, as a game's would be.
type movingSnapshots struct {
	worldIDs
	schema *Schema
	pred   *Predictor
	tick   uint32
	ents   map[proto.NetworkID]*mover
	rec    []byte
	vals   [4]uint32
}

type mover struct {
	x, y, vx, vy, angle, va int32
	moving                  bool
	state                   uint32
}

func newMovingSnapshots(tb testing.TB, seed uint64, n int) *movingSnapshots {
	s, err := NewSchema(Field{"x", 16}, Field{"y", 16}, Field{"angle", 9}, Field{"state", 3})
	if err != nil {
		tb.Fatal(err)
	}
	pred, err := NewPredictor(s, "x", "y", "angle")
	if err != nil {
		tb.Fatal(err)
	}
	g := &movingSnapshots{worldIDs: worldIDs{rng: rand.New(rand.NewPCG(seed, 3))}, schema: s, pred: pred, ents: map[proto.NetworkID]*mover{}, rec: make([]byte, s.Size())}
	for range n {
		g.spawn()
	}
	return g
}

func (g *movingSnapshots) spawn() {
	if id, ok := g.draw(); ok {
		g.ents[id] = &mover{x: g.rng.Int32N(1 << 16), y: g.rng.Int32N(1 << 16), angle: g.rng.Int32N(512)}
	}
}

func (g *movingSnapshots) next(s *Snapshot, churn bool) {
	if churn {
		g.churn(g.spawn, func(id proto.NetworkID) { delete(g.ents, id) })
	}
	for _, id := range g.ids {
		m := g.ents[id]
		switch r := g.rng.IntN(100); {
		case r < 1 || m.moving && r < 4: // start or stop
			m.moving = !m.moving
			m.vx, m.vy, m.va = g.rng.Int32N(81)-40, g.rng.Int32N(81)-40, g.rng.Int32N(9)-4
		case r < 9: // turn a little
			m.vx += g.rng.Int32N(5) - 2
			m.vy += g.rng.Int32N(5) - 2
		case r < 10:
			m.state = uint32(g.rng.IntN(8))
		}
		if m.moving {
			m.x = min(max(m.x+m.vx+g.rng.Int32N(3)-1, 0), 1<<16-1)
			m.y = min(max(m.y+m.vy+g.rng.Int32N(3)-1, 0), 1<<16-1)
			m.angle = (m.angle + m.va) & 511
		}
	}
	s.Reset(g.tick, g.schema.Size())
	for _, id := range g.ids {
		m := g.ents[id]
		g.vals = [4]uint32{uint32(m.x), uint32(m.y), uint32(m.angle), m.state}
		g.schema.Pack(g.rec, g.vals[:])
		s.Append(id, g.rec)
	}
	g.tick++
}
