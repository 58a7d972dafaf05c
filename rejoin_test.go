package tickwire

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// hiccupLog is a server Handler that records what happened to its
// connections, with the virtual time of each event.
type hiccupLog struct {
	nopHandler
	mu     sync.Mutex
	events []hiccupEvent
}

type hiccupEvent struct {
	at       time.Time
	what     string // "connected", "interrupted", "back", "ended"
	conn     uint32
	rejoined bool
	reason   proto.DisconnectReason
	until    time.Time // ended: RejoinUntil
	players  []uint16
}

func (h *hiccupLog) add(e hiccupEvent) {
	h.mu.Lock()
	e.at = time.Now()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *hiccupLog) Connected(c *Conn) {
	h.add(hiccupEvent{what: "connected", conn: c.ID(), rejoined: c.Rejoined(), players: c.Players()})
}

func (h *hiccupLog) Disconnected(c *Conn, r proto.DisconnectReason) {
	until, _ := c.RejoinUntil()
	h.add(hiccupEvent{what: "ended", conn: c.ID(), reason: r, until: until})
}

func (h *hiccupLog) Interrupted(c *Conn, on bool) {
	what := "back"
	if on {
		what = "interrupted"
	}
	h.add(hiccupEvent{what: what, conn: c.ID()})
}

// last returns the newest event of kind what.
func (h *hiccupLog) last(what string) (hiccupEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.events) - 1; i >= 0; i-- {
		if h.events[i].what == what {
			return h.events[i], true
		}
	}
	return hiccupEvent{}, false
}

// hiccupRig is a server and one client on the simulated network, the
// client's path cuttable, the client rejoining by itself.
type hiccupRig struct {
	t        *testing.T
	key      Key
	srv      *Server
	log      *hiccupLog
	net      *udptest.Network
	path     *udptest.Cuttable
	c        *Client
	progress chan RejoinProgress
}

func newHiccupRig(t *testing.T, cfg Config) *hiccupRig {
	n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 10 * time.Millisecond}})
	spc, err := n.Listen("10.0.0.1:7777")
	if err != nil {
		t.Fatal(err)
	}
	r := &hiccupRig{t: t, log: &hiccupLog{}, net: n, progress: make(chan RejoinProgress, 64)}
	r.key, _ = GenerateKey()
	if r.srv, err = NewServer(r.key, cfg); err != nil {
		t.Fatal(err)
	}
	r.srv.Handle(r.log)
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(udp.FromPacketConn(spc)) }()
	t.Cleanup(func() {
		r.srv.Close()
		<-done
	})
	cpc, err := n.Listen("10.0.1.1:5000")
	if err != nil {
		t.Fatal(err)
	}
	r.path = &udptest.Cuttable{PacketConn: cpc}
	tok := r.token(1, []uint16{3})
	d := Dialer{Conn: udp.FromPacketConn(r.path), Rejoin: &Rejoin{Progress: func(p RejoinProgress) { r.progress <- p }}}
	if r.c, err = d.Dial(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	awaitRejoinToken(t, r.c)
	return r
}

// awaitRejoinToken polls until c holds the rejoin credential, which
// comes on the reliable channel right after the accept (in virtual time
// inside a bubble, real time outside), failing after 10 s.
func awaitRejoinToken(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.RejoinToken() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no rejoin credential 10 s after the accept")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *hiccupRig) token(client uint64, players []uint16) *ConnectToken {
	tok, err := MintToken(r.key, TokenParams{GameID: 1, ClientID: client, Players: players, ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	return tok
}

// dial dials tok from a fresh socket and returns the error.
func (r *hiccupRig) dial(tok *ConnectToken, addr string) error {
	pc, err := r.net.Listen(addr)
	if err != nil {
		r.t.Fatal(err)
	}
	d := Dialer{Conn: udp.FromPacketConn(pc), Config: Config{HandshakeTimeout: time.Second}}
	c, err := d.Dial(context.Background(), tok)
	if err == nil {
		c.Close()
	}
	return err
}

func denied(err error) proto.DenyReason {
	var de *DeniedError
	if errors.As(err, &de) {
		return de.Reason
	}
	return 0
}

// TestInterruptedNotDropped: a client whose path is cut for 5 s is marked
// interrupted within a second of its last packet, keeps its session, and
// is back as soon as it is heard again.
func TestInterruptedNotDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newHiccupRig(t, Config{})
		cut := time.Now()
		r.path.Cut.Store(true)
		time.Sleep(5 * time.Second)
		e, ok := r.log.last("interrupted")
		if !ok {
			t.Fatal("not marked interrupted in 5 s of silence")
		}
		if d := e.at.Sub(cut); d > time.Second+50*time.Millisecond {
			t.Fatalf("marked interrupted %v after the cut, want within 1 s (and the path's latency)", d)
		}
		r.path.Cut.Store(false)
		back := time.Now()
		time.Sleep(time.Second)
		e, ok = r.log.last("back")
		// An idle client is heard at its next keep-alive.
		if !ok || e.at.Sub(back) > DefaultHeartbeat+50*time.Millisecond {
			t.Fatalf("back %v (%v after the path returned), want by the next keep-alive", ok, e.at.Sub(back))
		}
		if _, ended := r.log.last("ended"); ended || r.c.Err() != nil {
			t.Fatalf("the session ended over a 5-s hiccup: %v", r.c.Err())
		}
		if st := r.srv.Stats(); st.Interrupted != 1 {
			t.Fatalf("%d interruptions counted, want 1", st.Interrupted)
		}
	})
}

