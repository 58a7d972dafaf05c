package peerhost

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/udptest"
)

// randomInputs drives arena players with seeded random inputs.
var randomInputs = testrig.RandomInputs

// rigGame is the game the gameRig's tokens name.
const rigGame = 11

// gameRig is an arena game server on a udptest network, recording the
// game's state after every tick (hist), for the standby feed's tests.
type gameRig struct {
	t    *testing.T
	net  *udptest.Network
	srv  *tickwire.Server
	host *game.Host
	key  tickwire.Key
	addr string // the server's
	hist map[uint32]testrig.State
	stop func()
}

// newGameRigConfig serves the arena with cfg (its Handler the rig's
// history) at 10.0.0.1:7777 of a new network with 15 ms links; call it
// inside a synctest bubble and stop it with close.
func newGameRigConfig(t *testing.T, cfg game.Config) *gameRig {
	net := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 15 * time.Millisecond}})
	key, _ := tickwire.GenerateKey()
	return serveGameRig(t, net, "10.0.0.1:7777", key, cfg)
}

// serveGameRig serves the arena with cfg on addr of net with key.
func serveGameRig(t *testing.T, net *udptest.Network, addr string, key tickwire.Key, cfg game.Config) *gameRig {
	r := &gameRig{t: t, net: net, key: key, addr: addr, hist: map[uint32]testrig.State{}}
	var err error
	if r.srv, err = tickwire.NewServer(key, tickwire.Config{}); err != nil {
		t.Fatal(err)
	}
	cfg.Handler = &testrig.History{Engine: func() *sim.Server { return r.host.Engine(rigGame) }, States: r.hist}
	if r.host, err = game.NewHost(r.srv, func(uint64) (game.Game, error) { return arena.NewGame(8), nil }, cfg); err != nil {
		t.Fatal(err)
	}
	r.srv.Handle(r.host)
	r.stop = testrig.SimServe(t, net, addr, r.srv, nil)
	return r
}

// successor serves games adopted after a migration on addr of r's
// network, with key (the successor key), recording its history like r.
func (r *gameRig) successor(addr string, key tickwire.Key) *gameRig {
	r.t.Helper()
	return serveGameRig(r.t, r.net, addr, key, game.Config{})
}

func (r *gameRig) close() { r.stop() }

// dial connects a game client for player slot, playing random inputs.
func (r *gameRig) dial(clientID uint64, slot uint16) (*tickwire.Client, *game.Client) {
	r.t.Helper()
	gc, err := game.NewClient(arena.NewGame(0), randomInputs(clientID), sim.ClientConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	return r.dialLayer(clientID, slot, gc), gc
}

// dialLayer connects a client for player slot that plays with layer.
func (r *gameRig) dialLayer(clientID uint64, slot uint16, layer tickwire.ClientLayer) *tickwire.Client {
	r.t.Helper()
	tok, err := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: rigGame, ClientID: clientID, Players: []uint16{slot},
		ServerAddrs: []string{r.addr}}, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	return testrig.SimDial(r.t, r.net, fmt.Sprintf("10.0.1.%d:5000", clientID), nil, tok, layer)
}

// waitSynced polls until each game client's stats meet cond and its
// replica equals the rig's recorded state at the replica's tick.
func (r *gameRig) waitSynced(what string, cond func(i int, st game.ClientStats) bool, gcs ...*game.Client) {
	r.t.Helper()
	testrig.WaitSynced(r.t, what, r.srv, r.hist, len(gcs), func(i int) (bool, string, uint32, testrig.State) {
		st := gcs[i].Stats()
		tick, cl := testrig.ReplicaOf(gcs[i])
		return cond(i, st), fmt.Sprintf("%+v", st), tick, cl
	})
}

// hostStats reads the host's counters on its loop.
func (r *gameRig) hostStats() game.HostStats {
	var st game.HostStats
	r.srv.Do(func() { st = r.host.Stats() })
	return st
}

func checksummed(n uint64) func(int, game.ClientStats) bool {
	return func(_ int, st game.ClientStats) bool { return st.ChecksumsOK >= n }
}

// hostGame is the game.Host this player of a state-sync game runs (nil:
// none).
func (p *Player) hostGame() *game.Host {
	if m, ok := p.mode.(*stateSync); ok {
		return m.host
	}
	return nil
}
