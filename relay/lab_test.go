package relay

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// lab is a relay on an in-memory network, for tests inside a synctest
// bubble: the relay at 10.0.0.1:3478, players at 10.0.1.x.
type lab struct {
	t      *testing.T
	net    *udptest.Network
	srv    *Server
	ctrl   netip.AddrPort
	served chan error
}

func newLab(t *testing.T, cfg Config) *lab {
	t.Helper()
	n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 5 * time.Millisecond, MTU: 9000}})
	cfg.ListenPacket = func(ap netip.AddrPort) (udp.BatchConn, error) {
		c, err := n.ListenAddrPort(ap)
		if err != nil {
			return nil, err
		}
		return udp.FromPacketConn(c), nil
	}
	srv, err := NewServer(testKey, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.Listen("10.0.0.1:3478")
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, net: n, srv: srv, ctrl: c.AddrPort(), served: make(chan error, 1)}
	go func() { l.served <- srv.Serve(udp.FromPacketConn(c)) }()
	t.Cleanup(l.close)
	return l
}

func (l *lab) close() {
	l.srv.Close()
	if err := <-l.served; !errors.Is(err, ErrClosed) {
		l.t.Errorf("Serve returned %v, want ErrClosed", err)
	}
}

// player opens a player's socket at 10.0.1.i:5000.
func (l *lab) player(i int) *udptest.Conn {
	l.t.Helper()
	c, err := l.net.ListenAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), 5000))
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { c.Close() })
	return c
}

// grants mints an allocation's two grants, binding for ttl.
func (l *lab) grants(ttl time.Duration, budget uint64) (joiner, host []byte) {
	l.t.Helper()
	j, h, err := MintPair(testKey, time.Now().Add(ttl), budget)
	if err != nil {
		l.t.Fatal(err)
	}
	return j, h
}

// bind binds c with grant and returns its relayed address.
func (l *lab) bind(c *udptest.Conn, grant []byte) netip.AddrPort {
	l.t.Helper()
	relayed, err := l.bindErr(c, grant)
	if err != nil {
		l.t.Fatalf("bind %v: %v", c.AddrPort(), err)
	}
	return relayed
}

// bindErr is Bind with 10 s (virtual) to succeed.
func (l *lab) bindErr(c *udptest.Conn, grant []byte) (netip.AddrPort, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Bind(ctx, c, l.ctrl, grant)
}

// pair binds two new players as the joiner and the host of a new
// allocation and returns them with their relayed addresses.
func (l *lab) pair(i int, budget uint64) (j, h *udptest.Conn, pj, ph netip.AddrPort) {
	gj, gh := l.grants(time.Hour, budget)
	j, h = l.player(i), l.player(i+1)
	return j, h, l.bind(j, gj), l.bind(h, gh)
}

// send sends b from c to to.
func send(t *testing.T, c *udptest.Conn, b []byte, to netip.AddrPort) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatal(err)
	}
}

// recv returns the next datagram c receives within wait (virtual time)
// and its source, or nil.
func recv(t *testing.T, c *udptest.Conn, wait time.Duration) ([]byte, netip.AddrPort) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 2048)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, netip.AddrPort{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n], from
}

// recvAll returns every datagram c receives within wait.
func recvAll(t *testing.T, c *udptest.Conn, wait time.Duration) [][]byte {
	t.Helper()
	var out [][]byte
	end := time.Now().Add(wait)
	for {
		b, _ := recv(t, c, time.Until(end))
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}

// reply sends a bind request with grant from c to to and returns the
// reply, failing the test if none comes within a second.
func reply(t *testing.T, c *udptest.Conn, grant []byte, to netip.AddrPort) BindReply {
	t.Helper()
	send(t, c, AppendBindRequest(nil, grant), to)
	b, from := recv(t, c, time.Second)
	if b == nil {
		t.Fatalf("no reply from %v", to)
	}
	if from != to {
		t.Fatalf("reply from %v, want %v", from, to)
	}
	r, err := ParseBindReply(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// silent sends b from c to to and fails the test if anything comes back
// within a second.
func silent(t *testing.T, c *udptest.Conn, b []byte, to netip.AddrPort) {
	t.Helper()
	send(t, c, b, to)
	if got, from := recv(t, c, time.Second); got != nil {
		t.Fatalf("%x from %v answered by %x from %v", b, c.AddrPort(), got, from)
	}
}
