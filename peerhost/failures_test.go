package peerhost

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestPeerHostAndSuccessorDie: in virtual time, four peers play the
// arena on the first one's host (15 ms links) and exchange numbered
// echoes; after 5 s the host is cut off, and 50 ms later its first
// successor (slot 2) too. The two left elect slot 2, which never
// announces itself, strike it off after the promote timeout and elect
// slot 3, the second warm standby: it holds the game and a key, slot 4
// holds a token for it. Both play on within 4 s of the first kill under
// epoch 3 (1, plus two rounds), in sync; the new host ran none of their
// ticks without their inputs; every echo came back exactly once, in
// order; their games saw no disconnect.
func TestPeerHostAndSuccessorDie(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 4)
		defer r.close()
		stop := r.echoing()
		time.Sleep(5 * time.Second)
		if st := r.peers[0].Stats().Host; st.Standbys != 2 {
			t.Fatalf("host keeps %d standbys, want 2", st.Standbys)
		}
		if st := r.peers[2].Stats(); st.StandbyState == 0 || st.Keys == 0 {
			t.Fatalf("slot 3, the second standby: %+v", st)
		}
		before := r.games[3].Stats()
		r.mu.Lock()
		r.resumed = map[uint64]uint32{}
		r.mu.Unlock()

		killed := time.Now()
		r.kill(0)
		time.Sleep(50 * time.Millisecond)
		r.kill(1)
		r.waitFor("slots 3 and 4 on slot 3's host", 5*time.Second, func() bool {
			ev := r.eventsOf(3)
			return r.peers[2].Stats().Promotions == 1 && hasEvent(r.eventsOf(2), EventPromoted) && len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed
		})
		promoted := eventAt(t, r.eventsOf(2), EventPromoted).Sub(killed)
		resumed := eventAt(t, r.eventsOf(3), EventResumed).Sub(killed)
		t.Logf("from the host's kill to: slot 3 promoted %v, slot 4 resumed %v (virtual; detection %v, promote timeout %v)",
			promoted, resumed, 1500*time.Millisecond, time.Second)
		if promoted > 4*time.Second || resumed > 4*time.Second {
			t.Fatalf("back in play %v / %v after the host's kill, want within 4 s", promoted, resumed)
		}
		time.Sleep(3 * time.Second)
		close(stop)
		r.checkEchoes()
		r.checkNoneMissing(2)
		for _, i := range []int{2, 3} {
			if st := r.peers[i].Stats(); st.Epoch != 3 {
				t.Fatalf("slot %d ends under epoch %d, want 3", i+1, st.Epoch)
			}
			if n := r.disconnects[i].Load(); n != 0 {
				t.Fatalf("slot %d's game saw %d disconnects", i+1, n)
			}
		}
		after := r.games[3].Stats()
		if after.Desyncs != 0 || r.games[2].Stats().Desyncs != 0 || after.ChecksumsOK <= before.ChecksumsOK+1 {
			t.Fatalf("slot 4 across the double failure: %+v (before %+v)", after, before)
		}
	})
}

// TestPeerCommitsRelayAndSuccessorDie: in virtual time, four peers play
// swarm in commits mode on the first one's relay (15 ms links); after
// 5 s the relay is cut off, and 50 ms later its first successor (slot
// 2) too. The two left elect slot 2, strike it off after the promote
// timeout and elect slot 3, the relay's second warm standby, whose
// relay adopts the game from its worlds: both commit again within 4 s
// of the first kill under epoch 3, their committed records are the same
// list, and every command they issued ran exactly once.
func TestPeerCommitsRelayAndSuccessorDie(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, end := playing(t, 4, 5*time.Second)
		killed := time.Now()
		r.kills[0].dead.Store(true)
		time.Sleep(50 * time.Millisecond)
		r.kills[1].dead.Store(true)
		r.within("the relay and its successor killed", r.backAfter(killed, []int{2, 3}, 5*time.Second), []int{2, 3}, 4*time.Second)
		if st := r.peers[2].Stats(); !st.Hosting || st.Epoch != 3 {
			t.Errorf("slot 3: hosting %v, epoch %d; want the relay of epoch 3", st.Hosting, st.Epoch)
		}
		time.Sleep(3 * time.Second)
		end([]int{2, 3})
	})
}
