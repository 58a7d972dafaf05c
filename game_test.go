package tickwire

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// randomInputs drives arena players with seeded random inputs.
func randomInputs(seed uint64) InputFunc { return firingInputs(seed, 2, 20, arena.FireProjectile) }

// firingInputs plays random moves and aims from seed (and stream),
// pressing buttons one tick in every on average.
func firingInputs(seed, stream uint64, every int, buttons uint8) InputFunc {
	r := rand.New(rand.NewPCG(seed, stream))
	return func(player uint16, tick uint32, dst []byte) []byte {
		in := arena.Input{MoveX: int8(r.IntN(255) - 127), MoveY: int8(r.IntN(255) - 127), Aim: uint16(r.Uint32())}
		if r.IntN(every) == 0 {
			in.Buttons = buttons
		}
		return arena.AppendInput(dst, in)
	}
}

// arenaServer serves the arena (npcs NPCs) on a loopback socket.
func arenaServer(t testing.TB, cfg Config, npcs int) (*Server, *GameHost, Key, string) {
	key, _ := GenerateKey()
	s, err := NewServer(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewGameHost(s, func(uint64) (Game, error) { return arena.NewGame(npcs), nil }, GameConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(h)
	addr := serveTest(t, s, nil)
	return s, h, key, addr.String()
}

// TestGameOverLoopback plays the arena over loopback: the client receives
// the join snapshot and deltas, checksums match, its inputs reach the
// server, and its replica holds the server's entities.
func TestGameOverLoopback(t *testing.T) {
	s, host, key, addr := arenaServer(t, Config{}, 100)
	gc, err := NewGameClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := MintToken(key, TokenParams{GameID: 5, ClientID: 1, Players: []uint16{3}, ServerAddrs: []string{addr}}, time.Now())
	c := dial(t, tok, Dialer{Game: gc})
	_ = c

	// Play until three checksums (every 60 ticks) compared equal.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for gc.Stats().ChecksumsOK < 3 {
		select {
		case <-ctx.Done():
			t.Fatalf("stats after 15 s: %+v", gc.Stats())
		case <-tick.C:
		}
	}
	st := gc.Stats()
	t.Logf("client: %+v", st)
	if st.Desyncs != 0 || st.FullSnapshots != 1 || st.Deltas == 0 {
		t.Fatalf("client stats %+v", st)
	}
	gc.State(func(snap *deltacomp.Snapshot) {
		npcs, player := 0, false
		for _, id := range snap.IDs {
			switch {
			case id == arena.PlayerID(3):
				player = true
			case id >= arena.NPCID(0) && id <= arena.NPCID(99):
				npcs++
			}
		}
		if npcs != 100 || !player {
			t.Fatalf("replica holds %d NPCs (want 100), player %v", npcs, player)
		}
	})
	s.Do(func() {
		eng := host.Engine(5)
		if eng == nil {
			t.Fatal("game 5 not running")
		}
		ps := eng.PlayerStats(3)
		if ps == nil || ps.Received == 0 {
			t.Fatalf("server got no inputs from player 3: %+v", ps)
		}
		est := eng.Stats()
		t.Logf("server engine: %+v", est)
		if hs := host.Stats(); hs.Joins != 1 || hs.Desyncs != 0 {
			t.Fatalf("host stats %+v", hs)
		}
	})
}

// valueHandler is an application handler that keeps its own state in
// Conn.Value, as the field's documentation allows.
type valueHandler struct {
	nopHandler
	left chan any // Conn.Value seen at Disconnected
}

func (h *valueHandler) Connected(c *Conn) { c.Value = "the application's" }
func (h *valueHandler) Disconnected(c *Conn, _ proto.DisconnectReason) {
	h.left <- c.Value
}

// TestConnValueIsTheApplications: a GameConfig.Handler that sets
// Conn.Value keeps it, and the game host still finds the connection's
// players when the client leaves: the player leaves and the game ends.
func TestConnValueIsTheApplications(t *testing.T) {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{})
	if err != nil {
		t.Fatal(err)
	}
	app := &valueHandler{left: make(chan any, 1)}
	host, err := NewGameHost(s, func(uint64) (Game, error) { return arena.NewGame(4), nil }, GameConfig{Handler: app})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(host)
	addr := serveTest(t, s, nil)
	gc, err := NewGameClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, mintFor(t, key, addr, 1, 3), Dialer{Game: gc})
	s.Do(func() {
		if st := host.Stats(); st.Joins != 1 || st.Games != 1 {
			t.Fatalf("after connecting: %+v", st)
		}
	})
	c.Close()
	if v := <-app.left; v != "the application's" {
		t.Fatalf("Conn.Value at Disconnected = %v, want the application's value", v)
	}
	s.Do(func() {
		if st := host.Stats(); st.Leaves != 1 || st.Games != 0 {
			t.Fatalf("after the client left: %+v (the player must leave and the game end)", st)
		}
		if host.Engine(7) != nil {
			t.Fatal("game 7 still running with nobody in it")
		}
	})
}

// TestSetInputIntervalRange: GameClient.SetInputInterval takes 1 to
// MaxInputInterval ticks and refuses the rest with what the range is.
func TestSetInputIntervalRange(t *testing.T) {
	gc, err := NewGameClient(arena.NewGame(0), nil, sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= MaxInputInterval; n++ {
		if err := gc.SetInputInterval(n); err != nil {
			t.Errorf("SetInputInterval(%d): %v", n, err)
		}
	}
	for _, n := range []int{0, -1, MaxInputInterval + 1} {
		if err := gc.SetInputInterval(n); err == nil || !strings.Contains(err.Error(), "outside 1–4") {
			t.Errorf("SetInputInterval(%d): %v, want a range error", n, err)
		}
	}
}

// A tick that comes late steps the game once per tick interval due, and
// publishes only the last state: one ring revision and one World update
// for the steps, at the last step's tick. The next tick on time steps and
// publishes once, as before.
func TestLateTickPublishesOnce(t *testing.T) {
	r := newTickRig(t, 8, 1)
	r.warm(t)
	if len(r.host.games) != 1 {
		t.Fatalf("%d games, want 1", len(r.host.games))
	}
	var g *hostedGame
	for _, hg := range r.host.games {
		g = hg
	}
	for _, late := range []int{2, 0} {
		rev, tick := g.ring.Revision(), g.eng.Tick()
		r.now = r.now.Add(time.Duration(late) * time.Second / 60)
		r.step(t, nil)
		if got := g.eng.Tick() - tick; got != uint32(late+1) {
			t.Fatalf("%d intervals late: the game stepped %d times, want %d", late, got, late+1)
		}
		if got := g.ring.Revision() - rev; got != 1 {
			t.Fatalf("%d intervals late: %d revisions published, want 1", late, got)
		}
		if lt, wt := g.ring.Latest().Tick, g.world.Tick(); lt != g.eng.Tick() || wt != lt {
			t.Fatalf("published tick %d, World's %d, game's %d", lt, wt, g.eng.Tick())
		}
	}
}
