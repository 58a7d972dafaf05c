package tickwire

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

func dialErr(t *testing.T, tok *ConnectToken) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := (&Dialer{}).Dial(ctx, tok)
	if err == nil {
		c.Close()
		t.Fatal("dial succeeded")
	}
	return err
}

func wantDenied(t *testing.T, err error, r proto.DenyReason) {
	t.Helper()
	var de *DeniedError
	if !errors.As(err, &de) || de.Reason != r {
		t.Fatalf("err %v, want denied: %v", err, r)
	}
}

func TestHandshakeDenials(t *testing.T) {
	s, key, addr := testServer(t, Config{AcceptGame: func(id uint64) bool { return id == 7 }}, nil, nil)
	params := TokenParams{GameID: 7, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{addr.String()}, TTL: 10 * time.Second}

	t.Run("expired", func(t *testing.T) {
		tok, err := MintToken(key, params, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantDenied(t, dialErr(t, tok), proto.DenyExpired)
	})
	t.Run("tampered", func(t *testing.T) {
		tok, _ := MintToken(key, params, time.Now())
		tok.Sealed[17] ^= 1
		wantDenied(t, dialErr(t, tok), proto.DenyInvalidToken)
	})
	t.Run("tampered-game-id", func(t *testing.T) {
		// The game id travels in clear but is bound to the token.
		tok, _ := MintToken(key, params, time.Now())
		tok.GameID = 8
		wantDenied(t, dialErr(t, tok), proto.DenyInvalidToken)
	})
	t.Run("wrong-key", func(t *testing.T) {
		other, _ := GenerateKey()
		tok, _ := MintToken(other, params, time.Now())
		wantDenied(t, dialErr(t, tok), proto.DenyUnknownKey)
	})
	t.Run("wrong-key-claiming-ours", func(t *testing.T) {
		other, _ := GenerateKey()
		ours, _ := MintToken(key, params, time.Now())
		tok, _ := MintToken(other, params, time.Now())
		tok.KeyID = ours.KeyID
		wantDenied(t, dialErr(t, tok), proto.DenyInvalidToken)
	})
	t.Run("wrong-game", func(t *testing.T) {
		p := params
		p.GameID = 8
		tok, _ := MintToken(key, p, time.Now())
		wantDenied(t, dialErr(t, tok), proto.DenyWrongGame)
	})
	t.Run("already-connected", func(t *testing.T) {
		tok, _ := MintToken(key, params, time.Now())
		dial(t, tok, Dialer{})
		wantDenied(t, dialErr(t, tok), proto.DenyAlreadyConnected)
	})
	if st := s.Stats(); st.Accepted != 1 || st.HandshakeDenied < 5 {
		t.Fatalf("stats %+v", st)
	}
}

// tap is a net.PacketConn that records every datagram written.
type tap struct {
	net.PacketConn
	mu   sync.Mutex
	sent [][]byte
}

// newTap is a loopback socket that records what it sends.
func newTap(t *testing.T) *tap {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &tap{PacketConn: pc}
}

func (t *tap) WriteTo(p []byte, a net.Addr) (int, error) {
	t.mu.Lock()
	t.sent = append(t.sent, append([]byte(nil), p...))
	t.mu.Unlock()
	return t.PacketConn.WriteTo(p, a)
}

func (t *tap) last(pt proto.PacketType) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.sent) - 1; i >= 0; i-- {
		if p := t.sent[i]; len(p) > 4 && proto.PacketType(p[3]&^proto.FlagSealed) == pt {
			return p
		}
	}
	return nil
}

