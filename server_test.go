package tickwire

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// echoHandler sends every message back the way it came.
type echoHandler struct {
	mu           sync.Mutex
	connected    []*Conn
	disconnected map[uint32]proto.DisconnectReason
	gone         chan proto.DisconnectReason
	noDelay      bool // flush every echo at once instead of with the tick
}

func newEchoHandler() *echoHandler {
	return &echoHandler{disconnected: map[uint32]proto.DisconnectReason{}, gone: make(chan proto.DisconnectReason, 16)}
}

func (h *echoHandler) Connected(c *Conn) {
	h.mu.Lock()
	h.connected = append(h.connected, c)
	h.mu.Unlock()
}

func (h *echoHandler) Message(c *Conn, m *Message) {
	if err := c.Send(m.Delivery, m.Channel, m.Data); err != nil {
		panic(err)
	}
	if h.noDelay {
		c.Flush()
	}
}

func (h *echoHandler) Disconnected(c *Conn, r proto.DisconnectReason) {
	h.mu.Lock()
	h.disconnected[c.ID()] = r
	h.mu.Unlock()
	h.gone <- r
}

// testServer serves on conn (a loopback socket if nil) until the test ends.
func testServer(t testing.TB, cfg Config, h Handler, conn udp.BatchConn) (*Server, Key, netip.AddrPort) {
	t.Helper()
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		s.Handle(h)
	}
	return s, key, serveTest(t, s, conn)
}

