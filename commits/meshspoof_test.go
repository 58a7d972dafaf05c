package commits

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/udptest"
)

// spoofer sends the datagrams forge picks with a forged source address
// (it hides udptest.Conn's WriteToUDPAddrPort, so that every write comes
// through WriteTo).
type spoofer struct {
	net.PacketConn
	uc     *udptest.Conn
	src    netip.AddrPort
	mu     sync.Mutex
	forge  func(b []byte) bool
	forged int // bytes sent from src
}

func (s *spoofer) WriteTo(b []byte, addr net.Addr) (int, error) {
	s.mu.Lock()
	forge := s.forge != nil && s.forge(b)
	if forge {
		s.forged += len(b)
	}
	s.mu.Unlock()
	if forge {
		return s.uc.WriteFrom(b, s.src, addr.(*net.UDPAddr).AddrPort())
	}
	return s.uc.WriteTo(b, addr)
}

func (p *commitPlayer) loaded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loads
}

func (s *spoofer) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forged
}

// victim counts the bytes that reach an address which never answers.
type victim struct {
	conns []*udptest.Conn
	bytes atomic.Int64
	each  [2]atomic.Int64 // per address (the first two)
	wg    sync.WaitGroup
}

func newVictim(t *testing.T, n *udptest.Network, addrs ...string) *victim {
	v := &victim{}
	for i, a := range addrs {
		c, err := n.Listen(a)
		if err != nil {
			t.Fatal(err)
		}
		v.conns = append(v.conns, c)
		v.wg.Go(func() {
			buf := make([]byte, proto.MaxPacketSizeLimit)
			for {
				k, _, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				v.bytes.Add(int64(k))
				if i < len(v.each) {
					v.each[i].Add(int64(k))
				}
			}
		})
	}
	return v
}

func (v *victim) close() {
	for _, c := range v.conns {
		c.Close()
	}
	v.wg.Wait()
}