// TestRejoinAfterTimeout: a client silent past the timeout is dropped;
// when its path returns within the grace it comes back by itself, with
// its credential, into the same slots, and the Client carries on.
func TestRejoinAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newHiccupRig(t, Config{Timeout: 3 * time.Second, RejoinGrace: 20 * time.Second})
		first := r.c.ConnID()
		used := r.c.RejoinToken()
		r.path.Cut.Store(true)
		time.Sleep(8 * time.Second) // past both sides' timeout
		e, ok := r.log.last("ended")
		if !ok || e.reason != proto.DisconnectTimeout || e.until.IsZero() {
			t.Fatalf("server side: ended %v with %v, rejoin until %v; want a timeout with a grace", ok, e.reason, e.until)
		}
		if p := <-r.progress; p.State != RejoinLost || p.Reason != proto.DisconnectTimeout {
			t.Fatalf("first progress %+v, want lost to a timeout", p)
		}
		if err := r.c.Send(Reliable, 1, []byte("x")); !errors.Is(err, ErrRejoining) {
			t.Fatalf("Send while rejoining: %v, want ErrRejoining", err)
		}
		r.path.Cut.Store(false)
		var p RejoinProgress
		for p = range r.progress {
			if p.State != RejoinTrying {
				break
			}
		}
		if p.State != RejoinDone {
			t.Fatalf("rejoin ended %v (%v)", p.State, p.Err)
		}
		c, ok := r.log.last("connected")
		if !ok || !c.rejoined || c.conn == first || len(c.players) != 1 || c.players[0] != 3 {
			t.Fatalf("server: %+v, want a rejoined connection of player 3 on a new id", c)
		}
		if err := r.c.Send(Reliable, 1, []byte("back")); err != nil {
			t.Fatalf("Send after the rejoin: %v", err)
		}
		if st := r.c.Stats(); st.Interruptions != 1 || st.Rejoins != 1 || r.c.ConnID() == first {
			t.Fatalf("client stats %d interruptions, %d rejoins, conn %d (was %d)", st.Interruptions, st.Rejoins, r.c.ConnID(), first)
		}
		if st := r.srv.Stats(); st.Rejoined != 1 || st.Connections != 1 {
			t.Fatalf("server: %d rejoined, %d connections", st.Rejoined, st.Connections)
		}

		// The credential it came back with opens nothing again.
		if d := denied(r.dial(used, "10.0.2.1:5000")); d != proto.DenyTokenUsed && d != proto.DenyRejoin {
			t.Fatalf("a used credential: %v, want refused", d)
		}
		if st := r.srv.Stats(); st.Connections != 1 {
			t.Fatalf("%d connections after a replayed credential", st.Connections)
		}
	})
}

