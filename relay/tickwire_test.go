package relay

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// tap records every datagram a BatchConn reads and writes (copies).
type tap struct {
	udp.BatchConn
	mu        sync.Mutex
	read      [][]byte
	written   [][]byte
	writtenTo []netip.AddrPort
}

func (c *tap) ReadBatch(msgs []udp.Message) (int, error) {
	n, err := c.BatchConn.ReadBatch(msgs)
	c.mu.Lock()
	for _, m := range msgs[:n] {
		c.read = append(c.read, bytes.Clone(m.Buf[:m.N]))
	}
	c.mu.Unlock()
	return n, err
}

func (c *tap) WriteBatch(msgs []udp.Message) (int, error) {
	n, err := c.BatchConn.WriteBatch(msgs)
	c.mu.Lock()
	for _, m := range msgs[:n] {
		c.written = append(c.written, bytes.Clone(m.Buf))
		c.writtenTo = append(c.writtenTo, m.Addr)
	}
	c.mu.Unlock()
	return n, err
}

// sent returns the datagrams written to addr that are not relay control
// packets, and received those read.
func (c *tap) sent(to netip.AddrPort) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for i, b := range c.written {
		if c.writtenTo[i] == to && !IsControl(b) {
			out = append(out, b)
		}
	}
	return out
}

func (c *tap) received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, b := range c.read {
		if !IsControl(b) {
			out = append(out, b)
		}
	}
	return out
}

// isSubsequence reports whether every datagram of sub appears in all, in
// order, byte for byte.
func isSubsequence(sub, all [][]byte) bool {
	i := 0
	for _, b := range all {
		if i < len(sub) && bytes.Equal(sub[i], b) {
			i++
		}
	}
	return i == len(sub)
}

type echo struct{}

func (echo) Connected(*tickwire.Conn)                            {}
func (echo) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
func (echo) Message(c *tickwire.Conn, m *tickwire.Message) {
	if err := c.Send(m.Delivery, m.Channel, m.Data); err != nil {
		panic(err)
	}
}

// TestTickwireThroughRelay: a tickwire.Server (the host, side 1) and a
// tickwire.Client (the joiner, side 0), each on a loopback socket bound
// to a relay with Bind, complete the handshake through the relay (the
// client's token names the joiner's relayed address) and exchange 30
// reliable messages, echoed back. The relay holds only its own key (it
// imports neither the root nor internal/session: TestArchitecture), and
// what it sees is sealed: every datagram it forwards is one the other
// side sent, byte for byte and in order, every session packet among them
// carries the sealed flag, and none holds a message's plaintext. What
// each side received from the relay is, in order, what the relay
// forwarded to it.
func TestTickwireThroughRelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var ports []*tap
	srv, ctrl := loopbackRelay(t, Config{ListenPacket: func(ap netip.AddrPort) (udp.BatchConn, error) {
		c, err := listenUDP(ap)
		if err != nil {
			return nil, err
		}
		tc := &tap{BatchConn: c}
		mu.Lock()
		ports = append(ports, tc)
		mu.Unlock()
		return tc, nil
	}})

	hostPC, joinPC := listenLoopback(t), listenLoopback(t)
	gj, gh, err := MintPair(testKey, time.Now().Add(time.Hour), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := Bind(ctx, hostPC, ctrl, gh)
	if err != nil {
		t.Fatal(err)
	}
	pj, err := Bind(ctx, joinPC, ctrl, gj)
	if err != nil {
		t.Fatal(err)
	}

	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if Key(key) == testKey {
		t.Fatal("the relay's key is the game's")
	}
	host, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	host.Handle(echo{})
	hostConn := &tap{BatchConn: udp.FromPacketConn(hostPC)}
	go host.Serve(hostConn)
	defer host.Close()
	tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: 1, Players: []uint16{0}, ServerAddrs: []string{pj.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	joinConn := &tap{BatchConn: udp.FromPacketConn(joinPC)}
	c, err := (&tickwire.Dialer{Conn: joinConn}).Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const n = 30
	for i := range n {
		msg := fmt.Appendf(nil, "plaintext-%02d %s", i, bytes.Repeat([]byte("x"), 200))
		if err := c.Send(tickwire.Reliable, 1, msg); err != nil {
			t.Fatal(err)
		}
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Data, msg) {
			t.Fatalf("echo %d: %q", i, m.Data)
		}
	}
	var seen string
	host.Do(func() { host.Each(func(sc *tickwire.Conn) { seen = sc.Addr().String() }) })
	if seen != ph.String() {
		t.Fatalf("the host sees its client at %s, want the relayed address %v", seen, ph)
	}
	c.Close()
	host.Close()

	mu.Lock()
	defer mu.Unlock()
	if len(ports) != 2 {
		t.Fatalf("%d relayed ports opened, want 2", len(ports))
	}
	var toHost, toJoiner [][]byte
	for _, p := range ports {
		toHost = append(toHost, p.sent(hostPC.LocalAddr().(*net.UDPAddr).AddrPort())...)
		toJoiner = append(toJoiner, p.sent(joinPC.LocalAddr().(*net.UDPAddr).AddrPort())...)
	}
	fromJoiner, fromHost := joinConn.sent(pj), hostConn.sent(ph)
	t.Logf("joiner sent %d, relay forwarded %d to the host, which read %d; host sent %d, relay forwarded %d, joiner read %d",
		len(fromJoiner), len(toHost), len(hostConn.received()), len(fromHost), len(toJoiner), len(joinConn.received()))
	for _, d := range []struct {
		what           string
		forwarded, all [][]byte
		read           [][]byte
	}{
		{"joiner → host", toHost, fromJoiner, hostConn.received()},
		{"host → joiner", toJoiner, fromHost, joinConn.received()},
	} {
		if len(d.forwarded) < n {
			t.Errorf("%s: %d datagrams forwarded, want at least %d", d.what, len(d.forwarded), n)
		}
		if !isSubsequence(d.forwarded, d.all) {
			t.Errorf("%s: the relay forwarded datagrams the side did not send", d.what)
		}
		if !isSubsequence(d.read, d.forwarded) {
			t.Errorf("%s: the side read datagrams the relay did not forward", d.what)
		}
		for _, b := range d.forwarded {
			typ, sealed, err := proto.ParsePrefix(b)
			if err != nil {
				t.Fatalf("%s: forwarded %x: %v", d.what, b, err)
			}
			if typ.HasSessionHeader() && !sealed {
				t.Errorf("%s: an unsealed %v packet", d.what, typ)
			}
			if bytes.Contains(b, []byte("plaintext-")) {
				t.Errorf("%s: a forwarded datagram holds a message's plaintext", d.what)
			}
		}
	}
	st := srv.Stats()
	if st.Forwarded != uint64(len(toHost)+len(toJoiner)) || st.Bound != 2 {
		t.Errorf("relay stats %+v", st)
	}
}
