package commits

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
	"github.com/tickwire/tickwire/udp/udptest"
)

// meshLinks sets 10 ms one-way between every two of n clients (their
// own addresses 10.0.1.x): the peer paths, shorter than the server's.
func (r *commitRig) meshLinks(n int, oneway time.Duration) {
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			if i != j {
				r.net.SetLink(netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", i)), netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", j)), udptestLink(oneway))
			}
		}
	}
}

// delays are, for every command and every client other than its
// issuer, the time from issue to the command first reaching that
// client's live world.
func delays(ps []*commitPlayer) []time.Duration {
	return shownDelays(ps, time.Time{}, time.Unix(1<<40, 0))
}

// meshRun plays four clients 60 ms (and 5 % loss each way) from the
// server, with or without the mesh (peer paths 10 ms, 5 % loss), and
// returns the issue-to-screen delays on the other clients.
func meshRun(t *testing.T, mesh bool) ([]time.Duration, []*commitPlayer, *commitRig) {
	r := newCommitRig(t, Config{})
	t.Cleanup(r.close)
	r.mesh = mesh
	loss, _ := netem.Parse("loss 5%")
	r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
		return netem.Wrap(pc, netem.Config{Egress: loss, Seed: 50 + id})
	}
	r.meshLinks(4, 10*time.Millisecond)
	var ps []*commitPlayer
	for i := range 4 {
		ps = append(ps, r.dial(uint64(i+1), uint16(i+1), 60*time.Millisecond, "loss 5%"))
	}
	time.Sleep(3 * time.Second) // paths measured, the lead settled
	runCommits(t, ps, 20*time.Second)
	checkRecords(t, ps)
	return delays(ps), ps, r
}

// TestMeshShortensTheWay: with the mesh, a command reaches the
// other clients' screens in well under the time it takes through the
// server (the lead follows the 10 ms peer paths instead of the 60 ms
// server paths), the committed worlds agree, and no command runs twice.
func TestMeshShortensTheWay(t *testing.T) {
	var without, with []time.Duration
	var meshed []ClientStats // read before the cleanup closes the clients
	var host HostStats
	synctest.Test(t, func(t *testing.T) {
		without, _, _ = meshRun(t, false)
	})
	synctest.Test(t, func(t *testing.T) {
		var r *commitRig
		var ps []*commitPlayer
		with, ps, r = meshRun(t, true)
		host = r.hostStats()
		for _, p := range ps {
			meshed = append(meshed, p.cc.Stats())
		}
	})
	if len(without) < 100 || len(with) < 100 {
		t.Fatalf("%d and %d delays", len(without), len(with))
	}
	m0, m1 := without[len(without)/2], with[len(with)/2]
	t.Logf("issue to another screen: p50 %v without the mesh, %v with it (p90 %v, %v)", m0, m1, without[len(without)*9/10], with[len(with)*9/10])
	if m1 > m0*6/10 {
		t.Errorf("the mesh cut the median only from %v to %v (want at least 40 %%)", m0, m1)
	}
	if host.Desyncs != 0 || host.Introductions != 6 {
		t.Errorf("host %+v", host)
	}
	for i, st := range meshed {
		m := st.Mesh
		t.Logf("client %d: lead %d, mesh %+v", i+1, st.Lead, m)
		if m.Reachable != 3 || m.ShortcutsUseful == 0 || st.Discarded != 0 || st.Desyncs != 0 {
			t.Errorf("client %d: %+v", i+1, st)
		}
	}
}

// blockPeer drops the datagrams a client sends to one peer's mesh
// socket: that pair cannot reach each other.
type blockPeer struct {
	net.PacketConn
	to netip.Addr
}

func (b blockPeer) WriteTo(p []byte, addr net.Addr) (int, error) {
	if ua, ok := addr.(*net.UDPAddr); ok && ua.AddrPort().Addr().Unmap() == b.to {
		return len(p), nil
	}
	return b.PacketConn.WriteTo(p, addr)
}

