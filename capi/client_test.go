//go:build cgo

package main

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// otherKind is an object of a kind no function takes, to hold that a
// handle of the wrong kind is told apart from one that names nothing.
type otherKind struct{ msg string }

func (*otherKind) kind() kind          { return kindClient + 100 }
func (o *otherKind) setErr(msg string) { o.msg = msg }
func (o *otherKind) lastErr() string   { return o.msg }

func TestHandles(t *testing.T) {
	o := &otherKind{}
	h := handles.add(o)
	if h2 := handles.add(&otherKind{}); h2 <= h {
		t.Fatalf("handle %d after %d: handles count up", h2, h)
	} else {
		handles.remove(h2)
	}
	if _, r := lookup(h, kindClient); r != resWrongKind {
		t.Fatalf("lookup of another kind: %v", r)
	}
	if !strings.Contains(o.msg, "not a client") || lastErr(h) != o.msg {
		t.Fatalf("wrong-kind message %q", o.msg)
	}
	if handles.remove(h) != o || handles.remove(h) != nil {
		t.Fatal("remove")
	}
	if _, r := lookup(h, kindClient); r != resInvalidHandle {
		t.Fatalf("lookup of a removed handle: %v", r)
	}
	if !strings.Contains(lastErr(0), "names no object") || lastErr(h) != lastErr(0) {
		t.Fatalf("process-wide message %q", lastErr(0))
	}
}

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for r := resInternal; r <= resOK; r++ {
		s := r.String()
		if s == "unknown" || seen[s] {
			t.Errorf("result %d is named %q", r, s)
		}
		seen[s] = true
	}
	if result(-1000).String() != "unknown" || result(1).String() != "unknown" {
		t.Error("an undefined code has a name")
	}
	for r := proto.DisconnectClosed; r <= proto.DisconnectNoState; r++ {
		if got := disconnectName(uint32(r)); got != r.String() {
			t.Errorf("disconnect %d: %q, want %q", r, got, r.String())
		}
	}
	for _, r := range []uint32{0, uint32(proto.NumDisconnectReasons), 63, 67, 1 << 31} {
		if got := disconnectName(r); got != "unknown" {
			t.Errorf("disconnect %d: %q", r, got)
		}
	}
	for r := proto.DenyInvalidToken; r <= proto.DenyJoinRefused; r++ {
		if got := denyName(uint32(r)); got != r.String() {
			t.Errorf("deny %d: %q, want %q", r, got, r.String())
		}
	}
	if denyName(0) != "unknown" || denyName(uint32(proto.NumDenyReasons)) != "unknown" {
		t.Error("an undefined deny reason has a name")
	}
}

// frames runs game frames on c (update, then poll every event) every
// millisecond until done says so, for at most 30 s.
func frames(t testing.TB, c *client, done func(e *event) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	frame := time.NewTicker(time.Millisecond)
	defer frame.Stop()
	for now := time.Now(); now.Before(deadline); now = <-frame.C {
		c.update(float64(now.UnixNano()) / 1e9)
		finished := false
		for {
			var got event
			c.poll(func(e *event) (result, string) {
				if e != nil {
					got = *e
				}
				return resOK, ""
			})
			if got.kind == eventNone {
				break
			}
			if done(&got) {
				finished = true
			}
		}
		if finished {
			return
		}
	}
	t.Fatal("no end within 30 s")
}

// TestServerShutdown: a client connected through the Go side of capi
// sees CONNECTED, then, when the server shuts down, the messages it sent
// before and a DISCONNECTED with TW_DISCONNECT_SHUTDOWN flagged remote,
// after which sends fail with TW_ERR_NOT_CONNECTED.
func TestServerShutdown(t *testing.T) {
	srv := startEchoServer(t)
	c := newClient(srv.token(t, 5), "", tickwire.Config{}, nil)
	defer func() {
		handles.remove(c.handle)
		c.free()
	}()
	frames(t, c, func(e *event) bool { return e.kind == eventConnected })
	if r := c.send(tickwire.Reliable, 1, false, 0, []byte("bye")); r != resOK {
		t.Fatal(r)
	}
	var msgs []string
	frames(t, c, func(e *event) bool {
		if e.kind == eventMessage {
			msgs = append(msgs, string(e.data))
			srv.srv.Close()
		}
		if e.kind == eventDisconnected {
			if e.reason != uint32(proto.DisconnectShutdown) || e.flags != flagRemote {
				t.Errorf("disconnect: reason %d, flags %#x", e.reason, e.flags)
			}
			return true
		}
		return false
	})
	if len(msgs) != 1 || msgs[0] != "bye" {
		t.Errorf("messages %q", msgs)
	}
	if s := c.currentState(); s != stateDisconnected {
		t.Errorf("state %d", s)
	}
	if r := c.send(tickwire.Reliable, 1, false, 0, []byte("x")); r != resNotConnected {
		t.Errorf("send after the end: %v", r)
	}
}

