package peerhost

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/migrate"
)

// cut cuts peer i (0-based) off the network, both ways and on all its
// sockets, for d, then mends its path: a player's own hiccup.
func (r *peerRig) cut(i int, d time.Duration) {
	r.kills[i].dead.Store(true)
	go func() {
		time.Sleep(d)
		r.kills[i].dead.Store(false)
	}()
}

// TestPeerPlayerHiccup: in virtual time, three peers play the arena on
// the first one's host (15 ms links) and exchange numbered echoes; the
// host keeps both others as warm standbys. One player's path is cut
// both ways, the host alive all along:
//
//   - slot 3, second in line, for 5 s: past its 1.5-s host liveness (it
//     loses the host, elects slot 2, which never announces itself
//     because the host is alive, then itself: it promotes, and nobody
//     follows) and past its own 3-s session timeout, within the host's
//     rejoin grace;
//   - slot 2, first in line, for 5 s: it promotes at once;
//   - slot 2 for 2 s: back while the host still has its session, which
//     the rejoin replaces.
//
// Once its path is back the player comes back to the host within a
// second, into its own slot, with its rejoin credential, keeping its
// game engine, and gives its promotion up: epoch 1 throughout, no
// desync, its game saw no disconnect and one EventRejoined; the others
// heard it interrupted and back, never left or joined, and their
// messages flowed meanwhile (once the host found it interrupted, it
// was out of the succession, and held nobody's messages back as a
// standby); the host counted one rejoin and no leave, did not step
// down, and has it back in its roster as a candidate and a warm
// standby, fed again; every echo came back exactly once, in order.
func TestPeerPlayerHiccup(t *testing.T) {
	for _, tc := range []struct {
		slot uint16
		cut  time.Duration
	}{{3, 5 * time.Second}, {2, 5 * time.Second}, {2, 2 * time.Second}} {
		t.Run(fmt.Sprintf("slot%d-%v", tc.slot, tc.cut), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testPlayerHiccup(t, tc.slot, tc.cut) })
		})
	}
}

func testPlayerHiccup(t *testing.T, slot uint16, hiccup time.Duration) {
	r := newPeerRig(t, 3)
	defer r.close()
	stop := r.echoing()
	stopEchoes := sync.OnceFunc(func() { close(stop) })
	defer stopEchoes()
	time.Sleep(4 * time.Second)
	cutOff := int(slot) - 1
	host := r.peers[0]
	before, pb := r.games[cutOff].Stats(), r.peers[cutOff].Stats()
	var hb game.HostStats
	host.srv.Do(func() { hb = host.host.Stats() })
	var heardBefore [3][game.NumEventKinds]int
	for i := range heardBefore {
		for k := range heardBefore[i] {
			heardBefore[i][k] = r.heard(i, slot, game.EventKind(k))
		}
	}

	cut := time.Now()
	r.cut(cutOff, hiccup)
	// Out of the succession once the host finds it interrupted, the
	// player holds back nobody's messages as a standby.
	time.Sleep(1500 * time.Millisecond)
	echoes := func() (n int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range r.peers {
			if i != cutOff {
				n += len(r.echoes[i])
			}
		}
		return n
	}
	during := echoes()
	time.Sleep(hiccup - 1500*time.Millisecond - 100*time.Millisecond)
	if n := echoes() - during; n < int(hiccup/time.Second) {
		t.Fatalf("the others got %d echoes while slot %d was cut", n, slot)
	}
	r.waitFor("back with the host", hiccup+5*time.Second, func() bool {
		return r.peers[cutOff].Stats().Rejoins == 1 && hasEvent(r.eventsOf(cutOff), EventRejoined)
	})
	back := eventAt(t, r.eventsOf(cutOff), EventRejoined)
	t.Logf("slot %d back with the host %v after its path was mended (%v after the cut); its events: %v",
		slot, back.Sub(cut.Add(hiccup)), back.Sub(cut), kinds(r.eventsOf(cutOff)))
	if d := back.Sub(cut.Add(hiccup)); d > time.Second {
		t.Fatalf("slot %d back %v after its path was mended, want within 1 s", slot, d)
	}
	if ks := kinds(r.eventsOf(cutOff)); slices.Contains(ks, EventSteppedDown) || slices.Contains(ks, EventResumed) {
		t.Fatalf("slot %d's events: %v", slot, ks)
	}
	time.Sleep(3 * time.Second)
	stopEchoes()
	r.checkEchoes()

	for i, p := range r.peers {
		if st := p.Stats(); st.Epoch != 1 {
			t.Fatalf("slot %d ends under epoch %d, want 1: %+v", i+1, st.Epoch, st)
		}
	}
	if st := r.peers[cutOff].Stats(); st.Hosting || st.Migrations != 0 || st.Abandoned != st.Promotions || st.StandbyState <= pb.StandbyState {
		t.Fatalf("slot %d after its hiccup: %+v", slot, st)
	}
	after := r.games[cutOff].Stats()
	if after.Desyncs != 0 || after.ChecksumsOK <= before.ChecksumsOK+1 || after.Events[game.EventRejoined] != 1 {
		t.Fatalf("slot %d's game across its hiccup: %+v (before %+v)", slot, after, before)
	}
	if n := r.disconnects[cutOff].Load(); n != 0 {
		t.Fatalf("slot %d's game saw %d disconnects", slot, n)
	}
	for i := range r.peers {
		if i == cutOff {
			continue
		}
		since := func(k game.EventKind) int { return r.heard(i, slot, k) - heardBefore[i][k] }
		in, bk := since(game.EventPlayerInterrupted), since(game.EventPlayerBack)
		left, joined := since(game.EventPlayerLeft), since(game.EventPlayerJoined)
		t.Logf("slot %d heard slot %d: interrupted %d, back %d, left %d, joined %d", i+1, slot, in, bk, left, joined)
		if in == 0 || bk == 0 || left != 0 || joined != 0 {
			t.Fatalf("slot %d heard slot %d interrupted %d, back %d, left %d, joined %d times", i+1, slot, in, bk, left, joined)
		}
		if st := r.games[i].Stats(); st.Desyncs != 0 || r.disconnects[i].Load() != 0 {
			t.Fatalf("slot %d's game: %+v", i+1, st)
		}
	}
	var ha game.HostStats
	var hm HostStats
	var member migrate.Member
	host.srv.Do(func() {
		ha, hm = host.host.Stats(), host.mig.Stats()
		member, _ = host.mig.roster.Member(slot)
	})
	if ha.Rejoins != hb.Rejoins+1 || ha.Leaves != hb.Leaves || ha.Joins != hb.Joins {
		t.Fatalf("host across the hiccup: %d rejoins, %d leaves, %d joins (before %d, %d, %d)",
			ha.Rejoins, ha.Leaves, ha.Joins, hb.Rejoins, hb.Leaves, hb.Joins)
	}
	if hm.SteppedDown || hm.MigrateLeave != 0 || hm.Standbys != 2 || !member.Candidate {
		t.Fatalf("host migration across the hiccup (slot %d in the roster: %+v): %+v", slot, member, hm)
	}
}

