package tickwire

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/internal/race"
	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// discardConn is a BatchConn that keeps the last batch written.
type discardConn struct {
	last []udp.Message
}

func (d *discardConn) ReadBatch([]udp.Message) (int, error) { select {} }
func (d *discardConn) WriteBatch(m []udp.Message) (int, error) {
	d.last = append(d.last[:0], m...)
	return len(m), nil
}
func (d *discardConn) LocalAddr() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:7777") }
func (d *discardConn) Close() error              { return nil }

// clientEnd is the client's side of a loopPair: a bare session whose
// handler counts the messages it receives.
type clientEnd struct {
	received int
	out      [][]byte
	bufs     [][]byte // one per packet of a tick (a tick may send copies after its packet)
}

func (c *clientEnd) Message(*Message, *PacketInfo)                      { c.received++ }
func (c *clientEnd) Frame(proto.FrameType, []byte, *PacketInfo) error   { return nil }
func (c *clientEnd) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte { return b }
func (c *clientEnd) Delivered(uint64)                                   {}
func (c *clientEnd) Lost(uint64)                                        {}
func (c *clientEnd) Buffer() []byte                                     { return c.bufs[len(c.out)][:0] }
func (c *clientEnd) Emit(b []byte)                                      { c.out = append(c.out, b) }

// loopPair is a server with one connection and the client's session,
// exchanging packets through memory.
type loopPair struct {
	srv    *Server
	conn   *discardConn
	sc     *Conn
	client *session.Session
	end    clientEnd
	addr   netip.AddrPort
	now    time.Time
}

func newLoopPair(t testing.TB) *loopPair {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(newEchoHandler())
	dc := &discardConn{}
	s.conn, s.out.conn = dc, dc
	now := time.Now()
	var priv proto.TokenPrivate
	priv.ClientID, priv.PlayerCount, priv.Players[0] = 1, 1, 1
	priv.ClientToServerKey[0], priv.ServerToClientKey[0] = 1, 2
	addr := netip.MustParseAddrPort("127.0.0.1:40000")
	sc, err := s.newConn(s.newConnID(), &priv, 1, addr, now, &priv.ClientToServerKey, &priv.ServerToClientKey)
	if err != nil {
		t.Fatal(err)
	}
	p := &loopPair{srv: s, conn: dc, sc: sc, addr: addr, now: now}
	p.end.bufs = make([][]byte, 8)
	for i := range p.end.bufs {
		p.end.bufs[i] = make([]byte, 0, proto.MaxPacketSizeLimit)
	}
	p.client, err = session.New(session.Config{ID: sc.id, MaxPacket: s.cfg.MaxPacketSize,
		TxKey: &priv.ClientToServerKey, RxKey: &priv.ServerToClientKey,
		Heartbeat: s.cfg.Heartbeat, Timeout: s.cfg.Timeout, Handler: &p.end}, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// round sends one client packet carrying msgs to the server, runs one
// server tick (whose echo handler answers) and delivers the server's
// packets to the client session.
func (p *loopPair) round(t testing.TB, msg []byte, reliable bool) {
	if reliable {
		// kcp-go reads the process clock: advance it (virtual inside a
		// synctest bubble).
		time.Sleep(time.Second / 60)
		p.now = time.Now()
	} else {
		p.now = p.now.Add(time.Second / 60)
	}
	if reliable {
		p.client.Send(Reliable, 1, false, 0, msg)
	}
	p.client.Send(Sequenced, 2, true, 99, msg)
	p.end.out = p.end.out[:0]
	p.client.Tick(p.now, Ticks{}, session.SendAlways, &p.end)
	for _, pkt := range p.end.out {
		p.srv.receiveDatagram(pkt, p.addr.Addr(), p.addr.Port(), p.now)
	}
	p.srv.tick(p.now)
	p.srv.out.flush()
	for _, m := range p.conn.last {
		h, _, err := proto.ParseHeader(m.Buf)
		if err != nil {
			t.Fatal(err)
		}
		pn, payload, drop, ok := p.client.Open(m.Buf, &h)
		if !ok {
			t.Fatalf("client dropped server packet: %v", drop)
		}
		if err := p.client.Receive(p.now, &h, pn, len(m.Buf), payload); err != nil {
			t.Fatal(err)
		}
	}
}

// TestZeroAllocsPerPacket runs the steady state of a connection (a client
// packet with a sequenced, postmarked message in, the server's echo packet
// out, both sealed, acked and opened) and asserts nothing allocates. With a
// reliable message too, the only allocations are kcp-go's own: 4 per KCP
// segment (its sync.Pool boxes a slice header on every Put, and its
// receive heap boxes segments), pinned here so that any of ours shows.
func TestZeroAllocsPerPacket(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reliable bool
		max      float64
	}{{"unreliable", false, 0}, {"reliable", true, 2 * 4}} {
		synctest.Test(t, func(t *testing.T) {
			p := newLoopPair(t)
			msg := make([]byte, 200)
			for range 200 { // warm up: buffers grow to their steady size
				p.round(t, msg, tc.reliable)
			}
			before := p.end.received
			allocs := testing.AllocsPerRun(500, func() { p.round(t, msg, tc.reliable) })
			if allocs > tc.max && !(race.Enabled && tc.reliable) {
				t.Fatalf("%.1f allocations per round trip, want at most %v", allocs, tc.max)
			}
			want := 500
			if tc.reliable {
				want = 1000
			}
			if got := p.end.received - before; got < want {
				t.Fatalf("client received %d echoed messages in 500 rounds, want at least %d", got, want)
			}
		})
	}
}

func BenchmarkServerRoundTrip(b *testing.B) {
	p := newLoopPair(b)
	msg := make([]byte, 200)
	for range 200 {
		p.round(b, msg, false)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.round(b, msg, false)
	}
}
