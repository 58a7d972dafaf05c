package lobby_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// serveUDP runs a tickwire game server with key on a loopback socket.
func serveUDP(t *testing.T, key tickwire.Key, addr string) (*tickwire.Server, netip.AddrPort) {
	t.Helper()
	s, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := udp.Listen("udp4", addr, udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(uc) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return s, uc.LocalAddr()
}

// play runs a two-player room through the JSON API and returns both
// players' assignments (creator first).
func play(t *testing.T, lb *lobby.Lobby, create lobby.CreateRequest, join lobby.JoinRequest) []*lobby.Assignment {
	t.Helper()
	hs := httptest.NewServer(lb)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &lobby.Client{BaseURL: hs.URL}
	bob, err := c.Create(ctx, "demo", create)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := c.Join(ctx, bob.Room.ID, join)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*lobby.Seat{alice, bob} {
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var as []*lobby.Assignment
	for _, s := range []*lobby.Seat{bob, alice} {
		a, err := s.Assignment(ctx)
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	return as
}

// connectAll dials every assignment's token and checks that the server
// sees each player in the assigned game with its slot, and that messages
// flow.
func connectAll(t *testing.T, s *tickwire.Server, as []*lobby.Assignment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range as {
		c, err := tickwire.Dial(ctx, a.Token)
		if err != nil {
			t.Fatalf("slot %d: %v", a.Slot, err)
		}
		t.Cleanup(func() { c.Close() })
		if p := c.Players(); len(p) != 1 || p[0] != a.Slot {
			t.Fatalf("client players %v, assigned slot %d", p, a.Slot)
		}
		if err := c.Send(tickwire.Reliable, 0, []byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint16]uint64{}
	s.Do(func() {
		s.Each(func(c *tickwire.Conn) { got[c.Players()[0]] = c.GameID() })
	})
	if len(got) != len(as) {
		t.Fatalf("server has %d connections, want %d", len(got), len(as))
	}
	for _, a := range as {
		if got[a.Slot] != a.GameID {
			t.Fatalf("slot %d in game %d on the server, assigned %d", a.Slot, got[a.Slot], a.GameID)
		}
	}
}

// TestAssignmentConnectsOverUDP: the lobby's tokens for a server-hosted
// game admit both players to the game server over UDP, into the assigned
// game and slots.
func TestAssignmentConnectsOverUDP(t *testing.T) {
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, addr := serveUDP(t, key, "127.0.0.1:0")
	lb, err := lobby.New(lobby.Config{Servers: []lobby.GameServer{{Addrs: []string{addr.String()}, Key: key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	as := play(t, lb, lobby.CreateRequest{Name: "udp", Player: "Bob", MaxPlayers: 2}, lobby.JoinRequest{Player: "Alice"})
	if as[0].GameID != as[1].GameID || as[0].Port != int(addr.Port()) {
		t.Fatalf("assignments %+v %+v, server at %v", as[0], as[1], addr)
	}
	connectAll(t, s, as)

	// A token minted for another server's key is refused by this one.
	other, _ := tickwire.GenerateKey()
	tok, err := tickwire.MintToken(other, tickwire.TokenParams{GameID: as[0].GameID, ClientID: 77, Players: []uint16{3}, ServerAddrs: []string{addr.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = tickwire.Dial(ctx, tok)
	var de *tickwire.DeniedError
	if !errors.As(err, &de) || de.Reason != proto.DenyUnknownKey {
		t.Fatalf("err %v, want unknown key denial", err)
	}
}

// TestPeerHostedAssignmentConnectsOverUDP: in a peer-hosted game the host
// runs a game server with the lobby's HostKey on the port it offered, and
// both players' tokens admit them to it.
func TestPeerHostedAssignmentConnectsOverUDP(t *testing.T) {
	// Reserve the host's port by binding it, as a host process would
	// before offering it; the server is started once the key is known.
	uc, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	port := uc.LocalAddr().Port()
	serverKey, _ := tickwire.GenerateKey()
	lb, err := lobby.New(lobby.Config{Servers: []lobby.GameServer{{Addrs: []string{"127.0.0.1:9"}, Key: serverKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	as := play(t, lb, lobby.CreateRequest{Name: "p2p", Player: "Bob", MaxPlayers: 2, Hosting: lobby.PeerHosted, HostPort: port}, lobby.JoinRequest{Player: "Alice"})
	host := as[0]
	if host.Role != "host" || host.HostKey == "" || as[1].Role != "player" {
		t.Fatalf("roles %q %q, host key %q", host.Role, as[1].Role, host.HostKey)
	}
	key, err := tickwire.ParseKey(host.HostKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(uc) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	connectAll(t, s, as)
}