// kinds lists the kinds of events.
func kinds(events []Event) []EventKind {
	ks := make([]EventKind, len(events))
	for i, e := range events {
		ks[i] = e.Kind
	}
	return ks
}

// TestPeerCutAcrossMigration: in virtual time, three peers play on the
// first one's host and exchange numbered echoes; slot 3's path is cut,
// and half a second later the host is cut off for good. Slot 2, the
// standby, takes over as usual. Slot 3 lost the host to its own cut
// first; once its path is back it dials slot 2 with the token the old
// host gave it and resumes there, in its own slot (within the
// successor's wait for it: no join). With a cut of 1.2 s it is back
// before its own election even started: it follows slot 2 as it always
// did. With a cut of 3 s (slot 3 offered no host port here) its
// election struck slot 2 off, unable to reach it, and found nobody
// else; still trying to rejoin the old host, it tries slot 2 again and
// finds it. Both end under epoch 2, in sync, every echo back once.
func TestPeerCutAcrossMigration(t *testing.T) {
	for _, tc := range []struct {
		cut   time.Duration
		hosts int
	}{{1200 * time.Millisecond, 3}, {3 * time.Second, 2}} {
		t.Run(tc.cut.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newPeerRigHosts(t, 3, tc.hosts)
				defer r.close()
				stop := r.echoing()
				stopEchoes := sync.OnceFunc(func() { close(stop) })
				defer stopEchoes()
				time.Sleep(4 * time.Second)
				start := time.Now()
				r.cut(2, tc.cut)
				time.Sleep(500 * time.Millisecond)
				r.kill(0)
				r.waitFor("slot 3 on slot 2's host", 10*time.Second, func() bool {
					ev := r.eventsOf(2)
					return len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed && ev[len(ev)-1].Epoch == 2
				})
				resumed := eventAt(t, r.eventsOf(2), EventResumed)
				t.Logf("slot 3 resumed on slot 2 %v after its path was mended (%v after the host's kill); its events: %v",
					resumed.Sub(start.Add(tc.cut)), resumed.Sub(start.Add(500*time.Millisecond)), kinds(r.eventsOf(2)))
				time.Sleep(2 * time.Second)
				stopEchoes()
				r.checkEchoes()
				var hst game.HostStats
				r.peers[1].srv.Do(func() { hst = r.peers[1].host.Stats() })
				if hst.Joins != 0 {
					t.Fatalf("the new host counted %d joins, want none: slot 3 resumed", hst.Joins)
				}
				for _, i := range []int{1, 2} {
					if st := r.peers[i].Stats(); st.Epoch != 2 {
						t.Fatalf("slot %d ends under epoch %d: %+v", i+1, st.Epoch, st)
					}
					if st := r.games[i].Stats(); st.Desyncs != 0 || r.disconnects[i].Load() != 0 {
						t.Fatalf("slot %d's game: %+v, %d disconnects", i+1, st, r.disconnects[i].Load())
					}
				}
			})
		})
	}
}