// TestSessionPacketForgery replays, re-addresses and alters session
// packets from another socket and checks the server drops each for the
// right reason without disturbing the connection.
func TestSessionPacketForgery(t *testing.T) {
	h := newEchoHandler()
	s, key, addr := testServer(t, Config{}, h, nil)
	tp := newTap(t)
	c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: udp.FromPacketConn(tp)})
	c2 := dial(t, mintFor(t, key, addr, 2), Dialer{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Send(Reliable, 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	pkt := tp.last(proto.PacketData)
	if pkt == nil {
		t.Fatal("no data packet recorded")
	}

	attacker, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	ua := net.UDPAddrFromAddrPort(addr)

	before := s.Stats().Dropped
	send := func(p []byte) {
		if _, err := attacker.WriteTo(p, ua); err != nil {
			t.Fatal(err)
		}
	}
	// 1. The same packet again, from elsewhere: a replay.
	send(pkt)
	// 2. Its connection id changed to the other client's: the header is
	// authenticated, so it fails to open.
	// (Its sequence moved ahead so that it is fresh for that connection.)
	forged := append([]byte(nil), pkt...)
	binary.LittleEndian.PutUint32(forged[4:], c2.ConnID())
	binary.LittleEndian.PutUint16(forged[8:], binary.LittleEndian.Uint16(forged[8:])+500)
	send(forged)
	// 3. An id nobody has.
	binary.LittleEndian.PutUint32(forged[4:], c.ConnID()^c2.ConnID()^0x5a5a5a5a)
	send(forged)
	// 4. A fresh sequence number with a flipped ciphertext bit.
	altered := append([]byte(nil), pkt...)
	binary.LittleEndian.PutUint16(altered[8:], binary.LittleEndian.Uint16(altered[8:])+1000)
	altered[len(altered)-1] ^= 0x80
	send(altered)

	// The client's next message reaches the server's socket after the
	// forgeries (they were sent first, to the same socket), so once its
	// echo is back every forgery has been judged.
	if err := c.Send(Reliable, 1, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	m, err := c.Receive(ctx)
	if err != nil || string(m.Data) != "still here" {
		t.Fatalf("after forgery: %q %v", m.Data, err)
	}
	want := before
	want[DropReplay]++
	want[DropAuth] += 2
	want[DropUnknownConn]++
	if got := s.Stats().Dropped; got != want {
		t.Fatalf("drops %v, want %v", got, want)
	}
	s.Do(func() {
		if sc := s.Conn(c.ConnID()); sc == nil || sc.Addr().Port() != c.LocalAddr().Port() || sc.Stats().AddressChanges != 0 {
			t.Fatalf("connection disturbed: %+v", sc)
		}
	})
}

// TestRequestFloodHoldsNoState sends 100,000 valid connection requests
// that never answer the challenge and checks the server created nothing,
// answered each with fewer bytes than it received, and still serves.
func TestRequestFloodHoldsNoState(t *testing.T) {
	if testing.Short() {
		t.Skip("flood in -short mode")
	}
	s, key, addr := testServer(t, Config{}, nil, nil)
	tok := mintFor(t, key, addr, 99)
	req := tok.Request()
	pkt, _ := req.Append(nil)

	uc, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	const total, burst = 100_000, 250
	out := make([]udp.Message, burst)
	for i := range out {
		out[i] = udp.Message{Buf: pkt, Addr: addr}
	}
	in := make([]udp.Message, 64)
	for i := range in {
		in[i].Buf = make([]byte, 1500)
	}
	replies, replyBytes := 0, 0
	for sent := 0; sent < total; sent += burst {
		if _, err := uc.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		// Wait for this burst's challenges before the next, so that the
		// socket buffers, not the server, never drop anything.
		for replies < sent+burst {
			uc.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := uc.ReadBatch(in)
			if err != nil {
				t.Fatalf("after %d requests, %d replies: %v", sent+burst, replies, err)
			}
			for _, m := range in[:n] {
				if proto.PacketType(m.Buf[3]) != proto.PacketChallenge {
					t.Fatalf("reply type %d", m.Buf[3])
				}
				replies++
				replyBytes += m.N
			}
		}
	}
	st := s.Stats()
	t.Logf("%d requests (%d B) → %d challenges (%d B); amplification %.3f", total, total*len(pkt), replies, replyBytes, float64(replyBytes)/float64(total*len(pkt)))
	if st.Connections != 0 || st.Accepted != 0 {
		t.Fatalf("flood created state: %+v", st)
	}
	if st.ChallengesSent != total || replies != total {
		t.Fatalf("challenges %d, replies %d, want %d", st.ChallengesSent, replies, total)
	}
	if st.HandshakeOut > st.HandshakeIn || replyBytes > total*len(pkt) {
		t.Fatalf("amplification: %d B out for %d B in", st.HandshakeOut, st.HandshakeIn)
	}
	s.Do(func() {
		if len(s.conns)+len(s.clients)+len(s.games) != 0 {
			t.Fatal("server maps not empty")
		}
	})
	// The same token still connects afterwards.
	dial(t, tok, Dialer{})
}

// TestHandshakeAmplification checks every handshake reply is no larger
// than the datagram it answers, for each answer the server can give.
func TestHandshakeAmplification(t *testing.T) {
	key, _ := GenerateKey()
	hs, err := session.NewResponder(session.ResponderConfig{Keys: []*[proto.KeySize]byte{(*[proto.KeySize]byte)(&key)}, CookieLifetime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	now := time.Now()
	tok, _ := MintToken(key, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{"192.0.2.2:7777"}}, now)
	req := tok.Request()
	pkt, _ := req.Append(nil)
	admit := func(*session.Admission) proto.DenyReason { return 0 }
	full := func(*session.Admission) proto.DenyReason { return proto.DenyServerFull }
	check := func(name string, in, out []byte) {
		t.Helper()
		if len(out) > len(in) {
			t.Errorf("%s: %d bytes answered with %d", name, len(in), len(out))
		}
	}
	ch := hs.Request(pkt, addr, now, nil, admit)
	check("challenge", pkt, ch)
	check("full", pkt, hs.Request(pkt, addr, now, nil, full))
	check("short request", pkt[:100], hs.Request(pkt[:100], addr, now, nil, admit))
	bad := append([]byte(nil), pkt...)
	bad[40] ^= 1
	check("bad token", bad, hs.Request(bad, addr, now, nil, admit))
	resp := proto.ChallengeResponse{}
	c, _, _ := proto.ParseChallenge(ch)
	resp.Cookie = c.Cookie
	rb, _ := resp.Append(nil)
	_, out, ok := hs.Response(rb, addr, now, nil)
	if ok {
		t.Fatal("response without key proof accepted")
	}
	check("bad tag", rb, out)
	_, out, ok = hs.Response(rb, netip.MustParseAddrPort("192.0.2.9:5000"), now, nil)
	if ok {
		t.Fatal("cookie accepted from another address")
	}
	check("other address", rb, out)
}

// TestLateRequestResendsAccept: a connection request that arrives after
// its client was accepted (a duplicate, or a resend that crossed the
// challenge) gets the accept again instead of a denial, and the client
// stays connected.
func TestLateRequestResendsAccept(t *testing.T) {
	h := newEchoHandler()
	s, key, addr := testServer(t, Config{}, h, nil)
	tp := newTap(t)
	pc := tp.PacketConn
	c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: udp.FromPacketConn(tp)})
	req := tp.last(proto.PacketConnectionRequest)
	if _, err := pc.WriteTo(req, net.UDPAddrFromAddrPort(addr)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Send(Reliable, 1, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Receive(ctx); err != nil || string(m.Data) != "after" {
		t.Fatalf("%q %v", m.Data, err)
	}
	if st := s.Stats(); st.HandshakeDenied != 0 || st.Accepted != 1 || st.Connections != 1 {
		t.Fatalf("stats after a late request: %+v", st)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
}

// TestShuttingDownDenialNoAmplification: a server that is shutting down
// answers a full-size connection request with a denial, and a short
// datagram with nothing (the denial would be larger than it).
func TestShuttingDownDenialNoAmplification(t *testing.T) {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{})
	if err != nil {
		t.Fatal(err)
	}
	dc := &discardConn{}
	s.conn, s.out.conn = dc, dc
	s.closed = true
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	tok, _ := MintToken(key, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{"192.0.2.2:7777"}}, time.Now())
	req := tok.Request()
	full, _ := req.Append(nil)
	for _, pkt := range [][]byte{full[:4], full[:proto.ConnectionRequestSize-1], full} {
		dc.last = nil
		s.receiveDatagram(pkt, addr.Addr(), addr.Port(), time.Now())
		s.out.flush()
		out := 0
		for _, m := range dc.last {
			out += len(m.Buf)
		}
		if out > len(pkt) || (len(pkt) == proto.ConnectionRequestSize) != (out > 0) {
			t.Errorf("%d-byte request while shutting down answered with %d bytes", len(pkt), out)
		}
	}
}

// TestSpoofedAddressChangeBudget is the reflection attack through an address
// change: a client forges the source address of its own session's
// packets (a victim's) while the server streams it a packet every tick
// (as a game does), and the server may send the victim at most 3× the
// bytes the forged packets carried, since the victim never answers the
// path challenge. The client's own traffic keeps flowing.
func TestSpoofedAddressChangeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 15 * time.Millisecond}})
		srv, key := serveStreams(t, n, "10.0.0.1:7777")
		defer srv.Close()
		cpc, err := n.Listen("10.0.1.1:5000")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := MintToken(key, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, tok, Dialer{Conn: udp.FromPacketConn(cpc)})
		victim, err := n.Listen("10.0.9.9:80")
		if err != nil {
			t.Fatal(err)
		}
		received := make(chan int)
		go func() {
			n, buf := 0, make([]byte, 2048)
			for {
				k, _, err := victim.ReadFrom(buf)
				if err != nil {
					received <- n
					return
				}
				n += k
			}
		}()
		server := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.1:7777"))
		forged := 0
		for range 50 { // 5 s: a forged keep-alive every 100 ms
			time.Sleep(100 * time.Millisecond)
			c.Do(func() {
				p := c.sess.AppendControl(nil, time.Now(), proto.PacketKeepAlive, c.ticks(), nil)
				forged += len(p)
				victim.WriteTo(p, server)
			})
		}
		// The client's own traffic flows: its echo comes back.
		before := c.Stats().PacketsIn
		if err := c.Send(Reliable, 1, []byte("still here")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		victim.Close() // before any t.Fatal: its reader must end
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("after the spoofing: no echo: %v", err)
			}
			if m.Channel == 1 { // not the stream's
				if string(m.Data) != "still here" {
					t.Fatalf("after the spoofing: echo %q", m.Data)
				}
				break
			}
		}
		got := <-received
		var st ConnStats
		srv.Do(func() { srv.Each(func(sc *Conn) { st = sc.Stats() }) })
		t.Logf("forged %d bytes from the victim's address; the victim received %d; conn %+v", forged, got, st)
		if got > 3*forged {
			t.Fatalf("victim received %d bytes for %d forged (%.1f×), want at most 3×", got, forged, float64(got)/float64(forged))
		}
		if c.Stats().PacketsIn <= before || c.Err() != nil {
			t.Fatalf("the client's traffic stopped: %d packets in since the spoofing, err %v", c.Stats().PacketsIn-before, c.Err())
		}
		if st.AddressChanges < 50 || st.PathBlocked == 0 {
			t.Fatalf("conn stats %+v: the forged packets did not move the session", st)
		}
	})
}

