package tickwire

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// TestGameClientReattach (issue 23, bug 1): a GameClient dialled again
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
// kinds (sim.EntityKinder), so GameConfig.Interest.Kinds applies: with a
// view radius that shows nobody, the other player's avatar (kind
// player, always relevant) stays fresh while the NPCs out of view keep
// their last value — which GameClient.UpdatedAt tells apart.
func TestInterestKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kinds := make([]interest.Kind, 4)
		kinds[arena.KindPlayer].AlwaysRelevant = true
		r := newGameRigConfig(t, GameConfig{
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
