package tickwire

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
)

// dialGroup dials n clients through g at once (client ids 1..n) and
// fails the test unless all connect.
func dialGroup(t testing.TB, g *ClientGroup, key Key, addr netip.AddrPort, n int) []*Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients := make([]*Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := Dialer{Group: g}
			clients[i], errs[i] = d.Dial(ctx, mintFor(t, key, addr, uint64(i+1)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return clients
}

// TestClientGroupEcho runs 24 clients on one group of 4 real loopback
// sockets: they connect at once (each socket runs its handshakes one
// after the other), spread over the sockets, each one's reliable
// messages come back to it in order, a closed client tells the server, and closing the
// group ends the rest.
func TestClientGroupEcho(t *testing.T) {
	const n, msgs = 24, 5
	h := newEchoHandler()
	h.gone = make(chan proto.DisconnectReason, n)
	s, key, addr := testServer(t, Config{}, h, nil)
	g, err := NewClientGroup(ClientGroupConfig{Sockets: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	clients := dialGroup(t, g, key, addr, n)

	socks := map[netip.AddrPort]int{}
	for _, s := range g.socks {
		socks[s.conn.LocalAddr()] = 0
	}
	for i, c := range clients {
		if _, ok := socks[c.LocalAddr()]; !ok {
			t.Fatalf("client %d at %v, not one of the group's sockets", i, c.LocalAddr())
		}
		socks[c.LocalAddr()]++
		for k := range msgs {
			var b [8]byte
			binary.LittleEndian.PutUint32(b[:], uint32(k))
			if err := c.Send(Reliable, 1, b[:]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for a, k := range socks {
		if k < n/len(socks) {
			t.Errorf("socket %v has %d clients, want them spread: %d or more each", a, k, n/len(socks))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, c := range clients {
		for k := range msgs {
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("client %d, echo %d: %v", i, k, err)
			}
			if got := binary.LittleEndian.Uint32(m.Data); got != uint32(k) || m.Delivery != Reliable {
				t.Fatalf("client %d: echo %d (%v), want %d reliable", i, got, m.Delivery, k)
			}
		}
	}
	s.Do(func() {
		if len(s.conns) != n {
			t.Errorf("server holds %d connections, want %d", len(s.conns), n)
		}
	})

	clients[0].Close()
	select {
	case r := <-h.gone:
		if r != proto.DisconnectClosed {
			t.Fatalf("server saw %v, want closed", r)
		}
	case <-ctx.Done():
		t.Fatal("server never saw the closed client leave")
	}
	var de *DisconnectError
	if !errors.As(clients[0].Err(), &de) || de.Remote {
		t.Fatalf("closed client's Err = %v", clients[0].Err())
	}
	if err := clients[1].Err(); err != nil {
		t.Fatalf("another client ended too: %v", err)
	}

	g.Close()
	for i, c := range clients[1:] {
		select {
		case <-c.Done():
		case <-ctx.Done():
			t.Fatalf("client %d still running after the group closed", i+1)
		}
	}
	for left := n - 1; left > 0; left-- {
		select {
		case <-h.gone:
		case <-ctx.Done():
			t.Fatalf("server saw %d of %d clients leave", n-1-left, n-1)
		}
	}
	d := Dialer{Group: g}
	if _, err := d.Dial(ctx, mintFor(t, key, addr, 99)); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("Dial through a closed group: %v, want ErrGroupClosed", err)
	}
}

// TestClientGroupDialFails: a Dialer with its own socket, a server of
// another tick rate and a silent server each fail the dial with a reason,
// and the next dial still works.
func TestClientGroupDialFails(t *testing.T) {
	g, err := NewClientGroup(ClientGroupConfig{TickRate: 60})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, key, addr := testServer(t, Config{TickRate: 30}, newEchoHandler(), nil)
	d := Dialer{Group: g, Conn: g.clientConn()}
	if _, err := d.Dial(ctx, mintFor(t, key, addr, 1)); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Fatalf("Dial with a Conn and a Group: %v, want a refusal", err)
	}
	d = Dialer{Group: g}
	if _, err := d.Dial(ctx, mintFor(t, key, addr, 2)); err == nil || !strings.Contains(err.Error(), "30 Hz") {
		t.Fatalf("Dial to a 30 Hz server from a 60 Hz group: %v, want a refusal", err)
	}

	silent, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	d = Dialer{Group: g, Config: Config{HandshakeTimeout: 300 * time.Millisecond}}
	if _, err := d.Dial(ctx, mintFor(t, key, silent.LocalAddr(), 3)); !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("Dial to a silent server: %v, want ErrHandshakeTimeout", err)
	}
	_, key60, addr60 := testServer(t, Config{}, newEchoHandler(), nil)
	d = Dialer{Group: g}
	if _, err := d.Dial(ctx, mintFor(t, key60, addr60, 4)); err != nil {
		t.Fatalf("Dial after the failures: %v", err)
	}

	// A group without a tick rate takes the first server's.
	g30, err := NewClientGroup(ClientGroupConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d = Dialer{Group: g30}
	if _, err := d.Dial(ctx, mintFor(t, key, addr, 5)); err != nil {
		t.Fatalf("Dial to a 30 Hz server from a group of no set rate: %v", err)
	}
	g30.Close()
	if g30.rate != 30 || g30.period != time.Second/30 {
		t.Fatalf("group ticks at %d Hz (%v), want the server's 30", g30.rate, g30.period)
	}

	if _, err := NewClientGroup(ClientGroupConfig{TickRate: -1}); err == nil {
		t.Fatal("NewClientGroup accepted tick rate -1")
	}
}

// groupDriven is a ClientGroup driven by the test (no goroutine of its
// own but its reader) with n clients of an echo server connected, and a
// function that handles the datagrams read so far and runs a tick.
func groupDriven(t testing.TB, n int) (*ClientGroup, func()) {
	t.Helper()
	h := newEchoHandler()
	h.gone = make(chan proto.DisconnectReason, n) // nobody reads it
	_, key, addr := testServer(t, Config{}, h, nil)
	g, err := newClientGroup(ClientGroupConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g.startReaders()
	t.Cleanup(g.shutdown)
	done := make(chan []*Client)
	go func() { done <- dialGroup(t, g, key, addr, n) }()
	tick := time.NewTicker(g.period)
	defer tick.Stop()
	for {
		select {
		case d := <-g.add:
			g.begin(d)
		case sb := <-g.in:
			g.received(sb.s, sb.b)
			sb.s.in.Release(sb.b)
		case <-tick.C:
			g.step()
		case <-done:
			return g, func() {
				for {
					select {
					case sb := <-g.in:
						g.received(sb.s, sb.b)
						sb.s.in.Release(sb.b)
						continue
					default:
					}
					break
				}
				g.step()
			}
		}
	}
}

// TestClientGroupStepAllocs: a steady tick of a group allocates nothing.
func TestClientGroupStepAllocs(t *testing.T) {
	_, step := groupDriven(t, 16)
	for range 60 {
		step()
	}
	if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
		t.Fatalf("%v allocations per tick of 16 clients, want 0", allocs)
	}
}

// BenchmarkClientGroupStep is the group's cost per client and tick: 64
// clients of an echo server, each tick handling what the server sent and
// sending the clients' packets in one batch (the server works on the
// other core meanwhile).
func BenchmarkClientGroupStep(b *testing.B) {
	const n = 64
	_, step := groupDriven(b, n)
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n/1000, "µs/client-tick")
}

// TestClientGroupHandshakesThroughCopies: 8 clients dial at once through
// one socket of a group, to a server behind a proxy that doubles every
// datagram and delays the server's by 5–55 ms. Late copies of a
// challenge reach the socket when the next handshake is under way (a
// challenge names no connection); every client still connects, and its
// echo comes back.
func TestClientGroupHandshakesThroughCopies(t *testing.T) {
	h := newEchoHandler()
	h.gone = make(chan proto.DisconnectReason, 16)
	_, key, addr := testServer(t, Config{}, h, nil)
	up, err := netem.Parse("duplicate 100%")
	if err != nil {
		t.Fatal(err)
	}
	down, err := netem.Parse("delay 30ms 25ms duplicate 100%")
	if err != nil {
		t.Fatal(err)
	}
	p, err := netem.ListenProxy("127.0.0.1:0", addr.String(), netem.ProxyConfig{Up: up, Down: down, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	via := netip.MustParseAddrPort(p.Addr().String())
	g, err := NewClientGroup(ClientGroupConfig{Sockets: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	clients := dialGroup(t, g, key, via, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, c := range clients {
		if err := c.Send(Reliable, 1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		m, err := c.Receive(ctx)
		if err != nil || len(m.Data) != 1 || m.Data[0] != byte(i) {
			t.Fatalf("client %d: echo %v, %v", i, m.Data, err)
		}
	}
}

// TestClientGroupWritesGSORuns: the clients of one group socket send
// their packets of a tick together, as runs written with GSO where the
// kernel has it: four clients sending a message of one size every tick
// for a second leave some of their packets in GSO runs.
func TestClientGroupWritesGSORuns(t *testing.T) {
	h := newEchoHandler()
	_, key, addr := testServer(t, Config{}, h, nil)
	g, err := NewClientGroup(ClientGroupConfig{Sockets: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	clients := dialGroup(t, g, key, addr, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	uc := g.socks[0].conn.(*udp.Conn)
	for i := 0; i < 600 && (i < 60 || uc.Stats().Write.Segmented == 0); i++ {
		for _, c := range clients {
			if err := c.Send(Unreliable, 1, []byte("sixteen bytes..")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := clients[0].Receive(ctx); err != nil { // a tick has passed
			t.Fatal(err)
		}
	}
	if st := uc.Stats().Write; uc.Info().GSO && st.Segmented == 0 {
		t.Errorf("the group's socket wrote %d datagrams in %d system calls, none as a GSO run", st.Datagrams, st.Syscalls)
	} else {
		t.Logf("the group's socket: GSO %v, %d datagrams in %d system calls, %d of them in GSO runs", uc.Info().GSO, st.Datagrams, st.Syscalls, st.Segmented)
	}
}