// streamHandler echoes messages and streams every connection an
// unreliable message every tick through a frame handler, as a game host
// streams its snapshots.
type streamHandler struct{}

func (streamHandler) Connected(c *Conn) { c.SetFrameHandler(streamFrames{}) }

func (streamHandler) Message(c *Conn, m *Message) { c.Send(m.Delivery, m.Channel, m.Data) }

func (streamHandler) Disconnected(*Conn, proto.DisconnectReason) {}

// streamFrames writes a 100-byte unreliable message into every packet.
type streamFrames struct{}

func (streamFrames) Frame(proto.FrameType, []byte, *PacketInfo) error { return nil }
func (streamFrames) Ticks() Ticks                                     { return Ticks{} }
func (streamFrames) AppendFrames(b []byte, room int, _ *PacketInfo) []byte {
	f := proto.MessageFrame{Channel: 2, Data: make([]byte, 100)}
	if f.Len() > room {
		return b
	}
	b, _ = f.Append(b)
	return b
}

// TestReplayedResponseCreatesNothing: a challenge response captured from
// a client that connected, replayed from the client's address after it
// left, gets a sealed "token used" and creates no connection; so does a
// new dial with the same token.
func TestReplayedResponseCreatesNothing(t *testing.T) {
	h := newEchoHandler()
	s, key, addr := testServer(t, Config{}, h, nil)
	tp := newTap(t)
	pc := tp.PacketConn
	tok := mintFor(t, key, addr, 1)
	c := dial(t, tok, Dialer{Conn: udp.FromPacketConn(tp)})
	resp := tp.last(proto.PacketChallengeResponse)
	c.Close()
	<-h.gone
	// The same address again, for the replay.
	pc, err := net.ListenPacket("udp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.WriteTo(resp, net.UDPAddrFromAddrPort(addr)); err != nil {
		t.Fatal(err)
	}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := proto.ParseDenied(buf[:n])
	if err != nil || d.Reason != proto.DenyTokenUsed || !d.Sealed {
		t.Fatalf("replayed response answered with %x (%+v, %v), want a sealed token-used denial", buf[:n], d, err)
	}
	if st := s.Stats(); st.Accepted != 1 || st.Connections != 0 {
		t.Fatalf("after the replay: %+v", st)
	}
	wantDenied(t, dialErr(t, tok), proto.DenyTokenUsed)
}

