package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// The swarm bandwidth comparison (bench/README.md): eight players give
// their groups an order every 200..600 ms for 20 s of virtual time at
// 30 Hz, first in commits mode (commits.Host: commands relayed, every
// client simulates every unit), then in state sync (game.Host: XOR+RLE
// deltas of the units chosen by the interest scheduler within a view
// radius around the player's team, 1,200-byte packets). The figures are
// each client's bytes per second on the wire (UDP payload), each way.
const (
	swarmPlayers  = 8
	swarmSeconds  = 8
	swarmTickRate = 30
)

type swarmBandwidth struct {
	down, up float64 // kbit/s per client
}

// TestSwarmBandwidth measures both modes at 5,000 units and checks the
// point of commits mode: its downstream is a small fraction of state
// sync's, and does not grow with the units (10,000 units cost it the
// same).
func TestSwarmBandwidth(t *testing.T) {
	if testing.Short() {
		t.Skip("swarm bandwidth in -short mode")
	}
	commits := swarmRun(t, swarm.DefaultUnits, true)
	commits2 := swarmRun(t, 2*swarm.DefaultUnits, true)
	sync := swarmRun(t, swarm.DefaultUnits, false)
	t.Logf("swarm, %d players, %d Hz, per client:", swarmPlayers, swarmTickRate)
	t.Logf("  commits mode, %5d units: down %6.1f kbit/s, up %5.1f kbit/s", swarm.DefaultUnits, commits.down, commits.up)
	t.Logf("  commits mode, %5d units: down %6.1f kbit/s, up %5.1f kbit/s", 2*swarm.DefaultUnits, commits2.down, commits2.up)
	t.Logf("  state sync,   %5d units: down %6.1f kbit/s, up %5.1f kbit/s", swarm.DefaultUnits, sync.down, sync.up)
	if commits.down*3 > sync.down {
		t.Errorf("commits mode downstream %.1f kbit/s is not a third of state sync's %.1f", commits.down, sync.down)
	}
	if d := commits2.down - commits.down; d > 0.1*commits.down || d < -0.1*commits.down {
		t.Errorf("commits mode downstream changed from %.1f to %.1f kbit/s with twice the units", commits.down, commits2.down)
	}
}

func swarmRun(t *testing.T, units int, commitsMode bool) swarmBandwidth {
	var res swarmBandwidth
	synctest.Test(t, func(t *testing.T) {
		net := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 20 * time.Millisecond}})
		serverAddr := netip.MustParseAddrPort("10.0.0.1:7777")
		pc, err := net.Listen(serverAddr.String())
		if err != nil {
			t.Fatal(err)
		}
		key, _ := tickwire.GenerateKey()
		srv, err := tickwire.NewServer(key, tickwire.Config{TickRate: swarmTickRate})
		if err != nil {
			t.Fatal(err)
		}
		if commitsMode {
			h, err := commits.NewHost(srv, func(uint64) (sim.CommitGame, error) { return swarm.NewGame(units) }, commits.Config{})
			if err != nil {
				t.Fatal(err)
			}
			srv.Handle(h)
		} else {
			h, err := game.NewHost(srv, func(uint64) (game.Game, error) { return swarm.NewStateSync(units) }, game.Config{
				Interest:  interest.WorldConfig{CellSize: 64 * swarm.Sub},
				Scheduler: interest.SchedulerConfig{Radius: 512 * swarm.Sub},
				View:      swarm.View,
			})
			if err != nil {
				t.Fatal(err)
			}
			srv.Handle(h)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(udp.FromPacketConn(pc)) }()

		type player struct {
			c      *tickwire.Client
			cc     *commits.Client
			orders chan []byte
		}
		var players []*player
		for i := range swarmPlayers {
			cpc, err := net.Listen(fmt.Sprintf("10.0.1.%d:5000", i+1))
			if err != nil {
				t.Fatal(err)
			}
			slot := uint16(i + 1)
			tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: uint64(i + 1), Players: []uint16{slot},
				ServerAddrs: []string{serverAddr.String()}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			p := &player{orders: make(chan []byte, 16)}
			d := tickwire.Dialer{Conn: udp.FromPacketConn(cpc)}
			if commitsMode {
				w, _ := swarm.NewGame(units)
				p.cc, _ = commits.NewClient(w, commits.ClientConfig{})
				d.Game = p.cc
			} else {
				// The state-sync client sends the order as its input at
				// the next tick it samples (one order, then zeros).
				w, _ := swarm.NewStateSync(units)
				gc, err := game.NewClient(w, func(_ uint16, _ uint32, dst []byte) []byte {
					select {
					case o := <-p.orders:
						return append(dst, o...)
					default:
						return append(dst, make([]byte, swarm.InputSize)...)
					}
				}, sim.ClientConfig{})
				if err != nil {
					t.Fatal(err)
				}
				d.Game = gc
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			p.c, err = d.Dial(ctx, tok)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			players = append(players, p)
		}
		time.Sleep(2 * time.Second) // joins and the first full states are not the steady state
		type sample struct{ in, out uint64 }
		before := make([]sample, len(players))
		for i, p := range players {
			st := p.c.Stats()
			before[i] = sample{st.BytesIn, st.BytesOut}
		}
		r := rand.New(rand.NewPCG(3, 3))
		next := make([]time.Time, len(players))
		end := time.Now().Add(swarmSeconds * time.Second)
		for time.Now().Before(end) {
			time.Sleep(50 * time.Millisecond)
			for i, p := range players {
				if time.Now().Before(next[i]) {
					continue
				}
				next[i] = time.Now().Add(time.Duration(200+r.IntN(400)) * time.Millisecond)
				cmd := swarm.AppendCommand(nil, swarm.Command{Op: swarm.OpMove, Group: uint8(r.IntN(swarm.Groups)),
					X: uint16(r.IntN(swarm.WorldSize)), Y: uint16(r.IntN(swarm.WorldSize))})
				if commitsMode {
					if _, err := p.cc.Issue(uint16(i+1), cmd); err != nil {
						t.Fatal(err)
					}
				} else {
					p.orders <- cmd
				}
			}
		}
		for i, p := range players {
			st := p.c.Stats()
			res.down += float64(st.BytesIn-before[i].in) * 8 / 1000 / swarmSeconds / swarmPlayers
			res.up += float64(st.BytesOut-before[i].out) * 8 / 1000 / swarmSeconds / swarmPlayers
			if p.cc != nil {
				p.cc.Close()
			} else {
				p.c.Close()
			}
		}
		srv.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return res
}
