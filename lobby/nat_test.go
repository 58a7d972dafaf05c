package lobby

import (
	"bytes"
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
// host's local address first. The assignment of each player who can
// host lists every other player's client candidates; each pair of a
// player who can host and another player has a relay allocation, whose
// host side is in the first's assignment and joiner side in the
// other's.
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
	for _, a := range []*Assignment{ba, aa, ca} {
		for i, p := range a.Players {
			if p.HostAddr != wantHost[i] {
				t.Errorf("%s's view of %s: %+v", a.Players[a.Slot-1].Name, p.Name, p)
			}
		}
	}
	// Who can host (Bob, Alice) sees the others' client candidates.
	wantClient := [][][]string{
		{nil, {"198.18.0.12:6001"}, {"198.18.1.3:43000", "198.18.0.11:7001"}}, // Bob's view
		{{"198.18.0.11:5001"}, nil, {"198.18.0.11:7001"}},                     // Alice's
		{nil, nil, nil}, // Carol's: she cannot host
	}
	for v, a := range []*Assignment{ba, aa, ca} {
		for i, p := range a.Players {
			if !slices.Equal(p.ClientAddrs, wantClient[v][i]) {
				t.Errorf("%s's view of %s: client candidates %q, want %q", a.Players[v].Name, p.Name, p.ClientAddrs, wantClient[v][i])
			}
		}
	}
	grant := func(g *RelayGrant) relay.Grant {
		t.Helper()
		r, err := relay.Open(relay.Key{7}, g.Grant)
		if err != nil || g.Addr != "198.18.0.1:3479" {
			t.Fatalf("grant at %s: %v", g.Addr, err)
		}
		return r
	}
	// An allocation for each pair of a candidate (Bob, Alice) and
	// another player: the candidate's host side in its view's Relay,
	// the player's joiner side in its view's HostRelay of the candidate.
	views := []*Assignment{ba, aa, ca}
	allocs := map[uint64]bool{}
	for c := range views {
		for p := range views {
			hs, js := views[c].Players[p].Relay, views[p].Players[c].HostRelay
			if c == p || wantHost[c] == "" {
				if hs != nil || js != nil {
					t.Errorf("%s × %s: relay sides %+v, %+v, want none", views[c].Players[c].Name, views[p].Players[p].Name, hs, js)
				}
				continue
			}
			if hs == nil || js == nil {
				t.Fatalf("%s × %s: relay sides %+v, %+v", views[c].Players[c].Name, views[p].Players[p].Name, hs, js)
			}
			h, j := grant(hs), grant(js)
			if h.Alloc != j.Alloc || h.Side != relay.SideHost || j.Side != relay.SideJoiner || allocs[h.Alloc] {
				t.Errorf("%s × %s: host side %+v, joiner side %+v", views[c].Players[c].Name, views[p].Players[p].Name, h, j)
			}
			allocs[h.Alloc] = true
		}
	}
	same := func(a, b *RelayGrant) bool { return a != nil && b != nil && bytes.Equal(a.Grant, b.Grant) }
	if ba.Relay != nil || !same(aa.Relay, aa.Players[0].HostRelay) || !same(ca.Relay, ca.Players[0].HostRelay) {
		t.Errorf("sides toward the host: Bob %+v, Alice %+v, Carol %+v", ba.Relay, aa.Relay, ca.Relay)
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