// TestMeshSpoofedSourceReflection reproduces N1 and N2 of the attacker
// session: three honest players and two attackers play 40 s in the mesh
// (5 ms peer paths, 20 ms to the server). Attacker 4 forges its
// session's source (the victim, 10.0.1.99:5000) for 150 ms from its first
// data packet, while its client says hello to the mesh: the server's
// mesh address for it would be the victim's IP with the hello's port
// (N1). Attacker 5 joins the mesh honestly, then sends every mesh packet
// with the victim's address (10.0.1.99:6000) as its source: sealed with
// its pair keys, they would move it on the other players (N2). Checked:
// the victim receives at most 3× the bytes the attackers forged; the
// server never introduces the forged address (5 members, 10 pairs, one
// failed check, after which attacker 4's client says hello again from
// its own address); nobody sends to the victim as a peer, nobody moves
// attacker 5; the honest game goes on.
func TestMeshSpoofedSourceReflection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCommitRig(t, Config{})
		t.Cleanup(r.close)
		r.mesh = true
		r.meshLinks(5, 5*time.Millisecond)
		v := newVictim(t, r.net, "10.0.1.99:5000", "10.0.1.99:6000")
		defer v.close()
		var session, mesh *spoofer
		var attacker atomic.Pointer[commitPlayer]
		r.sessWrap = func(id uint64, pc *udptest.Conn) net.PacketConn {
			if id != 4 {
				return pc
			}
			var start time.Time
			session = &spoofer{PacketConn: pc, uc: pc, src: netip.MustParseAddrPort("10.0.1.99:5000"), forge: func(b []byte) bool {
				// From the first data packet after the state loaded: the
				// client says hello then.
				if t, _, err := proto.ParsePrefix(b); start.IsZero() && (err != nil || t != proto.PacketData || attacker.Load() == nil || attacker.Load().loaded() == 0) {
					return false
				}
				if start.IsZero() {
					start = time.Now()
				}
				return time.Since(start) < 150*time.Millisecond
			}}
			return session
		}
		var forgeMesh atomic.Bool
		r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
			if id != 5 {
				return pc
			}
			mesh = &spoofer{PacketConn: pc, uc: pc.(*udptest.Conn), src: netip.MustParseAddrPort("10.0.1.99:6000"),
				forge: func([]byte) bool { return forgeMesh.Load() }}
			return mesh
		}
		var ps []*commitPlayer
		for i := range 5 {
			ps = append(ps, r.dial(uint64(i+1), uint16(i+1), 20*time.Millisecond, ""))
			if i == 3 {
				attacker.Store(ps[3])
			}
		}
		time.Sleep(2 * time.Second)
		if m := ps[4].cc.Stats().Mesh; m.Reachable != 3 {
			t.Fatalf("attacker 5 is not in the mesh: %+v; host %+v; forged %d", m, r.hostStats(), session.sent())
		}
		forgeMesh.Store(true)
		runCommits(t, ps[:3], 40*time.Second)
		checkRecords(t, ps[:3])
		sent := session.sent() + mesh.sent()
		got := v.bytes.Load()
		st := r.hostStats()
		t.Logf("victim received %d bytes (%d at the session port, %d at the mesh port); the attackers forged %d (session %d, mesh %d): %.2f×",
			got, v.each[0].Load(), v.each[1].Load(), sent, session.sent(), mesh.sent(), float64(got)/float64(sent))
		t.Logf("host: checks %d, validated %d, failed %d, introductions %d", st.MeshChecks, st.MeshValidated, st.MeshCheckFailed, st.Introductions)
		if session.sent() == 0 || mesh.sent() == 0 {
			t.Fatal("nothing forged")
		}
		if got > 3*int64(sent) {
			t.Errorf("victim received %d bytes, more than 3× the %d forged", got, sent)
		}
		// Attacker 4's client said hello again from its own address
		// once its forged one failed the check: that one is its own.
		if st.MeshCheckFailed != 1 || st.MeshValidated != 5 || st.Introductions != 10 {
			t.Errorf("host %+v: want attacker 4's forged address refused, every real one in the mesh", st)
		}
		victimIP := netip.MustParseAddr("10.0.1.99")
		for _, p := range ps[:3] {
			m := p.cc.Stats().Mesh
			t.Logf("client %d: mesh %+v", p.id, m)
			if m.AddressChanges != 0 || m.AddressChecks == 0 || m.Links != 4 {
				t.Errorf("client %d moved attacker 5, or never checked its new address: %+v", p.id, m)
			}
			p.cc.mesh.mu.Lock()
			for _, peer := range p.cc.mesh.peers {
				if peer.addr.Addr() == victimIP || peer.introduced.Addr() == victimIP {
					t.Errorf("client %d sends peer %d to the victim (%v, introduced %v)", p.id, peer.conn, peer.addr, peer.introduced)
				}
			}
			p.cc.mesh.mu.Unlock()
		}
	})
}

// dropFrom discards the datagrams that arrive from one host while Drop
// is set.
type dropFrom struct {
	net.PacketConn
	from netip.Addr
	Drop atomic.Bool
}

func (d *dropFrom) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := d.PacketConn.ReadFrom(b)
		if ua, ok := addr.(*net.UDPAddr); err != nil || !ok || !d.Drop.Load() || ua.AddrPort().Addr().Unmap() != d.from {
			return n, addr, err
		}
	}
}

