package game

import (
	"context"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/sim"
)

// TestClientGroupPlaysArena: headless game clients on one group play the
// arena — a verifying one compares the server's checksums, SkipState
// ones only ack the snapshots (they hold no state and check nothing) —
// and the server receives every client's inputs.
func TestClientGroupPlaysArena(t *testing.T) {
	s, host, key, addr := arenaServer(t, tickwire.Config{}, 50)
	g, err := tickwire.NewClientGroup(tickwire.ClientGroupConfig{Sockets: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const n = 4
	gcs := make([]*Client, n)
	for i := range gcs {
		gc, err := NewClient(arena.NewGame(0), randomInputs(uint64(i)), sim.ClientConfig{Headless: true, SkipState: i > 0})
		if err != nil {
			t.Fatal(err)
		}
		gcs[i] = gc
		tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 5, ClientID: uint64(i + 1), Players: []uint16{uint16(i + 1)}, ServerAddrs: []string{addr}}, time.Now())
		testrig.Dial(t, tok, tickwire.Dialer{Game: gc, Group: g})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for gcs[0].Stats().ChecksumsOK < 2 || gcs[n-1].Stats().Deltas < 60 {
		select {
		case <-ctx.Done():
			t.Fatalf("after 20 s: verifying client %+v, skipping client %+v", gcs[0].Stats(), gcs[n-1].Stats())
		case <-poll.C:
		}
	}
	if st := gcs[0].Stats(); st.Desyncs != 0 || st.Entities == 0 {
		t.Errorf("verifying client: %d desyncs, %d entities held", st.Desyncs, st.Entities)
	}
	for i, gc := range gcs[1:] {
		if st := gc.Stats(); st.ChecksumsOK != 0 || st.Entities != 0 || st.FullSnapshots != 1 || st.Resyncs != 0 || st.Engine.InputsSampled == 0 {
			t.Errorf("skipping client %d: %+v", i+1, st)
		}
	}
	s.Do(func() {
		eng := host.Engine(5)
		for p := range uint16(n) {
			if ps := eng.PlayerStats(p + 1); ps == nil || ps.Received == 0 {
				t.Errorf("server got no inputs from player %d: %+v", p+1, ps)
			}
		}
	})
}