// TestDialConnTriesEachAddress dials, on the caller's socket
// (Dialer.Conn), a token whose first address is silent: the attempt
// there ends at the client's HandshakeTimeout and the second address
// accepts on the same socket, so the mapping a NAT made for it stays
// the one the session uses. With every address silent, the Dial fails
// and closes the socket.
func TestDialConnTriesEachAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 10 * time.Millisecond}})
		srv, key := serveStreams(t, n, "10.0.0.1:7777")
		defer srv.Close()
		cpc, err := n.Listen("10.0.1.1:5000")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := MintToken(key, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1},
			ServerAddrs: []string{"10.0.9.9:7777", "10.0.0.1:7777"}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		d := Dialer{Conn: udp.FromPacketConn(cpc), Config: Config{HandshakeTimeout: time.Second}}
		c, err := d.Dial(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if c.Server() != netip.MustParseAddrPort("10.0.0.1:7777") || took < time.Second || took > 1100*time.Millisecond {
			t.Errorf("connected to %v after %v; want 10.0.0.1:7777 after the first address's 1 s", c.Server(), took)
		}
		c.Close()

		silent, err := n.Listen("10.0.1.2:5000")
		if err != nil {
			t.Fatal(err)
		}
		tok.ServerAddrs = []string{"10.0.9.9:7777", "10.0.9.8:7777"}
		d = Dialer{Conn: udp.FromPacketConn(silent), Config: Config{HandshakeTimeout: time.Second}}
		if _, err := d.Dial(context.Background(), tok); !errors.Is(err, ErrHandshakeTimeout) {
			t.Errorf("dial of two silent addresses: %v", err)
		}
		if _, err := silent.WriteTo([]byte{1}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.1:7777"))); err == nil {
			t.Error("the failed dial left the socket open")
		}
	})
}

// serveStreams serves streamHandler on addr of n until the test ends
// (or the caller closes it), and returns the server with its key.
func serveStreams(t *testing.T, n *udptest.Network, addr string) (*Server, Key) {
	t.Helper()
	spc, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(t)
	srv, err := NewServer(key, Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle(streamHandler{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(udp.FromPacketConn(spc)) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return srv, key
}
