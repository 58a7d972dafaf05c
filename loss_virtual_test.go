package tickwire

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp/netem"
)

// TestNoResyncUnderLossAndReordering: eight players for 25 s over a
// 30 ms link with "delay 60ms 30ms loss 12% duplicate 3% reorder 8%" each
// way need no resync and never desync. Loss and reordering alone must not
// force one: a delta that arrives after newer ones still finds its
// baselines (the replica keeps twice the server ring's revisions). With a
// history the size of the ring, this run needed 20 resyncs, all for
// missing baselines of late frames.
func TestNoResyncUnderLossAndReordering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, err := netem.Parse("delay 60ms 30ms loss 12% duplicate 3% reorder 8%")
		if err != nil {
			t.Fatal(err)
		}
		r := newGameRigLink(t, GameConfig{}, 30*time.Millisecond, func(pc net.PacketConn, seed uint64) net.PacketConn {
			return netem.Wrap(pc, netem.Config{Egress: sp, Seed: seed})
		})
		defer r.close()
		var gcs []*GameClient
		for i := range 8 {
			c, gc := r.dial(uint64(i+1), uint16(i+1), nil)
			defer c.Close()
			gcs = append(gcs, gc)
		}
		time.Sleep(25 * time.Second)
		r.waitSynced("after 25 s of loss and reordering", checksummed(10), gcs...)
		for i, gc := range gcs {
			if st := gc.Stats(); st.Resyncs != 0 || st.Desyncs != 0 || st.FullSnapshots != 1 {
				t.Errorf("client %d: %d resyncs, %d desyncs, %d full snapshots", i+1, st.Resyncs, st.Desyncs, st.FullSnapshots)
			}
		}
		if st := r.hostStats(); st.Resyncs != 0 || st.Desyncs != 0 {
			t.Errorf("host %+v", st)
		}
	})
}
