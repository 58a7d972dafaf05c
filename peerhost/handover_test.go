package peerhost

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/udptest"
)

// TestPeerHostQuits: in virtual time, three peers play the arena on the
// first one's host (15 ms links) and exchange numbered echoes; after 5 s
// the host's player closes (it quits) while the others send a message
// every 2 ms, slot 3 from 60 ms away. Its host hands the game over: the
// standby (slot 2) promotes at exactly the host's last tick, slot 3
// dials it, and both play again within 300 ms of the Close — not after
// the 1.5 s a silent host takes to be declared lost. Every player left
// the old host for the successor before HandOverTimeout; the messages
// that reached the old host during its hand-over were left to the
// successor; the new host ran none of their ticks without their inputs;
// every echo came back exactly once, in order; the players' games saw no
// disconnect, the quitter's one.
func TestPeerHostQuits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 3)
		defer r.close()
		stop := r.echoing()
		time.Sleep(5 * time.Second)
		before := r.games[2].Stats()
		mig := r.peers[0].mig
		r.mu.Lock()
		r.resumed = map[uint64]uint32{}
		r.mu.Unlock()

		// Slot 3 is farther from the host than the standby: its messages
		// still reach the old host after the standby left it.
		far := udptest.Link{Latency: 60 * time.Millisecond}
		r.net.SetLink(netip.MustParseAddr("10.0.1.3"), netip.MustParseAddr("10.0.0.1"), far)
		r.net.SetLink(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.3"), far)
		r.kills[0].quit.Store(true) // no more echoes from it
		// Messages keep coming while the game changes hands: every 2 ms
		// from each player, for 200 ms.
		burst := make(chan struct{})
		go func() {
			defer close(burst)
			for range 100 {
				r.sendEcho(1)
				r.sendEcho(2)
				time.Sleep(2 * time.Millisecond)
			}
		}()
		quit := time.Now()
		r.peers[0].Close()
		closed := time.Since(quit)
		<-burst
		r.waitFor("slot 3 resumed on slot 2", time.Second, func() bool {
			ev := r.eventsOf(2)
			return len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed && hasEvent(r.eventsOf(1), EventPromoted)
		})
		promoted := eventAt(t, r.eventsOf(1), EventPromoted).Sub(quit)
		resumed := eventAt(t, r.eventsOf(2), EventResumed).Sub(quit)
		t.Logf("from Close to: slot 2 promoted %v, slot 3 resumed %v (virtual; Close returned after %v)", promoted, resumed, closed)
		if promoted > 300*time.Millisecond || resumed > 300*time.Millisecond {
			t.Fatalf("back in play %v / %v after the host quit, want < 300 ms", promoted, resumed)
		}

		hs := mig.Stats() // the old host's loop has ended
		t.Logf("messages that reached the old host during its hand-over: %d", hs.HandOverLeft)
		if hs.HandOverTick == 0 || hs.HandOverUnacked != 0 || hs.HandOverLeft == 0 {
			t.Fatalf("old host: %+v", hs)
		}
		if st := r.peers[1].Stats(); st.PromotedAt != hs.HandOverTick || st.HandOverTick != hs.HandOverTick || st.Epoch != 2 {
			t.Fatalf("successor resumed from tick %d (heard %d), the host handed over tick %d; epoch %d",
				st.PromotedAt, st.HandOverTick, hs.HandOverTick, st.Epoch)
		}
		for _, i := range []int{1, 2} {
			ev := r.eventsOf(i)
			lost := ev[len(ev)-1]
			for _, e := range ev {
				if e.Kind == EventHostLost {
					lost = e
				}
			}
			if lost.Kind != EventHostLost || !strings.HasPrefix(lost.Text, "handed over") {
				t.Fatalf("slot %d: the host was lost as %+v", i+1, lost)
			}
		}
		if ev := r.eventsOf(0); len(ev) == 0 || ev[len(ev)-1].Kind != EventHandedOver {
			t.Fatalf("the quitter's events: %+v", ev)
		}

		time.Sleep(2 * time.Second)
		close(stop)
		r.checkEchoes()
		after := r.games[2].Stats()
		if after.Desyncs != 0 || after.ChecksumsOK <= before.ChecksumsOK+1 {
			t.Fatalf("slot 3 after the hand-over: %+v (before %+v)", after, before)
		}
		r.checkNoneMissing(1)
		if n := r.warnings.count("standby short of the tick handed over"); n != 0 {
			t.Fatalf("%d warnings of a standby short of the hand-over", n)
		}
		for i, want := range []int32{1, 0, 0} {
			if n := r.disconnects[i].Load(); n != want {
				t.Fatalf("slot %d's game saw %d disconnects, want %d", i+1, n, want)
			}
		}
	})
}

// eventAt is the time of the first event of kind in ev.
// hasEvent reports whether ev holds an event of kind. A player counts
// in its Stats before its event reaches the rig: wait for the event
// before reading its time.
func hasEvent(ev []Event, kind EventKind) bool {
	return slices.ContainsFunc(ev, func(e Event) bool { return e.Kind == kind })
}

func eventAt(t *testing.T, ev []Event, kind EventKind) time.Time {
	t.Helper()
	for _, e := range ev {
		if e.Kind == kind {
			return e.Time
		}
	}
	t.Fatalf("no %v in %+v", kind, ev)
	return time.Time{}
}

// TestPeerHandOverChecked: a hand-over a player gets from its own host
// still has to agree with the roster it follows: one naming another
// successor than the roster's, or another epoch, is refused as a bad
// frame and starts no election; the players keep playing on the host of
// epoch 1.
func TestPeerHandOverChecked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 3)
		defer r.close()
		time.Sleep(2 * time.Second)
		bad := func() uint64 { return r.peers[2].Client().Stats().BadFrames }
		before := bad()
		host := r.peers[0]
		host.srv.Do(func() {
			for _, c := range host.mig.conns() {
				if !carries(c, 3) {
					continue
				}
				for _, f := range []proto.ControlFrame{
					{Code: proto.ControlHandOver, Player: 3, Tick: 1, Arg: 1}, // slot 2 is the successor
					{Code: proto.ControlHandOver, Player: 2, Tick: 1, Arg: 2}, // the host's epoch is 1
				} {
					b, _ := f.Append(nil)
					c.SendFrame(b)
				}
			}
		})
		time.Sleep(2 * time.Second)
		if n := bad() - before; n != 2 {
			t.Fatalf("slot 3 refused %d hand-overs of 2", n)
		}
		for i, p := range r.peers {
			st := p.Stats()
			if st.Epoch != 1 || st.HandOvers != 0 || hasEvent(r.eventsOf(i), EventHostLost) {
				t.Fatalf("player %d after the bad hand-overs: %+v", i+1, st)
			}
		}
	})
}
