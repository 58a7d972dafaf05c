package lobby

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/relay"
)

// TestNATCandidates: with Config.Rendezvous, each seat of a peer-hosted
// room gets a ticket; NoteMapping recognises only those (and at most
// maxNotes times a seat). At the assignment the host's public mapping
// replaces the HTTP address: a player behind another public address
// gets the mapping only, one behind the host's own public address the
// host's local address first; the host's assignment alone lists each
// player's client candidates and the host sides of the relay
// allocations (one per player), each player's its own side.
func TestNATCandidates(t *testing.T) {
	lb, srv := newTestLobby(t, Config{Rendezvous: "198.18.0.1:3478", Relay: &RelayConfig{Addr: "198.18.0.1:3479", Key: relay.Key{7}}})
	ctx := testCtx(t)
	bob, alice, carol := threeSeats(t, srv.URL)
	ap := netip.MustParseAddrPort
	note := func(s *Seat, host bool, public string, local ...netip.AddrPort) {
		t.Helper()
		if s.Rendezvous == nil || s.Rendezvous.Addr != "198.18.0.1:3478" || len(s.Rendezvous.Ticket) != ticketSize {
			t.Fatalf("%s's rendezvous: %+v", s.Player, s.Rendezvous)
		}
		if !lb.NoteMapping([16]byte(s.Rendezvous.Ticket), host, ap(public), local) {
			t.Fatalf("%s's ticket not recognised", s.Player)
		}
	}
	// Bob and Carol share a NAT; Alice is elsewhere.
	note(bob, true, "198.18.0.11:5000", ap("198.18.1.2:40000"))
	note(bob, false, "198.18.0.11:5001", ap("198.18.1.2:41000"))
	note(alice, true, "198.18.0.12:6000", ap("198.18.2.2:40001"))
	note(alice, false, "198.18.0.12:6001", ap("198.18.2.2:42000"))
	note(carol, false, "198.18.0.11:7001", ap("198.18.1.3:43000"))
	if lb.NoteMapping([16]byte{1}, true, ap("198.18.0.99:1"), nil) {
		t.Error("a made-up ticket was recognised")
	}
	for _, s := range []*Seat{bob, alice, carol} {
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ba, err := bob.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	aa, err := alice.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := carol.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ba.Role != RoleHost || !slices.Equal(ba.Addrs, []string{"127.0.0.1:40000", "198.18.0.11:5000"}) {
		t.Errorf("Bob: %s at %q", ba.Role, ba.Addrs)
	}
	if !slices.Equal(aa.Addrs, []string{"198.18.0.11:5000"}) || !slices.Equal(aa.Token.ServerAddrs, aa.Addrs) {
		t.Errorf("Alice dials %q (token %q), want the host's mapping only", aa.Addrs, aa.Token.ServerAddrs)
	}
	if !slices.Equal(ca.Addrs, []string{"198.18.1.2:40000", "198.18.0.11:5000"}) {
		t.Errorf("Carol dials %q, want the host's local address, then its mapping", ca.Addrs)
	}
	wantHost := []string{"198.18.0.11:5000", "198.18.0.12:6000", ""}
	for i, p := range ca.Players {
		if p.HostAddr != wantHost[i] || p.ClientAddrs != nil || p.Relay != nil {
			t.Errorf("Carol's view of %s: %+v", p.Name, p)
		}
	}
	wantClient := [][]string{nil, {"198.18.0.12:6001"}, {"198.18.1.3:43000", "198.18.0.11:7001"}}
	for i, p := range ba.Players {
		if !slices.Equal(p.ClientAddrs, wantClient[i]) || (i == 0) != (p.Relay == nil) {
			t.Errorf("Bob's view of %s: %+v", p.Name, p)
		}
	}
	if ba.Relay != nil || aa.Relay == nil || ca.Relay == nil {
		t.Fatalf("relay grants: Bob %+v, Alice %+v, Carol %+v", ba.Relay, aa.Relay, ca.Relay)
	}
	grant := func(g *RelayGrant) relay.Grant {
		t.Helper()
		r, err := relay.Open(relay.Key{7}, g.Grant)
		if err != nil || g.Addr != "198.18.0.1:3479" {
			t.Fatalf("grant at %s: %v", g.Addr, err)
		}
		return r
	}
	aj, ah, cj, ch := grant(aa.Relay), grant(ba.Players[1].Relay), grant(ca.Relay), grant(ba.Players[2].Relay)
	if aj.Alloc != ah.Alloc || cj.Alloc != ch.Alloc || aj.Alloc == cj.Alloc || aj.Side != relay.SideJoiner || ah.Side != relay.SideHost ||
		cj.Side != relay.SideJoiner || ch.Side != relay.SideHost {
		t.Errorf("allocations: Alice %+v / host %+v, Carol %+v / host %+v", aj, ah, cj, ch)
	}
	// The tickets died with the room.
	if lb.NoteMapping([16]byte(bob.Rendezvous.Ticket), true, ap("198.18.0.11:5000"), nil) {
		t.Error("a ticket still recognised after the assignment")
	}
}

// TestNoteMappingBounded: a seat's ticket is recognised at most
// maxNotes times.
func TestNoteMappingBounded(t *testing.T) {
	lb, srv := newTestLobby(t, Config{Rendezvous: ":3478"})
	c := &Client{BaseURL: srv.URL}
	s, err := c.Create(testCtx(t), "demo", CreateRequest{Name: "nat", Player: "Bob", Hosting: PeerHosted, HostPort: 40000})
	if err != nil {
		t.Fatal(err)
	}
	if s.Rendezvous == nil || s.Rendezvous.Addr != "127.0.0.1:3478" {
		t.Fatalf("rendezvous %+v: want the address the lobby was reached at", s.Rendezvous)
	}
	n := 0
	for lb.NoteMapping([16]byte(s.Rendezvous.Ticket), n%2 == 0, netip.MustParseAddrPort("198.18.0.11:5000"), nil) && n < 3*maxNotes {
		n++
	}
	if n != 2*maxNotes {
		t.Errorf("recognised %d times, want %d (%d per socket)", n, 2*maxNotes, maxNotes)
	}
}