// serveTest runs s on conn (a loopback socket if nil) until the test ends.
func serveTest(t testing.TB, s *Server, conn udp.BatchConn) netip.AddrPort {
	t.Helper()
	if conn == nil {
		uc, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		conn = uc
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(conn) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return conn.LocalAddr()
}

func mintFor(t testing.TB, key Key, addr netip.AddrPort, clientID uint64, players ...uint16) *ConnectToken {
	t.Helper()
	if len(players) == 0 {
		players = []uint16{1}
	}
	tok, err := MintToken(key, TokenParams{GameID: 7, ClientID: clientID, Players: players, ServerAddrs: []string{addr.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func dial(t testing.TB, tok *ConnectToken, d Dialer) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConnectAndEchoOverLoopback(t *testing.T) {
	h := newEchoHandler()
	s, key, addr := testServer(t, Config{}, h, nil)
	c := dial(t, mintFor(t, key, addr, 42, 3, 4), Dialer{})

	if got := c.Players(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("players %v, want [3 4]", got)
	}
	if c.TickRate() != DefaultTickRate {
		t.Fatalf("tick rate %d", c.TickRate())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, d := range []Delivery{Reliable, Unreliable, Sequenced} {
		msg := []byte{byte(i), 'h', 'i'}
		if err := c.Send(d, uint8(i+1), msg); err != nil {
			t.Fatal(err)
		}
		// Unreliable messages on loopback arrive; the echo comes back.
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Delivery != d || m.Channel != uint8(i+1) || string(m.Data) != string(msg) {
			t.Fatalf("got %+v, want %v on channel %d: %q", m, d, i+1, msg)
		}
	}
	var cs ConnStats
	s.Do(func() {
		if len(s.conns) != 1 {
			t.Fatalf("%d connections", len(s.conns))
		}
		for _, sc := range s.conns {
			cs = sc.Stats()
		}
	})
	if cs.ClientID != 42 || cs.GameID != 7 || cs.MessagesIn != 3 || cs.MessagesOut != 3 || cs.Addr.Port() != c.LocalAddr().Port() {
		t.Fatalf("server conn stats %+v (client at %v)", cs, c.LocalAddr())
	}

	// A clean client close reaches the server with its reason.
	c.Close()
	select {
	case r := <-h.gone:
		if r != proto.DisconnectClosed {
			t.Fatalf("server saw %v, want closed", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server never saw the disconnect")
	}
	var de *DisconnectError
	if !errors.As(c.Err(), &de) || de.Reason != proto.DisconnectClosed || de.Remote {
		t.Fatalf("client err %v", c.Err())
	}
	if err := c.Send(Reliable, 0, []byte("x")); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestServerShutdownTellsClients(t *testing.T) {
	h := newEchoHandler()
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(h)
	uc, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(uc) }()
	c := dial(t, mintFor(t, key, uc.LocalAddr(), 1), Dialer{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	var de *DisconnectError
	if !errors.As(c.Err(), &de) || de.Reason != proto.DisconnectShutdown || !de.Remote {
		t.Fatalf("client err %v, want shutdown by server", c.Err())
	}
	if r := <-h.gone; r != proto.DisconnectShutdown {
		t.Fatalf("handler saw %v", r)
	}
}

func TestDialNobody(t *testing.T) {
	// A bound socket nobody reads: the handshake times out with a clear error.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	key, _ := GenerateKey()
	tok := mintFor(t, key, netip.MustParseAddrPort(pc.LocalAddr().String()), 1)
	d := Dialer{Config: Config{HandshakeTimeout: 300 * time.Millisecond}}
	_, err = d.Dial(context.Background(), tok)
	if !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("err %v, want handshake timeout", err)
	}
}

// flooder sends every client as many small unreliable messages as its
// queue takes, every tick.
type flooder struct {
	nopHandler
	srv *Server
}

func (f *flooder) Tick(time.Time, uint32) {
	f.srv.Each(func(c *Conn) {
		for c.Send(Unreliable, 1, []byte{1}) == nil {
		}
	})
}

// TestClientReceiveQueueBounded: a server that floods a client whose
// application never calls Receive cannot grow its queue without bound;
// the excess is dropped and counted.
func TestClientReceiveQueueBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 5 * time.Millisecond}})
		listen := func(addr string) udp.BatchConn {
			pc, err := nw.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			return udp.FromPacketConn(pc)
		}
		f := &flooder{}
		s, key, addr := testServer(t, Config{}, f, listen("10.0.0.1:7777"))
		f.srv = s
		c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen("10.0.1.1:5000")})
		time.Sleep(5 * time.Second)
		st := c.Stats()
		var queued int
		c.Do(func() { queued = len(c.queue) })
		t.Logf("received %d, queued %d, dropped %d; client err %v, stats %+v, dropped %v; server %+v", st.MessagesIn, queued, st.MessagesDropped, c.Err(), st, c.Dropped(), s.Stats())
		if queued > maxReceiveQueue || st.MessagesDropped == 0 || st.MessagesIn != uint64(queued)+st.MessagesDropped {
			t.Fatalf("received %d, queued %d (limit %d), dropped %d", st.MessagesIn, queued, maxReceiveQueue, st.MessagesDropped)
		}
	})
}

// slowTicker makes one tick take 30 ms (when slow is set) and reports
// how many datagrams the server had received when the tick after it
// began.
type slowTicker struct {
	nopHandler
	srv     *Server
	slow    atomic.Bool
	started chan struct{} // closed as the slow tick begins
	report  chan uint64
	after   bool
}

func (h *slowTicker) Tick(time.Time, uint32) {
	if h.after {
		h.after = false
		h.report <- h.srv.stats.PacketsIn
	}
	if h.slow.CompareAndSwap(true, false) {
		close(h.started)
		time.Sleep(30 * time.Millisecond)
		h.after = true
	}
}

// TestTickTakesWhatArrivedFirst: datagrams that arrive while a tick runs
// long are all handled before the next tick, not one batch per tick as
// select's random choice between the ready ticker and the ready batches
// would have it (then, under load, the read loop's batches fill and the
// socket drops what follows).
func TestTickTakesWhatArrivedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := udptest.NewNetwork(udptest.Config{})
		listen := func(addr string) udp.BatchConn {
			pc, err := nw.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			return udp.FromPacketConn(pc)
		}
		h := &slowTicker{started: make(chan struct{}), report: make(chan uint64, 1)}
		s, _, addr := testServer(t, Config{}, h, listen("10.0.0.1:7777"))
		h.srv = s
		h.slow.Store(true)
		<-h.started
		time.Sleep(5 * time.Millisecond)
		from := listen("10.0.1.1:5000")
		const n = readBatches // one datagram per batch here: the read loop holds them all
		msgs := make([]udp.Message, n)
		for i := range msgs {
			msgs[i] = udp.Message{Buf: []byte{0xff, byte(i)}, Addr: addr}
		}
		if _, err := from.WriteBatch(msgs); err != nil {
			t.Fatal(err)
		}
		if got := <-h.report; got != n {
			t.Fatalf("the tick after the slow one began with %d of the %d datagrams that arrived during it handled", got, n)
		}
	})
}
