package tickwire

import (
	"testing"
	"testing/synctest"
	"time"

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
