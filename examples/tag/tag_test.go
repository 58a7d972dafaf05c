package tag_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/tag"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
	"github.com/tickwire/tickwire/udp/udptest"
)

// chase is a bot's input with the world in view (game.Client.InputFrom):
// "it" runs at the nearest runner, the others away from "it".
func chase(world game.Game, player uint16, tick uint32, dst []byte) []byte {
	g := world.(*tag.Game)
	me := g.Runner(player)
	if me == nil {
		return append(dst, 0, 0)
	}
	var target *tag.Runner
	best := int64(-1)
	for i := range g.Runners {
		r := &g.Runners[i]
		if r.Slot == player || (!me.It && !r.It) {
			continue
		}
		dx, dy := int64(r.X-me.X), int64(r.Y-me.Y)
		if d := dx*dx + dy*dy; best < 0 || d < best {
			best, target = d, r
		}
	}
	if target == nil {
		return append(dst, 0, 0)
	}
	dx, dy := stick(target.X-me.X), stick(target.Y-me.Y)
	if !me.It {
		dx, dy = -dx, -dy
		if me.X <= tag.Unit || me.X >= tag.Field-tag.Unit { // cornered: slide along the wall
			dx, dy = 0, 127
		}
	}
	return append(dst, byte(dx), byte(dy))
}

func stick(d int32) int8 { return int8(max(-127, min(127, d))) }

// player is one test player: its game client and what it heard.
type player struct {
	gc     *game.Client
	mu     sync.Mutex
	tags   []game.Event    // EventEffect, in the order heard
	frames int             // OnFrame calls
	seenIt map[uint16]bool // who it saw as "it", frame by frame
}

func (p *player) GameEvent(_ *sim.Client, e *game.Event) {
	if e.Kind == game.EventEffect && e.Effect.Kind == tag.EffectTagged {
		p.mu.Lock()
		p.tags = append(p.tags, *e)
		p.mu.Unlock()
	}
}

// TestTagOverALossyNetwork plays tag with three bot players over the
// in-memory network with 4 % loss and 30 ± 5 ms each way, in virtual
// time: every player hears every tag the server made, exactly once and
// in order, its confirmed world's scores agree with the tags it heard,
// and nobody desyncs.
func TestTagOverALossyNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 30ms 5ms loss 4%")
		nw := udptest.NewNetwork(udptest.Config{})
		lossy := func(addr string, seed uint64) udp.BatchConn {
			pc, err := nw.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			return udp.FromPacketConn(netem.Wrap(net.PacketConn(pc), netem.Config{Egress: spec, Seed: seed}))
		}

		// The server: a game.Host of tag games that sends every tag to
		// every player.
		key, _ := tickwire.GenerateKey()
		srv, err := tickwire.NewServer(key, tickwire.Config{})
		if err != nil {
			t.Fatal(err)
		}
		host, err := game.NewHost(srv, func(uint64) (game.Game, error) { return tag.New(), nil }, game.Config{
			SendEffects: func(*sim.Effect) (uint16, bool) { return 0, true },
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Handle(host)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(lossy("10.0.0.1:7777", 1)) }()

		// Three players.
		var players []*player
		for slot := uint16(1); slot <= 3; slot++ {
			gc, err := game.NewClient(tag.New(), nil, sim.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			p := &player{gc: gc, seenIt: map[uint16]bool{}}
			gc.InputFrom(chase)
			gc.OnFrame(func(eng *sim.Client) {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.frames++
				if w, ok := eng.Predicted().(*tag.Game); ok && w.It() != 0 {
					p.seenIt[w.It()] = true
				}
			})
			gc.Handle(p)
			tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: uint64(slot), Players: []uint16{slot},
				ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, err := (&tickwire.Dialer{Game: gc, Conn: lossy(fmt.Sprintf("10.0.1.%d:5000", slot), 10+uint64(slot))}).Dial(ctx, tok)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			players = append(players, p)
		}

		time.Sleep(20 * time.Second)

		var sent uint64
		srv.Do(func() { sent = host.Stats().Effects })
		if sent < 3 {
			t.Fatalf("only %d tags in 20 s: the bots do not play", sent)
		}
		// The tags the players heard, in tick order: the same list for
		// all, and what the confirmed scores say.
		var first []game.Event
		for i, p := range players {
			p.mu.Lock()
			tags := append([]game.Event(nil), p.tags...)
			frames, seenIt := p.frames, len(p.seenIt)
			p.mu.Unlock()
			for k := 1; k < len(tags); k++ {
				if tags[k].Tick <= tags[k-1].Tick {
					t.Fatalf("player %d heard tags out of order or twice: %v then %v", i+1, tags[k-1], tags[k])
				}
			}
			var score, confirmed uint32
			p.gc.Do(func(eng *sim.Client) {
				w, tick, _ := eng.Confirmed()
				confirmed = tick
				for _, r := range w.(*tag.Game).Runners {
					score += uint32(r.Score)
				}
			})
			heard := 0
			for _, e := range tags {
				if int32(e.Tick-confirmed) <= 0 {
					heard++
				}
			}
			if int(score) != heard {
				t.Fatalf("player %d: the confirmed world at tick %d counts %d tags, the player heard %d by then", i+1, confirmed, score, heard)
			}
			if st := p.gc.Stats(); st.Desyncs != 0 || st.BadInputs != 0 || frames < 1000 || seenIt < 2 {
				t.Fatalf("player %d: %d frames, saw %d runners as it, stats %+v", i+1, frames, seenIt, st)
			}
			if i == 0 {
				first = tags
				continue
			}
			n := min(len(first), len(tags))
			for k := range n {
				if first[k].Tick != tags[k].Tick || first[k].Player != tags[k].Player || first[k].Effect.Data != tags[k].Effect.Data {
					t.Fatalf("players 1 and %d heard different tags: %v and %v", i+1, first[k], tags[k])
				}
			}
		}
		t.Logf("%d tags in 20 s; every player heard each once, in order", sent)
		srv.Close()
		<-done
	})
}
