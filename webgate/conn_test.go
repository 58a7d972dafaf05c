package webgate

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/internal/race"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// packetOf returns an n-byte message that passes for a tickwire packet
// (a valid prefix; the server judges the rest).
func packetOf(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	b[0], b[1], b[2], b[3] = proto.Magic0, proto.Magic1, proto.Version, byte(proto.PacketKeepAlive)
	return b
}

// newGate wraps a loopback UDP socket.
func newGate(t *testing.T, cfg Config) *Conn {
	t.Helper()
	u, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(u, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newMsgs(n int) []udp.Message {
	m := make([]udp.Message, n)
	for i := range m {
		m[i].Buf = make([]byte, proto.MaxPacketSizeLimit+1)
	}
	return m
}

// readResult is what a ReadBatch returned.
type readResult struct {
	n   int
	err error
}

// readAsync starts one ReadBatch on its own goroutine.
func readAsync(c *Conn, msgs []udp.Message) <-chan readResult {
	got := make(chan readResult, 1)
	go func() {
		n, err := c.ReadBatch(msgs)
		got <- readResult{n, err}
	}()
	return got
}

// readOne reads until a batch arrives or the deadline passes.
func readOne(t *testing.T, c *Conn, msgs []udp.Message) int {
	t.Helper()
	select {
	case r := <-readAsync(c, msgs):
		if r.err != nil {
			t.Fatalf("ReadBatch: %v", r.err)
		}
		return r.n
	case <-time.After(10 * time.Second):
		t.Fatal("ReadBatch did not return")
	}
	return 0
}

func TestLinkAddrRoundTrip(t *testing.T) {
	for _, tr := range []Transport{WebTransport, WebSocket} {
		for _, id := range []uint32{1, 2, 0xffffffff, 0x01020304} {
			a := linkAddr(tr, id)
			gid, gt, ok := parseLinkAddr(a)
			if !ok || gid != id || gt != tr || TransportOf(a) != tr {
				t.Errorf("linkAddr(%v, %d) = %v parses as %d %v %v", tr, id, a, gid, gt, ok)
			}
		}
	}
	for _, s := range []string{"127.0.0.1:7777", "[::1]:7777", "[100::1]:1", "[100::ff00:0:1]:1", "[::ffff:1.2.3.4]:5"} {
		if a := netip.MustParseAddrPort(s); TransportOf(a) != UDP {
			t.Errorf("%v is taken for a link", a)
		}
	}
}

// TestReadBatchWakesForLink: a packet a browser delivers while the reader
// is blocked on the socket comes out of that read, under the link's
// address; UDP datagrams still come through.
func TestReadBatchWakesForLink(t *testing.T) {
	c := newGate(t, Config{})
	l, err := c.Open(WebSocket, netip.MustParseAddr("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := newMsgs(8)
	got := readAsync(c, msgs)
	// Deliver until the read returns: the first delivery may come before
	// the reader blocks; either way the read must end.
	want := packetOf(100, 7)
	var r readResult
	deadline := time.After(10 * time.Second)
wait:
	for {
		if err := l.Deliver(want); err != nil {
			t.Fatal(err)
		}
		select {
		case r = <-got:
			break wait
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("a delivered packet did not wake ReadBatch")
		}
	}
	if r.err != nil || r.n < 1 {
		t.Fatalf("ReadBatch = %d, %v", r.n, r.err)
	}
	if m := msgs[0]; !bytes.Equal(m.Buf[:m.N], want) || m.Addr != l.Addr() {
		t.Fatalf("got %d bytes from %v, want %d from %v", m.N, m.Addr, len(want), l.Addr())
	}
	for c.drain(msgs) > 0 {
	}

	// A UDP datagram comes through as before.
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.WriteToUDPAddrPort(want, c.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	n := readOne(t, c, msgs)
	if n != 1 || msgs[0].Addr != peer.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("UDP read: %d from %v", n, msgs[0].Addr)
	}
	if st := c.Stats(); st[UDP].PacketsIn != 1 || st[WebSocket].PacketsIn < 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestWriteBatchRoutes: datagrams for links go to the links, the others
// to the socket, in one batch.
func TestWriteBatchRoutes(t *testing.T) {
	c := newGate(t, Config{})
	a, _ := c.Open(WebTransport, netip.MustParseAddr("192.0.2.1"))
	b, _ := c.Open(WebSocket, netip.MustParseAddr("192.0.2.2"))
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	pa := peer.LocalAddr().(*net.UDPAddr).AddrPort()
	out := []udp.Message{
		{Buf: []byte("to a"), Addr: a.Addr()},
		{Buf: []byte("to udp"), Addr: pa},
		{Buf: []byte("to b"), Addr: b.Addr()},
		{Buf: []byte("to nobody"), Addr: linkAddr(WebSocket, 999)},
	}
	if n, err := c.WriteBatch(out); n != len(out) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	for _, tc := range []struct {
		l    *Link
		want string
	}{{a, "to a"}, {b, "to b"}} {
		var got string
		stop := errors.New("stop")
		if err := tc.l.Send(t.Context(), func(p []byte) error { got = string(p); return stop }); err != stop || got != tc.want {
			t.Errorf("link %v got %q (%v), want %q", tc.l.Addr(), got, err, tc.want)
		}
	}
	buf := make([]byte, 100)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := peer.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != "to udp" {
		t.Errorf("UDP peer got %q, %v", buf[:n], err)
	}
	if st := c.Stats(); st[WebSocket].Gone != 1 || st[WebTransport].PacketsOut != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestLimits: links per address and in total, and a link's share of the
// queue.
func TestLimits(t *testing.T) {
	c := newGate(t, Config{MaxLinks: 3, MaxLinksPerAddr: 2, LinkQueue: 4})
	ip1, ip2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	l1, err1 := c.Open(WebSocket, ip1)
	_, err2 := c.Open(WebSocket, ip1)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := c.Open(WebTransport, ip1); !errors.Is(err, ErrRefused) {
		t.Errorf("third link of one address: %v", err)
	}
	if _, err := c.Open(WebSocket, ip2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(WebSocket, netip.MustParseAddr("192.0.2.3")); !errors.Is(err, ErrRefused) {
		t.Errorf("link over MaxLinks: %v", err)
	}
	l1.Close()
	l4, err := c.Open(WebSocket, ip1)
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	l4.Close()
	if err := l1.Deliver(packetOf(10, 0)); !errors.Is(err, ErrLinkClosed) {
		t.Errorf("Deliver on a closed link: %v", err)
	}

	l, err := c.Open(WebTransport, ip2)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := l.Deliver(packetOf(10, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.drain(newMsgs(32)); n != 4 {
		t.Errorf("a link queued %d packets, want its share 4", n)
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, make([]byte, proto.MaxPacketSizeLimit+1), []byte("GET / HTTP/1.1")} {
		var pe *PacketError
		if err := l.Deliver(bad); !errors.As(err, &pe) {
			t.Errorf("Deliver(%d bytes) = %v, want a PacketError", len(bad), err)
		}
	}
	if st := c.Stats(); st[WebTransport].Malformed != 4 || st[WebTransport].QueueFull != 6 || st[WebSocket].Refused != 1 || st[WebTransport].Refused != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestIdleTimeout: a link that sends nothing is closed.
func TestIdleTimeout(t *testing.T) {
	c := newGate(t, Config{IdleTimeout: 50 * time.Millisecond})
	l, _ := c.Open(WebSocket, netip.MustParseAddr("192.0.2.1"))
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an idle link stayed open")
	}
	if st := c.Stats(); st[WebSocket].Open != 0 {
		t.Errorf("open links %d", st[WebSocket].Open)
	}
}

// TestStalePacketsDropped: a server packet that waited longer than
// MaxPacketAge for its link's transport is dropped, not sent late; a
// fresh one behind it goes out (virtual time).
func TestStalePacketsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(nopConn{}, Config{MaxPacketAge: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.Open(WebTransport, netip.MustParseAddr("192.0.2.1"))
		if err != nil {
			t.Fatal(err)
		}
		send := func(b string) {
			if n, err := c.WriteBatch([]udp.Message{{Buf: []byte(b), Addr: l.Addr()}}); n != 1 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
		}
		send("old")
		time.Sleep(90 * time.Millisecond)
		send("recent")
		time.Sleep(20 * time.Millisecond) // "old" waited 110 ms, "recent" 20
		send("new")
		var got []string
		stop := errors.New("stop")
		err = l.Send(t.Context(), func(p []byte) error {
			if got = append(got, string(p)); len(got) == 2 {
				return stop
			}
			return nil
		})
		if err != stop || len(got) != 2 || got[0] != "recent" || got[1] != "new" {
			t.Fatalf("sent %q (%v), want [recent new]", got, err)
		}
		if st := c.Stats()[WebTransport]; st.Stale != 1 || st.PacketsOut != 3 {
			t.Errorf("stale %d, packets out %d; want 1, 3", st.Stale, st.PacketsOut)
		}
	})
}

// TestZeroAllocs: a browser packet into the server, and one out of it,
// allocate nothing once the pool is warm.
func TestZeroAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not asserted under -race")
	}
	c := newGate(t, Config{})
	l, _ := c.Open(WebSocket, netip.MustParseAddr("192.0.2.1"))
	msgs := newMsgs(8)
	pkt := packetOf(1200, 1)
	out := []udp.Message{{Buf: pkt, Addr: l.Addr()}}
	step := func() {
		if err := l.Deliver(pkt); err != nil {
			t.Fatal(err)
		}
		if n, err := c.ReadBatch(msgs); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		if n, err := c.WriteBatch(out); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		c.put(<-l.out)
	}
	step()
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("%v allocations per packet in and out, want 0", a)
	}

	// A UDP datagram through the gateway, in and out, as well.
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	pa := peer.LocalAddr().(*net.UDPAddr).AddrPort()
	toPeer := []udp.Message{{Buf: pkt, Addr: pa}}
	buf := make([]byte, 2048)
	udpStep := func() {
		if _, err := peer.WriteToUDPAddrPort(pkt, c.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if n, err := c.ReadBatch(msgs); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		if n, err := c.WriteBatch(toPeer); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		if _, _, err := peer.ReadFromUDPAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	udpStep()
	if a := testing.AllocsPerRun(200, udpStep); a != 0 {
		t.Errorf("%v allocations per UDP datagram in and out through the gateway, want 0", a)
	}
}

func FuzzDeliver(f *testing.F) {
	f.Add(packetOf(proto.PrefixSize, 0))
	f.Add(packetOf(1200, 0xff))
	f.Add([]byte{proto.Magic0, proto.Magic1, proto.Version + 1, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{})
	c, err := New(nopConn{}, Config{IdleTimeout: 24 * time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	l, _ := c.Open(WebSocket, netip.MustParseAddr("192.0.2.1"))
	msgs := newMsgs(1)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := l.Deliver(b)
		if (err == nil) != (checkPacket(b) == nil) {
			t.Fatalf("Deliver = %v, checkPacket = %v", err, checkPacket(b))
		}
		n := c.drain(msgs)
		if err != nil {
			if n != 0 {
				t.Fatal("a refused message reached the server")
			}
			return
		}
		if n != 1 || !bytes.Equal(msgs[0].Buf[:msgs[0].N], b) || msgs[0].Addr != l.Addr() {
			t.Fatalf("delivered %d bytes, read %d (%d) from %v", len(b), msgs[0].N, n, msgs[0].Addr)
		}
		if len(b) > proto.MaxPacketSizeLimit {
			t.Fatal("an oversize message passed")
		}
	})
}

// nopConn is a socket that never receives, for the fuzz target.
type nopConn struct{}

func (nopConn) ReadBatch([]udp.Message) (int, error)    { select {} }
func (nopConn) WriteBatch(m []udp.Message) (int, error) { return len(m), nil }
func (nopConn) LocalAddr() netip.AddrPort               { return netip.AddrPort{} }
func (nopConn) Close() error                            { return nil }
func (nopConn) SetReadDeadline(time.Time) error         { return nil }

// TestDescribe: an operator reads a browser link as its transport and the
// browser's address, a UDP peer as its address.
func TestDescribe(t *testing.T) {
	c := newGate(t, Config{})
	l, err := c.Open(WebSocket, netip.MustParseAddr("192.0.2.7"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Describe(l.Addr()); got != "websocket from 192.0.2.7" {
		t.Errorf("link: %q", got)
	}
	udp := netip.MustParseAddrPort("198.51.100.1:4000")
	if got := c.Describe(udp); got != "198.51.100.1:4000" {
		t.Errorf("UDP peer: %q", got)
	}
	l.Close()
	if got := c.Describe(l.Addr()); got != "websocket (closed)" {
		t.Errorf("closed link: %q", got)
	}
}
