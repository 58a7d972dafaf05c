package game

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/sim"
)

// TestGameNewRemoteHiddenUntilInterpolated (seed 003, "Smooth
// Rendering"): when an update brings a new remote entity (a player who
// just joined), the client holds it in its replica at once but shows it
// only once the interpolated moment has reached a state that holds it,
// then from the next frame on.
func TestGameNewRemoteHiddenUntilInterpolated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		ca, a := r.dial(1, 3, nil)
		defer ca.Close()
		r.waitSynced("first join", checksummed(1), a)

		cb, _ := r.dial(2, 9, nil)
		defer cb.Close()
		avatar := arena.PlayerID(9)
		var first uint32 // the first state of the replica that held the avatar
		held, hidden, shown := false, 0, false
		deadline := time.Now().Add(5 * time.Second)
		for !shown {
			if time.Now().After(deadline) {
				t.Fatalf("the new player's avatar was never shown (held since tick %d: %v)", first, held)
			}
			time.Sleep(2 * time.Millisecond)
			var inReplica, inView bool
			var at float64
			// The replica and the engine's view of the same moment, between
			// two of the client's frames.
			a.c.Do(func() {
				s := a.replica.State()
				_, inReplica = slices.BinarySearch(s.IDs, avatar)
				if inReplica && !held {
					held, first = true, s.Tick
				}
				inView = slices.ContainsFunc(a.eng.InterpolatedBodies(), func(b sim.Body) bool { return b.ID == avatar })
				at = a.eng.InterpTime()
			})
			switch {
			case inView && at < float64(first):
				t.Fatalf("avatar shown at interpolated tick %.2f, before the first state that holds it (%d)", at, first)
			case inView:
				shown = true
			case held && at >= float64(first+1):
				t.Fatalf("avatar hidden at interpolated tick %.2f, past the state that brought it (%d)", at, first)
			case held:
				hidden++
			}
		}
		if hidden == 0 {
			t.Fatal("the avatar was never held and hidden: the interpolation delay did not show")
		}
		t.Logf("avatar in the replica from tick %d, hidden for %d polls (2 ms apart)", first, hidden)
	})
}