// TestMeshCheckRetried: every challenge the server sends to client 2's
// mesh address in its first check is lost. The check fails after 2 s,
// the client says hello again, the second check passes, and the pair
// reaches each other.
func TestMeshCheckRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCommitRig(t, Config{})
		t.Cleanup(r.close)
		r.mesh = true
		var lossy *dropFrom
		r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
			if id != 2 {
				return pc
			}
			lossy = &dropFrom{PacketConn: pc, from: commitServerAddr.Addr()}
			lossy.Drop.Store(true)
			return lossy
		}
		r.meshLinks(2, 5*time.Millisecond)
		ps := []*commitPlayer{r.dial(1, 1, 20*time.Millisecond, ""), r.dial(2, 2, 20*time.Millisecond, "")}
		time.Sleep(1500 * time.Millisecond)
		if st := r.hostStats(); st.MeshValidated != 1 || st.Introductions != 0 {
			t.Fatalf("host %+v: want client 1 validated, client 2 not yet", st)
		}
		lossy.Drop.Store(false)
		time.Sleep(2 * time.Second)
		checkMeshPair(t, r, ps, 3, 1)
	})
}

// checkMeshPair checks that the host checked the mesh addresses of the
// pair ps checks times, failed failed times, validated both and
// introduced them to each other, and that they reach each other.
func checkMeshPair(t *testing.T, r *commitRig, ps []*commitPlayer, checks, failed uint64) {
	t.Helper()
	st := r.hostStats()
	t.Logf("host: checks %d, validated %d, failed %d, introductions %d", st.MeshChecks, st.MeshValidated, st.MeshCheckFailed, st.Introductions)
	if st.MeshChecks != checks || st.MeshCheckFailed != failed || st.MeshValidated != 2 || st.Introductions != 1 {
		t.Errorf("host %+v", st)
	}
	for _, p := range ps {
		if m := p.cc.Stats().Mesh; m.Reachable != 1 {
			t.Errorf("client %d: mesh %+v", p.id, m)
		}
	}
}

// slowReader is a socket whose reader, while slow is set, takes each
// datagram late: a loaded machine that runs the client's loop late.
type slowReader struct {
	net.PacketConn
	late time.Duration
	slow atomic.Bool
}

func (s *slowReader) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := s.PacketConn.ReadFrom(b)
	if s.slow.Load() {
		time.Sleep(s.late)
	}
	return n, addr, err
}

// punchSignal is a mesh socket that runs onPunch when it first sends
// to the server: the punch that goes just before the hello.
type punchSignal struct {
	net.PacketConn
	onPunch func()
	once    sync.Once
}

func (p *punchSignal) WriteTo(b []byte, addr net.Addr) (int, error) {
	if ua, ok := addr.(*net.UDPAddr); ok && ua.AddrPort() == commitServerAddr {
		p.once.Do(p.onPunch)
	}
	return p.PacketConn.WriteTo(b, addr)
}

// TestMeshCheckBeforeKey: from its mesh hello on, client 2's session
// takes every datagram 500 ms late for a second (a loaded machine
// running its loop late), so the key of the server's check of its mesh
// address (on the session) comes after both challenges (sent to the
// mesh socket a round trip and 250 ms after the hello). The mesh keeps
// the newest challenge that came before its key and opens it when the
// key comes: the first check passes, no second hello, and the pair
// reaches each other (without it, the check failed and the client said
// hello again 2.25 s later).
func TestMeshCheckBeforeKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newMeshRig(t)
		slow := map[uint64]*slowReader{}
		r.sessWrap = func(id uint64, pc *udptest.Conn) net.PacketConn {
			slow[id] = &slowReader{PacketConn: pc, late: 500 * time.Millisecond}
			return slow[id]
		}
		late := func() {
			slow[2].slow.Store(true)
			time.AfterFunc(time.Second, func() { slow[2].slow.Store(false) })
		}
		r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
			if id == 2 {
				pc = &punchSignal{PacketConn: pc, onPunch: late}
			}
			return pc
		}
		r.meshLinks(2, 5*time.Millisecond)
		ps := []*commitPlayer{r.dial(1, 1, 20*time.Millisecond, ""), r.dial(2, 2, 20*time.Millisecond, "")}
		time.Sleep(2 * time.Second)
		checkMeshPair(t, r, ps, 2, 0)
	})
}
