package main

import (
	"io"
	"net/netip"
	"slices"
	"testing"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/peerhost"
	"github.com/tickwire/tickwire/udp"
)

// TestSuccessorRoute: a follower's session to successor slot 2 goes out
// from its client socket's port, bound again once the first session's
// socket is closed, to the successor's mapping, then to its side of
// the pair's relay allocation, each tried for natMigrateAttempt; the
// path is "relay" when the session reached the relayed address. To a
// successor without a relay side it dials the mapping only, and from a
// new port while the old one is still taken.
func TestSuccessorRoute(t *testing.T) {
	first, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	relayed := netip.MustParseAddrPort("198.18.0.1:40001")
	n := &natPeer{client: first, port: first.LocalAddr().Port(), toHost: map[uint16]netip.AddrPort{2: relayed}, stderr: io.Discard}
	route := n.successor(tickwire.Config{})
	first.Close() // the session to the lost host ended

	d, addrs := route(2, "198.18.0.12:5000")
	if d.Conn == nil || d.Conn.LocalAddr().Port() != n.port || d.Config.HandshakeTimeout != natMigrateAttempt ||
		!slices.Equal(addrs, []string{"198.18.0.12:5000", relayed.String()}) {
		t.Fatalf("dialer %+v from %v, addresses %q", d.Config, d.Conn.LocalAddr(), addrs)
	}
	if p := n.followed(2, relayed); p != "relay" {
		t.Errorf("path via the relayed address: %q", p)
	}
	if p := n.followed(2, netip.MustParseAddrPort("198.18.0.12:5000")); p != "direct" {
		t.Errorf("path via the mapping: %q", p)
	}

	// The port still taken (by d's socket): a new one after rebindWait.
	d3, addrs := route(3, "198.18.0.13:5000")
	defer d3.Conn.Close()
	d.Conn.Close()
	if d3.Conn == nil || d3.Conn.LocalAddr().Port() == n.port || !slices.Equal(addrs, []string{"198.18.0.13:5000"}) {
		t.Fatalf("from %v to %q", d3.Conn.LocalAddr(), addrs)
	}
}

// TestSuccessorRouteIdle: the host's client socket, which no session
// had (keepIdle), is closed when the host follows a successor, and its
// port is the session's.
func TestSuccessorRouteIdle(t *testing.T) {
	idle, err := udp.Listen("udp4", ":0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := &natPeer{client: idle, port: idle.LocalAddr().Port(), toHost: map[uint16]netip.AddrPort{}, stderr: io.Discard}
	n.keepIdle()
	d, addrs := n.successor(tickwire.Config{})(2, "198.18.0.12:5000")
	defer d.Conn.Close()
	if d.Conn.LocalAddr().Port() != n.port || n.cur.BatchConn != d.Conn.(*turnConn).BatchConn || !slices.Equal(addrs, []string{"198.18.0.12:5000"}) {
		t.Fatalf("from %v (the idle socket's port %d) to %q", d.Conn.LocalAddr(), n.port, addrs)
	}
}

// TestRelaySuccessorsMatch: the lobby grants relay allocations to as
// many successors as a peer host hands credentials for; more would be
// grants nobody uses, fewer would leave a successor unreachable
// through restrictive NATs.
func TestRelaySuccessorsMatch(t *testing.T) {
	if lobby.RelaySuccessors != peerhost.MaxSuccessors {
		t.Errorf("lobby.RelaySuccessors %d, peerhost.MaxSuccessors %d", lobby.RelaySuccessors, peerhost.MaxSuccessors)
	}
}
