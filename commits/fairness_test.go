package commits

import (
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/udptest"
)

// dropDisconnects loses every disconnect packet a client sends (all
// three copies, as a burst of loss would).
type dropDisconnects struct{ net.PacketConn }

func (d dropDisconnects) WriteTo(b []byte, addr net.Addr) (int, error) {
	if t, _, err := proto.ParsePrefix(b); err == nil && t == proto.PacketDisconnect {
		return len(b), nil
	}
	return d.PacketConn.WriteTo(b, addr)
}

// TestCommitsCleanLeave: four clients 1 ms from the server; one closes
// its client at tick 300, and its disconnect packets are lost. Its leave
// is a command in the buffer like a join: nobody waits for it (no kick,
// no state sent to it), the others' committed tick never stalls 100 ms,
// and their lead does not move. (Before the leave was a command, the
// server waited for the connection's timeout and kicked the leaver: the
// others stalled about 900 ms.)
func TestCommitsCleanLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCommitRig(t, Config{})
		t.Cleanup(r.close)
		r.sessWrap = func(id uint64, pc *udptest.Conn) net.PacketConn {
			if id == 4 {
				return dropDisconnects{pc}
			}
			return pc
		}
		var ps []*commitPlayer
		for i := range 4 {
			ps = append(ps, r.dial(uint64(i+1), uint16(i+1), time.Millisecond, ""))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, p := range ps[:3] {
			wg.Go(func() { p.play(t, stop) })
		}
		for ps[3].cc.Stats().Live < 300 {
			time.Sleep(time.Second / commitRate / 2)
		}
		before := make([]ClientStats, 3)
		for i, p := range ps[:3] {
			before[i] = p.cc.Stats()
			p.mu.Lock()
			p.cc.mu.Lock()
			p.cc.stats.StallMax = 0 // from the leave on
			p.cc.mu.Unlock()
			p.mu.Unlock()
		}
		ps[3].cc.Close()
		leads := map[int]int{}
		for range 5 * commitRate {
			time.Sleep(time.Second / commitRate)
			for _, p := range ps[:3] {
				leads[p.cc.Stats().Lead]++
			}
		}
		close(stop)
		wg.Wait()
		time.Sleep(time.Second)
		checkRecords(t, ps[:3])
		st := r.hostStats()
		t.Logf("host %+v; leads seen after the leave %v", st, leads)
		if st.Kicks != 0 || st.Resyncs != 0 || st.Leaves != 1 {
			t.Errorf("host %+v: want one leave, no kick, no state sent", st)
		}
		for i, p := range ps[:3] {
			s := p.cc.Stats()
			t.Logf("client %d: longest stall after the leave %v, lead %d before, %d after", p.id, s.StallMax, before[i].Lead, s.Lead)
			if s.StallMax >= 100*time.Millisecond {
				t.Errorf("client %d: committed tick stalled %v after the leave", p.id, s.StallMax)
			}
			if s.Lead != before[i].Lead {
				t.Errorf("client %d: lead %d → %d", p.id, before[i].Lead, s.Lead)
			}
		}
		if len(leads) != 1 {
			t.Errorf("the lead moved after the leave: %v", leads)
		}
	})
}
