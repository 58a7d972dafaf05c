// Package testrig starts tickwire servers and dials them, on loopback
// sockets or on the simulated network (udp/udptest, in a synctest
// bubble), and records a game's states tick by tick, for the tests of
// the packages built on the root (game, commits, peerhost): each helper
// fails the test on error. The root's own tests keep their copies of
// the loopback helpers, since a package's internal tests cannot import
// a package that imports it.
package testrig

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// Server makes a server with a fresh key and cfg, handled by h (if not
// nil), and serves it on conn (a loopback socket if nil) until the test
// ends.
func Server(t testing.TB, cfg tickwire.Config, h tickwire.Handler, conn udp.BatchConn) (*tickwire.Server, tickwire.Key, netip.AddrPort) {
	t.Helper()
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := tickwire.NewServer(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		s.Handle(h)
	}
	return s, key, Serve(t, s, conn)
}

// Serve runs s on conn (a loopback socket if nil) until the test ends,
// and returns the address it serves on.
func Serve(t testing.TB, s *tickwire.Server, conn udp.BatchConn) netip.AddrPort {
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

// Token mints a token for game 7 at addr, for client clientID with
// players (player 1 if none).
func Token(t testing.TB, key tickwire.Key, addr netip.AddrPort, clientID uint64, players ...uint16) *tickwire.ConnectToken {
	t.Helper()
	if len(players) == 0 {
		players = []uint16{1}
	}
	tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: 7, ClientID: clientID, Players: players, ServerAddrs: []string{addr.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Dial connects with tok through d within 10 s, and closes the client
// when the test ends.
func Dial(t testing.TB, tok *tickwire.ConnectToken, d tickwire.Dialer) *tickwire.Client {
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

// Echo is a server handler that sends every message back the way it
// came.
type Echo struct{}

func (Echo) Connected(*tickwire.Conn)                            {}
func (Echo) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

// Message sends m back on its delivery and channel.
func (Echo) Message(c *tickwire.Conn, m *tickwire.Message) {
	c.Send(m.Delivery, m.Channel, m.Data)
}