// TestRejoinCredentialBounds: a credential opens only its own client's
// slots, only the newest one sent counts, a live session is replaced by
// its rejoin, and nothing opens after the grace.
func TestRejoinCredentialBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newHiccupRig(t, Config{Timeout: 2 * time.Second, RejoinGrace: 5 * time.Second})
		// A credential the server never sent, for other slots of the
		// same client (sealed with the right key: the worst case).
		rk, err := rejoinKeyFor(r.key)
		if err != nil {
			t.Fatal(err)
		}
		forged, _ := MintToken(rk, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{4}, ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
		if d := denied(r.dial(forged, "10.0.2.1:5000")); d != proto.DenyRejoin {
			t.Fatalf("a credential for other slots: %v, want %v", d, proto.DenyRejoin)
		}
		// A lobby token is no rejoin: the client id is taken.
		if d := denied(r.dial(r.token(1, []uint16{3}), "10.0.2.2:5000")); d != proto.DenyAlreadyConnected {
			t.Fatalf("a second token for a connected client: %v", d)
		}
		// The client's own credential, from another address while its
		// session lives (a restarted process): it takes the session over.
		tok := r.c.RejoinToken()
		first := r.c.ConnID()
		pc, _ := r.net.Listen("10.0.2.3:5000")
		d := Dialer{Conn: udp.FromPacketConn(pc)}
		c2, err := d.Dial(context.Background(), tok)
		if err != nil {
			t.Fatalf("rejoin over a live session: %v", err)
		}
		if e, _ := r.log.last("ended"); e.conn != first || e.reason != proto.DisconnectReplaced {
			t.Fatalf("the old session ended %+v, want replaced", e)
		}
		awaitRejoinToken(t, c2)
		// The new session's path dies; past its grace the credential is
		// refused.
		next := c2.RejoinToken()
		pc.Close()
		time.Sleep(2*time.Second + 5*time.Second + time.Second)
		if d := denied(r.dial(next, "10.0.2.4:5000")); d != proto.DenyRejoin {
			t.Fatalf("a credential past its grace: %v, want %v", d, proto.DenyRejoin)
		}
		if st := r.srv.Stats(); st.RejoinRefused < 2 || st.Rejoined != 1 {
			t.Fatalf("%d refused, %d rejoined; want 2+ and 1", st.RejoinRefused, st.Rejoined)
		}
	})
}

// TestClientGroupRejoins: clients of a ClientGroup (on real loopback
// sockets) whose server goes deaf past the timeout rejoin by themselves
// through the group once it hears again, into the same slots, and carry
// on: each one's reliable echo comes back on the new session.
func TestClientGroupRejoins(t *testing.T) {
	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cut := &udptest.Cuttable{PacketConn: uc}
	h := newEchoHandler()
	log := &hiccupLog{}
	s, key, addr := testServer(t, Config{Timeout: 1500 * time.Millisecond}, &echoAndLog{echoHandler: h, log: log}, udp.FromPacketConn(cut))
	g, err := NewClientGroup(ClientGroupConfig{Sockets: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const n = 4
	progress := make(chan RejoinProgress, 16*n)
	clients := make([]*Client, n)
	for i := range n {
		d := Dialer{Group: g, Rejoin: &Rejoin{Tries: 20, Progress: func(p RejoinProgress) { progress <- p }}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		clients[i], err = d.Dial(ctx, mintFor(t, key, addr, uint64(i+1)))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		awaitRejoinToken(t, clients[i])
	}
	cut.Cut.Store(true)
	// Every client loses its session; the server times them out too.
	lost := 0
	for lost < n {
		if p := <-progress; p.State == RejoinLost {
			lost++
		}
	}
	for s.Stats().Connections > 0 {
		time.Sleep(10 * time.Millisecond) // the server's own timeout: real time, not a settling wait
	}
	cut.Cut.Store(false)
	back := 0
	for back < n {
		switch p := <-progress; p.State {
		case RejoinDone:
			back++
		case RejoinFailed:
			t.Fatalf("a client failed to rejoin: %v", p.Err)
		}
	}
	if st := s.Stats(); st.Rejoined != n {
		t.Fatalf("server counted %d rejoins, want %d", st.Rejoined, n)
	}
	for i, c := range clients {
		if err := c.Send(Reliable, 1, []byte{byte(i)}); err != nil {
			t.Fatalf("client %d: Send after its rejoin: %v", i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		m, err := c.Receive(ctx)
		cancel()
		if err != nil || len(m.Data) != 1 || m.Data[0] != byte(i) {
			t.Fatalf("client %d: echo %v %v after its rejoin", i, m.Data, err)
		}
	}
}

// echoAndLog is an echo server that also logs the connections' hiccups.
type echoAndLog struct {
	*echoHandler
	log *hiccupLog
}

func (h *echoAndLog) Connected(c *Conn) { h.echoHandler.Connected(c); h.log.Connected(c) }
func (h *echoAndLog) Disconnected(c *Conn, r proto.DisconnectReason) {
	h.echoHandler.Disconnected(c, r)
	h.log.Disconnected(c, r)
}
func (h *echoAndLog) Interrupted(c *Conn, on bool) { h.log.Interrupted(c, on) }
