package game

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
)

// TestGameClientReattach (issue 23, bug 1): a Client dialled again
// after its game ended — the server's new game starts from tick 0 — must
// follow the new game at once, not hold the old session's replica and
// wait for the server to pass the old tick.
func TestGameClientReattach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		c, gc := r.dial(1, 1, nil)
		time.Sleep(2 * time.Second) // the first game reaches tick ~120
		c.Close()
		for r.hostStats().Games != 0 {
			time.Sleep(10 * time.Millisecond) // virtual: until the server saw the goodbye
		}
		c2 := r.dialLayer(2, 1, gc, nil)
		defer c2.Close()
		time.Sleep(500 * time.Millisecond) // the new game is at tick ~30
		var serverTick uint32
		r.srv.Do(func() { serverTick = r.host.Engine(rigGame).Tick() })
		var confirmed uint32
		var ok bool
		gc.Do(func(eng *sim.Client) { _, confirmed, ok = eng.Confirmed() })
		if !ok || serverTick > 60 || confirmed > serverTick || serverTick-confirmed > 10 {
			t.Fatalf("after re-dialling: server at tick %d, the client's confirmed state at %d (ok %v)", serverTick, confirmed, ok)
		}
		if st := gc.Stats(); st.Desyncs != 0 || st.Engine.StaleSnapshots > 5 {
			t.Fatalf("client stats %+v", st)
		}
	})
}

// TestInterestKinds (issue 23, bug 3): a game reports its entities'
// kinds (sim.EntityKinder), so Config.Interest.Kinds applies: with a
// view radius that shows nobody, the other player's avatar (kind
// player, always relevant) stays fresh while the NPCs out of view keep
// their last value — which Client.UpdatedAt tells apart.
func TestInterestKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kinds := make([]interest.Kind, 4)
		kinds[arena.KindPlayer].AlwaysRelevant = true
		r := newGameRigConfig(t, Config{
			Interest:  interest.WorldConfig{Kinds: kinds},
			Scheduler: interest.SchedulerConfig{Radius: 1},
			View:      arena.View,
		})
		defer r.close()
		c1, gc := r.dial(1, 1, nil)
		defer c1.Close()
		c2, _ := r.dial(2, 2, nil)
		defer c2.Close()
		time.Sleep(3 * time.Second)
		var newest uint32
		var ids []proto.NetworkID
		gc.State(func(s *deltacomp.Snapshot) { newest, ids = s.Tick, slices.Clone(s.IDs) })
		if tick, ok := gc.UpdatedAt(arena.PlayerID(2)); !ok || newest-tick > 10 {
			t.Fatalf("the other player's avatar updated at tick %d (ok %v), newest state %d", tick, ok, newest)
		}
		stale := 0
		for _, id := range ids {
			if arena.Owner(id) != 0 {
				continue // players and their projectiles
			}
			if tick, ok := gc.UpdatedAt(id); ok && newest-tick > 60 {
				stale++
			}
		}
		if stale == 0 {
			t.Fatalf("no NPC is stale out of view (%d entities, newest tick %d)", len(ids), newest)
		}
	})
}

// TestJoinRefusedSaysWhy (issue 23, bug 2): a join the game refuses — a
// second connection claiming a slot in use, a game the factory cannot
// make — fails the Dial with proto.DenyJoinRefused, the slot and the
// game's reason, instead of "wrong game".
func TestJoinRefusedSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		c1, _ := r.dial(1, 1, nil)
		defer c1.Close()
		dial := func(clientID uint64, game uint64) error {
			pc, err := r.net.Listen(fmt.Sprintf("10.0.1.%d:5000", clientID))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: game, ClientID: clientID, Players: []uint16{1},
				ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := (&tickwire.Dialer{Conn: udp.FromPacketConn(pc)}).Dial(ctx, tok)
			if err == nil {
				c.Close()
			}
			return err
		}
		var de *tickwire.DeniedError
		err := dial(2, rigGame)
		if !errors.As(err, &de) || de.Reason != proto.DenyJoinRefused || de.Slot != 1 || !strings.Contains(de.Text, "already") {
			t.Fatalf("a second connection for slot 1: %v (%+v)", err, de)
		}
		t.Logf("slot in use: %v", err)
		r.srv.Do(func() { r.factoryErr = errors.New("no such map: " + strings.Repeat("x", 100)) })
		err = dial(3, rigGame+1)
		if !errors.As(err, &de) || de.Reason != proto.DenyJoinRefused || de.Slot != 0 || !strings.HasPrefix(de.Text, "no such map") || len(de.Text) != proto.MaxDenyText {
			t.Fatalf("a game the factory refuses: %v (%+v)", err, de)
		}
		if st := r.hostStats(); st.JoinFailures != 2 {
			t.Fatalf("host stats %+v", st)
		}
	})
}