// TestMeshPairUnreachable: clients 1 and 2 cannot reach each other; the
// game plays on, that pair over the reliable pipeline, the others
// through the mesh.
func TestMeshPairUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCommitRig(t, Config{})
		t.Cleanup(r.close)
		r.mesh = true
		r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
			switch id {
			case 1:
				return blockPeer{pc, netip.MustParseAddr("10.0.1.2")}
			case 2:
				return blockPeer{pc, netip.MustParseAddr("10.0.1.1")}
			}
			return pc
		}
		r.meshLinks(3, 10*time.Millisecond)
		var ps []*commitPlayer
		for i := range 3 {
			ps = append(ps, r.dial(uint64(i+1), uint16(i+1), 40*time.Millisecond, ""))
		}
		runCommits(t, ps, 10*time.Second)
		checkRecords(t, ps)
		for i, want := range []int{1, 1, 2} {
			if m := ps[i].cc.Stats().Mesh; m.Links != 2 || m.Reachable != want {
				t.Errorf("client %d: %d of %d peers reachable, want %d", i+1, m.Reachable, m.Links, want)
			}
		}
		if st := r.hostStats(); st.Desyncs != 0 {
			t.Errorf("host %+v", st)
		}
	})
}

// recordSends keeps a copy of every datagram a client's mesh sends.
type recordSends struct {
	net.PacketConn
	mu   sync.Mutex
	sent [][]byte
}

func (c *recordSends) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	c.sent = append(c.sent, slices.Clone(p))
	c.mu.Unlock()
	return c.PacketConn.WriteTo(p, addr)
}

// TestMeshDropsForgeries: a mesh accepts only sealed, fresh packets of
// the peers the server introduced: garbage, a packet naming no peer,
// one sealed with another key and a replayed one are dropped and
// counted.
func TestMeshDropsForgeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCommitRig(t, Config{})
		t.Cleanup(r.close)
		r.mesh = true
		rec := &recordSends{}
		r.meshWrap = func(id uint64, pc net.PacketConn) net.PacketConn {
			if id == 2 {
				rec.PacketConn = pc
				return rec
			}
			return pc
		}
		r.meshLinks(2, 5*time.Millisecond)
		ps := []*commitPlayer{r.dial(1, 1, 20*time.Millisecond, ""), r.dial(2, 2, 20*time.Millisecond, "")}
		time.Sleep(2 * time.Second)
		if m := ps[0].cc.Stats().Mesh; m.Reachable != 1 {
			t.Fatalf("mesh %+v", m)
		}
		eve, err := r.net.Listen("10.0.9.9:6000")
		if err != nil {
			t.Fatal(err)
		}
		target := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.1.1:6000"))
		send := func(b []byte) {
			if _, err := eve.WriteTo(b, target); err != nil {
				t.Fatal(err)
			}
		}
		send([]byte("not a tickwire packet"))
		var k1, k2 [proto.KeySize]byte
		k1[0] = 1
		stranger, _ := session.NewMeshLink(0xdead, 0xdead, &k1, &k2)
		send(stranger.Append(nil, 1, nil))
		rec.mu.Lock()
		peer2 := ps[1].cc.Client().ConnID()
		last := slices.Clone(rec.sent[len(rec.sent)-1])
		rec.mu.Unlock()
		for range 100 {
			stranger.Append(nil, 1, nil) // past the numbers the peer used
		}
		forger, _ := session.NewMeshLink(peer2, peer2, &k1, &k2)
		for range 1000 {
			forger.Append(nil, 1, nil)
		}
		send(forger.Append(nil, 1, nil))
		// Virtual time: the original of last (5 ms away) has long arrived.
		time.Sleep(time.Second)
		send(last)
		synctest.Wait() // eve's datagrams arrive at once: the mesh has read them all
		d := ps[0].cc.Stats().Mesh.Dropped
		if d[tickwire.DropMalformed] != 1 || d[tickwire.DropUnknownConn] != 1 || d[tickwire.DropAuth] != 1 || d[tickwire.DropReplay] != 1 {
			t.Errorf("dropped %v, want one malformed, one unknown, one forged, one replayed", d)
		}
		if m := ps[0].cc.Stats().Mesh; m.Reachable != 1 || m.AddressChanges != 0 {
			t.Errorf("the forgeries moved the mesh: %+v", m)
		}
	})
}

