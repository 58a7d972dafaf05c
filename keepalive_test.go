package tickwire

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// tapped is one datagram a tap saw: when, which way, what type.
type tapped struct {
	at   time.Time
	sent bool
	typ  proto.PacketType
}

// trafficLog is a udptest.Cuttable socket that records the datagrams it sends and
// receives (not those the cut swallows).
type trafficLog struct {
	udptest.Cuttable
	mu  sync.Mutex
	log []tapped
}

func (c *trafficLog) note(b []byte, sent bool) {
	t, _, err := proto.ParsePrefix(b)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.log = append(c.log, tapped{time.Now(), sent, t})
	c.mu.Unlock()
}

func (c *trafficLog) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !c.Cut.Load() {
		c.note(b, true)
	}
	return c.Cuttable.WriteTo(b, addr)
}

func (c *trafficLog) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.Cuttable.ReadFrom(b)
	if err == nil {
		c.note(b[:n], false)
	}
	return n, addr, err
}

// since returns what the log saw from t on.
func (c *trafficLog) since(t time.Time) []tapped {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []tapped
	for _, x := range c.log {
		if !x.at.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

// lastReceived is when the log last received a datagram.
func (c *trafficLog) lastReceived() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.log) - 1; i >= 0; i-- {
		if !c.log[i].sent {
			return c.log[i].at
		}
	}
	return time.Time{}
}

// endRecorder is a server Handler that records when and why connections
// ended.
type endRecorder struct {
	nopHandler
	ended chan proto.DisconnectReason
}

func (h endRecorder) Disconnected(_ *Conn, r proto.DisconnectReason) { h.ended <- r }

// sessionEnd is a ClientHandler that records when the session ended.
type sessionEnd struct{ at chan time.Time }

func (sessionEnd) Message(*Client, *Message)                      {}
func (h sessionEnd) Disconnected(*Client, proto.DisconnectReason) { h.at <- time.Now() }

// TestHeartbeatAndTimeout: on an idle connection (no game, no messages)
// each side sends a keep-alive every Heartbeat (500 ms) and nothing else;
// when the client drops off the network both sides end the session
// Timeout (1.5 s) after the last packet they received, within a tick.
func TestHeartbeatAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 10 * time.Millisecond}})
		spc, err := n.Listen("10.0.0.1:7777")
		if err != nil {
			t.Fatal(err)
		}
		cpc, err := n.Listen("10.0.1.1:5000")
		if err != nil {
			t.Fatal(err)
		}
		st, ct := &trafficLog{Cuttable: udptest.Cuttable{PacketConn: spc}}, &trafficLog{Cuttable: udptest.Cuttable{PacketConn: cpc}}
		key, _ := GenerateKey()
		srv, err := NewServer(key, Config{})
		if err != nil {
			t.Fatal(err)
		}
		h := endRecorder{ended: make(chan proto.DisconnectReason, 1)}
		srv.Handle(h)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(udp.FromPacketConn(st)) }()
		defer func() {
			srv.Close()
			<-done
		}()
		tok, _ := MintToken(key, TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
		ce := sessionEnd{at: make(chan time.Time, 1)}
		d := Dialer{Conn: udp.FromPacketConn(ct), Handler: ce}
		c, err := d.Dial(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		tick := time.Second / DefaultTickRate
		time.Sleep(time.Second) // past the handshake's packets
		from := time.Now()
		time.Sleep(5 * time.Second)
		for _, side := range []struct {
			name string
			tap  *trafficLog
		}{{"client", ct}, {"server", st}} {
			var sends []tapped
			for _, x := range side.tap.since(from) {
				if x.sent {
					sends = append(sends, x)
				}
			}
			if len(sends) < 9 || len(sends) > 10 {
				t.Fatalf("%s sent %d packets in 5 idle seconds, want a keep-alive every 500 ms", side.name, len(sends))
			}
			for i, x := range sends {
				if x.typ != proto.PacketKeepAlive {
					t.Fatalf("%s sent a %v on an idle connection", side.name, x.typ)
				}
				if i > 0 {
					if gap := x.at.Sub(sends[i-1].at); gap < DefaultHeartbeat || gap > DefaultHeartbeat+tick {
						t.Fatalf("%s: %v between keep-alives, want %v (+ at most a tick)", side.name, gap, DefaultHeartbeat)
					}
				}
			}
		}

		// The client drops off the network, both ways.
		ct.Cut.Store(true)
		r := <-h.ended
		serverEnd := time.Now()
		clientEnded := <-ce.at
		if r != proto.DisconnectTimeout {
			t.Fatalf("server ended the connection with %v, want a timeout", r)
		}
		if de, ok := c.Err().(*DisconnectError); !ok || de.Reason != proto.DisconnectTimeout {
			t.Fatalf("client ended with %v, want a timeout", c.Err())
		}
		for _, e := range []struct {
			name     string
			end, got time.Time
		}{{"server", serverEnd, st.lastReceived()}, {"client", clientEnded, ct.lastReceived()}} {
			if after := e.end.Sub(e.got); after <= DefaultTimeout || after > DefaultTimeout+tick {
				t.Errorf("%s timed out %v after the last packet it received, want %v (+ at most a tick)", e.name, after, DefaultTimeout)
			}
		}
	})
}