// TestFreeDuringCalls frees a client while other goroutines update,
// poll, send and read its stats: every call returns (with resOK or
// resNotConnected), nothing panics or races (go test -race).
func TestFreeDuringCalls(t *testing.T) {
	srv := startEchoServer(t)
	c := newClient(srv.token(t, 6), "", tickwire.Config{}, nil)
	frames(t, c, func(e *event) bool { return e.kind == eventConnected })
	var wg, running sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		running.Add(1)
		wg.Go(func() {
			for i := 0; ; i++ {
				if i == 100 {
					running.Done()
				}
				select {
				case <-stop:
					return
				default:
				}
				c.update(float64(i))
				c.poll(func(*event) (result, string) { return resOK, "" })
				if r := c.send(tickwire.Reliable, 1, false, 0, []byte("x")); r != resOK && r != resNotConnected && r != resQueueFull {
					t.Errorf("send: %v", r)
				}
				if tc, r := c.accepted(); r == resOK {
					tc.Stats()
				}
			}
		})
	}
	running.Wait() // every caller is in its loop
	handles.remove(c.handle)
	c.free()
	close(stop)
	wg.Wait()
	if _, r := lookup(c.handle, kindClient); r != resInvalidHandle {
		t.Errorf("lookup after free: %v", r)
	}
}

// TestRejoinEvents: a client created with rejoin whose server goes deaf
// past a 1.5-s timeout sees, in order, TW_EVENT_REJOINING (sends fail
// with TW_ERR_NOT_CONNECTED meanwhile) and, once the server hears again,
// TW_EVENT_REJOINED; then its messages echo on the new session.
func TestRejoinEvents(t *testing.T) {
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{Timeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{srv: srv, key: key, echo: true}
	srv.Handle(s)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cut := &udptest.Cuttable{PacketConn: pc}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(udp.FromPacketConn(cut)) }()
	defer func() {
		srv.Close()
		<-served
	}()
	s.addr = netip.MustParseAddrPort(pc.LocalAddr().String())

	c := newClient(s.token(t, 9), "", tickwire.Config{}, &tickwire.Rejoin{Tries: 20})
	defer func() {
		handles.remove(c.handle)
		c.free()
	}()
	frames(t, c, func(e *event) bool { return e.kind == eventConnected })
	for {
		tc, _ := c.accepted()
		if tc.RejoinToken() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling for the credential
	}
	cut.Cut.Store(true)
	frames(t, c, func(e *event) bool {
		if e.kind == eventDisconnected {
			t.Fatalf("disconnected (reason %d) instead of rejoining", e.reason)
		}
		return e.kind == eventRejoining
	})
	if r := c.send(tickwire.Reliable, 1, false, 0, []byte("lost")); r != resNotConnected {
		t.Errorf("send while rejoining: %v, want TW_ERR_NOT_CONNECTED", r)
	}
	cut.Cut.Store(false)
	frames(t, c, func(e *event) bool {
		if e.kind == eventDisconnected {
			t.Fatalf("disconnected (reason %d) instead of rejoining", e.reason)
		}
		return e.kind == eventRejoined
	})
	if r := c.send(tickwire.Reliable, 1, false, 0, []byte("back")); r != resOK {
		t.Fatalf("send after the rejoin: %v", r)
	}
	var got string
	frames(t, c, func(e *event) bool {
		if e.kind == eventMessage {
			got = string(e.data)
		}
		return e.kind == eventMessage
	})
	if got != "back" {
		t.Errorf("echo %q after the rejoin", got)
	}
	if st := srv.Stats(); st.Rejoined != 1 {
		t.Errorf("server counted %d rejoins", st.Rejoined)
	}
}