func udptestLink(oneway time.Duration) udptest.Link { return udptest.Link{Latency: oneway} }

// nopBatchConn drops what is written and blocks reads until closed.
type nopBatchConn struct{ closed chan struct{} }

func (c nopBatchConn) ReadBatch([]udp.Message) (int, error) { <-c.closed; return 0, net.ErrClosed }
func (c nopBatchConn) WriteBatch(m []udp.Message) (int, error) {
	return len(m), nil
}
func (c nopBatchConn) LocalAddr() netip.AddrPort { return netip.MustParseAddrPort("10.0.1.1:6000") }
func (c nopBatchConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// TestMeshHotPathAllocs: sending a shortcut to the peers and taking one
// in allocate nothing.
func TestMeshHotPathAllocs(t *testing.T) {
	delivered := 0
	m := newClientMesh(nopBatchConn{make(chan struct{})}, time.Now, func(*proto.CommandFrame, uint32, time.Time) { delivered++ }, nil)
	defer m.close()
	m.reset(1)
	var ab, ba [proto.KeySize]byte
	ab[0], ba[0] = 1, 2
	peerAddr := netip.MustParseAddrPort("10.0.1.2:6000")
	if err := m.add(&proto.MeshIntroFrame{Op: proto.MeshAdd, Conn: 2, Addr: peerAddr, Players: []uint16{2}, SendKey: ab, RecvKey: ba}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.peers[2].reachable = true
	m.mu.Unlock()
	cmd := proto.CommandFrame{Kind: proto.CommandInput, Player: 2, Tick: 9, Seq: 1, Data: []byte{1, 2, 3, 4}}
	frame, _ := cmd.Append(nil)
	peer, _ := session.NewMeshLink(2, 1, &ba, &ab)
	pkts := make([][]byte, 300)
	for i := range pkts {
		pkts[i] = peer.Append(nil, 9, frame)
	}
	for _, p := range pkts[:100] {
		m.receive(p, peerAddr)
		m.broadcast(frame, 9)
	}
	i := 100
	if n := testing.AllocsPerRun(100, func() {
		m.receive(pkts[i], peerAddr)
		i++
		m.broadcast(frame, 9)
	}); n != 0 {
		t.Errorf("%v allocations per shortcut sent and received", n)
	}
	if delivered != 201 {
		t.Errorf("%d shortcuts delivered, want 201", delivered)
	}
}

// TestMeshReachedOncePerPeer: three clients in the mesh; the third
// loses its session's path for 12 s, past the session timeout, and
// rejoins on a new connection, which the server introduces again. Each
// of the first two reaches the third again, and still counts two peers
// reached: a peer is its players, not its connections.
func TestMeshReachedOncePerPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newMeshRig(t)
		r.rejoin = true
		cut := r.cutSession(3)
		r.meshLinks(3, 5*time.Millisecond)
		var players []*commitPlayer
		for id := uint64(1); id <= 3; id++ {
			players = append(players, r.dial(id, uint16(id), 10*time.Millisecond, ""))
		}
		time.Sleep(2 * time.Second)
		conn := players[2].cc.Stats().Connection
		cut.Cut.Store(true)
		time.Sleep(12 * time.Second)
		cut.Cut.Store(false)
		time.Sleep(5 * time.Second)
		if st := players[2].cc.Stats(); st.Connection == conn {
			t.Fatalf("the third client is still on connection %d", conn)
		}
		if st := r.hostStats(); st.Introductions < 4 {
			t.Fatalf("host %+v: want the third client introduced again", st)
		}
		for _, p := range players[:2] {
			if m := p.cc.Stats().Mesh; m.Reachable != 2 || m.Reached != 2 {
				t.Errorf("client %d: mesh %+v, want 2 peers reachable, 2 reached", p.id, m)
			}
		}
	})
}
