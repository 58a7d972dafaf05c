package game

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// randomInputs drives arena players with seeded random inputs.
func randomInputs(seed uint64) InputFunc { return testrig.RandomInputs(seed) }

// firingInputs plays random moves and aims from seed (and stream),
// pressing buttons one tick in every on average.
func firingInputs(seed, stream uint64, every int, buttons uint8) InputFunc {
	return testrig.FiringInputs(seed, stream, every, buttons)
}

// arenaServer serves the arena (npcs NPCs) on a loopback socket.
func arenaServer(t testing.TB, cfg tickwire.Config, npcs int) (*tickwire.Server, *Host, tickwire.Key, string) {
	key, _ := tickwire.GenerateKey()
	s, err := tickwire.NewServer(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(s, func(uint64) (Game, error) { return arena.NewGame(npcs), nil }, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(h)
	addr := testrig.Serve(t, s, nil)
	return s, h, key, addr.String()
}

// TestGameOverLoopback plays the arena over loopback: the client receives
// the join snapshot and deltas, checksums match, its inputs reach the
// server, and its replica holds the server's entities.
func TestGameOverLoopback(t *testing.T) {
	s, host, key, addr := arenaServer(t, tickwire.Config{}, 100)
	gc, err := NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 5, ClientID: 1, Players: []uint16{3}, ServerAddrs: []string{addr}}, time.Now())
	c := testrig.Dial(t, tok, tickwire.Dialer{Game: gc})
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
	noHandler
	left chan any // Conn.Value seen at Disconnected
}

func (h *valueHandler) Connected(c *tickwire.Conn) { c.Value = "the application's" }
func (h *valueHandler) Disconnected(c *tickwire.Conn, _ proto.DisconnectReason) {
	h.left <- c.Value
}

// TestConnValueIsTheApplications: a Config.Handler that sets
// Conn.Value keeps it, and the game host still finds the connection's
// players when the client leaves: the player leaves and the game ends.
func TestConnValueIsTheApplications(t *testing.T) {
	key, _ := tickwire.GenerateKey()
	s, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	app := &valueHandler{left: make(chan any, 1)}
	host, err := NewHost(s, func(uint64) (Game, error) { return arena.NewGame(4), nil }, Config{Handler: app})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(host)
	addr := testrig.Serve(t, s, nil)
	gc, err := NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := testrig.Dial(t, testrig.Token(t, key, addr, 1, 3), tickwire.Dialer{Game: gc})
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

// TestSetInputIntervalRange: Client.SetInputInterval takes 1 to
// MaxInputInterval ticks and refuses the rest with what the range is.
func TestSetInputIntervalRange(t *testing.T) {
	gc, err := NewClient(arena.NewGame(0), nil, sim.ClientConfig{})
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

// TestUpdatedAtInOnFrame: UpdatedAt called from OnFrame, on the client's
// loop, answers, and the client keeps running and closes. (It used to
// wait for the lock of the loop it ran on, and freeze it.)
func TestUpdatedAtInOnFrame(t *testing.T) {
	_, _, key, addr := arenaServer(t, tickwire.Config{}, 10)
	gc, err := NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan bool, 1024)
	gc.OnFrame(func(*sim.Client) {
		_, ok := gc.UpdatedAt(arena.PlayerID(3))
		select {
		case frames <- ok:
		default:
		}
	})
	tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 5, ClientID: 1, Players: []uint16{3}, ServerAddrs: []string{addr}}, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// No cleanup that closes c: on a frozen loop it would wait forever.
	c, err := (&tickwire.Dialer{Game: gc}).Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	n, known := 0, 0
	for n < 60 {
		select {
		case ok := <-frames:
			n++
			if ok {
				known++
			}
		case <-ctx.Done():
			t.Fatalf("%d frames in 10 s with UpdatedAt in OnFrame: the client's loop is frozen", n)
		}
	}
	if known == 0 {
		t.Error("UpdatedAt in OnFrame never knew the player's own avatar")
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
}
