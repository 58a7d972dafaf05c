package game

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// TestRejoinKeepsSlot: of three players, the third loses its path for
// 15 s, past the session timeout. The others see it interrupted, never
// leave; when the path returns it rejoins by itself, into the same slot
// with the same entity, gets the game as it stands, plays on, and the
// others see it back. Nobody sees a leave or a join.
func TestRejoinKeepsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		logs := [3]*eventLog{{}, {}, {}}
		gcs := [3]*Client{}
		for i := range 2 {
			c, gc := r.dial(uint64(i+1), uint16(i+1), nil)
			defer c.Close()
			gc.Handle(logs[i])
			gcs[i] = gc
		}
		gc, err := NewClient(arena.NewGame(0), randomInputs(3), sim.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		gc.Handle(logs[2])
		gcs[2] = gc
		pc, err := r.net.Listen("10.0.1.3:5000")
		if err != nil {
			t.Fatal(err)
		}
		path := &udptest.Cuttable{PacketConn: pc}
		tok, _ := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: rigGame, ClientID: 3, Players: []uint16{3},
			ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
		d := tickwire.Dialer{Game: gc, Conn: udp.FromPacketConn(path), Rejoin: &tickwire.Rejoin{}}
		c3, err := d.Dial(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		defer c3.Close()
		for i := range 3 {
			waitEvent(t, "client", logs[i], EventReady, 0)
		}
		for c3.RejoinToken() == nil {
			time.Sleep(10 * time.Millisecond)
		}

		var seen [3]int
		for i, l := range logs {
			seen[i] = len(l.get())
		}
		path.Cut.Store(true)
		waitEvent(t, "client 1", logs[0], EventPlayerInterrupted, 3)
		time.Sleep(15 * time.Second)
		if c3.Stats().Interruptions != 1 {
			t.Fatalf("client 3 lost %d sessions in 15 s of silence, want 1", c3.Stats().Interruptions)
		}
		waitEvent(t, "client 3", logs[2], EventRejoining, 0)
		path.Cut.Store(false)
		waitEventWithin(t, "client 3", logs[2], EventRejoined, 0, 10*time.Second)
		waitEvent(t, "client 1", logs[0], EventPlayerBack, 3)
		waitEvent(t, "client 2", logs[1], EventPlayerBack, 3)

		// It plays on: its replica follows the server's state again.
		before := gcs[2].Stats().FullSnapshots
		r.waitSynced("after the rejoin", func(i int, st ClientStats) bool {
			return i != 2 || st.FullSnapshots > before || st.Deltas > 0
		}, gcs[:]...)
		var hs HostStats
		r.srv.Do(func() { hs = r.host.Stats() })
		if hs.Rejoins != 1 || hs.Leaves != 0 || hs.Joins != 3 {
			t.Fatalf("host: %d rejoins, %d leaves, %d joins; want 1, 0 and 3 (the slot kept, never left)", hs.Rejoins, hs.Leaves, hs.Joins)
		}
		for i, l := range logs {
			for _, e := range l.get()[seen[i]:] {
				if (e.Kind == EventPlayerLeft || e.Kind == EventPlayerJoined) && e.Player == 3 && i != 2 {
					t.Errorf("client %d saw %v", i+1, e)
				}
				if e.Kind == EventDisconnected {
					t.Errorf("client %d saw %v", i+1, e)
				}
			}
		}
	})
}
