package peerhost

import (
	"encoding/binary"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/migrate"
)

// TestPeerStandbyBehind: in virtual time, three peers play on the first
// one's host (15 ms links) and exchange numbered echoes. The host's
// queue to its first standby (slot 2) is filled until it refuses a
// frame, and at once the host sends player 3 a message on its stream,
// whose copy slot 2's queue refuses. Slot 2 falls behind
// (HostStats.StandbyBehind): the host sends it every stream again once
// its queue takes it, and releases the message only then — without
// that, the message went out at slot 2's next ack, and slot 2, which
// would take over, did not know player 3 had it. Then the host is cut
// off: the players follow slot 2 and every echo came back exactly once,
// in order.
func TestPeerStandbyBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, srv, mig := settledTrio(t)
		defer r.close()
		var seq uint32
		var err error
		srv.Do(func() {
			w := mig.primary()
			if ps := w.c.Players(); ps[0] != 2 {
				t.Errorf("the first standby is slot %d, want 2", ps[0])
			}
			f := mig.roster.Frame()
			b, _ := f.Append(nil)
			for w.c.SendFrame(b) == nil {
			}
			// The echo of player 3's next number, as if it had sent it.
			r.mu.Lock()
			n := r.sent[2]
			r.sent[2]++
			r.mu.Unlock()
			err = mig.send(mig.connOf(3), 7, binary.LittleEndian.AppendUint32(nil, n))
			seq = mig.streams[3].outSeq
		})
		if err != nil {
			t.Fatal(err)
		}
		r.waitFor("player 3 has the message", 5*time.Second, func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.echoes[2]) == int(r.sent[2])
		})
		sb := r.peers[1]
		sb.mu.Lock()
		held := sb.streams[3] != nil && int32(sb.streams[3].outSeq-seq) >= 0
		sb.mu.Unlock()

		if st := r.peers[0].Stats().Host; !held || st.StandbyBehind == 0 {
			t.Fatalf("player 3 has message %d of its stream, its copy at slot 2: %v; standbys behind: %d", seq, held, st.StandbyBehind)
		}
		stop := r.echoing()
		time.Sleep(time.Second)
		r.kill(0)
		r.waitResumedOn(2, 1, 5*time.Second)
		time.Sleep(time.Second)
		close(stop)
		r.checkEchoes()
	})
}

// TestPeerNewStandbyIdleStreams: in virtual time, five peers play on the
// first one's host (15 ms links) and exchange numbered echoes, then
// stop: every stream is idle, every message received. Slot 2, the first
// standby, is cut off: slot 4 becomes a standby then, with nothing to
// copy but how far each stream went. Then the host and slot 3 are cut
// off: slot 4 promotes from its standby and slot 5 follows it. The
// echoes go on and every one comes back exactly once, in order: slot 4
// numbers its messages to each player past what the player received
// (without the receipt in the copy it numbered them from 1 again, and
// the players dropped them as received already).
func TestPeerNewStandbyIdleStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 5)
		defer r.close()
		r.echoesFor(3 * time.Second)
		r.kill(1)
		r.waitOrDump("slot 4 a warm standby", 5*time.Second, func() bool {
			st := r.peers[3].Stats()
			return st.StandbyState > 0 && r.peers[0].Stats().Host.Standbys == 2
		})
		time.Sleep(500 * time.Millisecond)
		r.kill(0)
		r.kill(2)
		r.waitResumedOn(4, 3, 8*time.Second)
		if st := r.peers[3].Stats(); st.ColdPromotions != 0 {
			t.Fatalf("slot 4 promoted cold: %+v", st)
		}
		r.echoesFor(2 * time.Second)
	})
}

// TestPeerFormerStandbyPromotesCold: in virtual time, five peers play on
// the first one's host (15 ms links). Slot 2, the first standby, is cut
// off for 2.5 s: the host leaves it out of the succession once it is
// silent, and feeds slot 4 as a standby; once slot 2 is back, slot 2 is
// a standby again and slot 4 is told it is fed no more
// (proto.ControlStandbyEnd): it drops its standby. 2 s later the host
// and slots 2 and 3 are cut off: slots 4 and 5 strike 2 and 3 off and
// elect slot 4, which promotes cold, from its player's confirmed state,
// not from its standby of 2 s before (without the control it did, and
// the game stepped back by those 2 s). Slot 5 plays on with it.
// And a standby of an older epoch than the host lost is not promoted
// either (the host lost did not feed it).
func TestPeerFormerStandbyPromotesCold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 5)
		defer r.close()
		time.Sleep(2 * time.Second)
		r.cut(1, 2500*time.Millisecond)
		r.waitOrDump("slot 4 a standby", 3*time.Second, func() bool { return r.peers[3].Stats().StandbyState > 0 })
		r.waitOrDump("slot 4 a standby no more", 5*time.Second, func() bool { return r.peers[3].Stats().StandbyEnds > 0 })
		p4 := r.peers[3]
		p4.mu.Lock()
		_, ready := p4.standby.Ready()
		p4.mu.Unlock()
		if ready {
			t.Fatal("slot 4 kept its standby after its end")
		}
		time.Sleep(2 * time.Second)
		for _, i := range []int{0, 1, 2} {
			r.kill(i)
		}
		r.waitResumedOn(4, 3, 8*time.Second)
		if st := r.peers[3].Stats(); st.ColdPromotions != 1 {
			t.Fatalf("slot 4 promoted from its old standby, not cold: %+v", st)
		}

		// Slot 5, loaded as slot 4's standby under epoch 4, would not take
		// over from the host of another epoch.
		p5 := r.peers[4]
		r.waitOrDump("slot 5 a standby", 3*time.Second, func() bool { return p5.Stats().StandbyState > 0 })
		p5.mu.Lock()
		_, _, err := p5.mode.takeOver(time.Now(), p5.standby.Epoch()+1)
		_, ready = p5.standby.Ready()
		p5.mu.Unlock()
		if !errors.Is(err, migrate.ErrNotLoaded) || ready {
			t.Fatalf("slot 5's standby of epoch 4 for a host of epoch 5: %v, ready %v", err, ready)
		}
	})
}
