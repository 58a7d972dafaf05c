package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/peerhost"
	"github.com/tickwire/tickwire/relay"
	"github.com/tickwire/tickwire/rendezvous"
	"github.com/tickwire/tickwire/udp"
)

// natAttempt bounds the handshake to each of the host's candidates:
// the punches (rendezvous.PunchSchedule) open a path within a few round
// trips when one can open.
const natAttempt = 3 * time.Second

// natPeer is a -peer player's NAT traversal (docs/NAT.md): the client
// socket it joins from, whose mapping the lobby learned, and what the
// assignment said.
type natPeer struct {
	client   *udp.Conn
	relayed  netip.AddrPort // the joiner's side of its relay allocation
	assigned time.Time
	stderr   io.Writer
}

// learnMappings sends the host socket's and a new client socket's
// mapping requests to the lobby's reflector (the lobby hands them to
// the peers at the assignment).
func learnMappings(ctx context.Context, rv *lobby.RendezvousInfo, hc *udp.Conn, stderr io.Writer) (*natPeer, error) {
	ua, err := net.ResolveUDPAddr("udp4", rv.Addr)
	if err != nil {
		return nil, fmt.Errorf("the lobby's rendezvous address %q: %w", rv.Addr, err)
	}
	addr := ua.AddrPort()
	if len(rv.Ticket) != rendezvous.TicketSize {
		return nil, fmt.Errorf("the lobby's rendezvous ticket has %d bytes", len(rv.Ticket))
	}
	ticket := rendezvous.Ticket(rv.Ticket)
	cc, err := udp.Listen("udp4", ":0", udp.Config{})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, s := range []struct {
		c    *udp.Conn
		role rendezvous.Role
	}{{hc, rendezvous.RoleHost}, {cc, rendezvous.RoleClient}} {
		m, err := rendezvous.Reflect(rctx, rendezvous.PacketConn(s.c), addr, ticket, s.role, rendezvous.LocalAddrs(s.c.LocalAddr().Port()))
		if err != nil {
			cc.Close()
			return nil, err
		}
		fmt.Fprintf(stderr, "tickwire-bot: %s socket %v is mapped to %v\n", s.role, s.c.LocalAddr(), m)
	}
	return &natPeer{client: cc, stderr: stderr}, nil
}

// relayBindTime bounds binding a player's relay sides: a relay that
// does not answer delays the start by no more.
const relayBindTime = 2 * time.Second

// bindRelays binds, before the game's reader starts on the socket, the
// sides of the relay allocations the assignment names: the joiner's own
// on its client socket, or, for the host, each player's host side on
// the host socket, all within relayBindTime. A relay that does not
// answer leaves that pair to a direct path.
func (n *natPeer) bindRelays(ctx context.Context, a *lobby.Assignment, hc *udp.Conn) {
	n.assigned = time.Now()
	bctx, cancel := context.WithTimeout(ctx, relayBindTime)
	defer cancel()
	bind := func(c *udp.Conn, g *lobby.RelayGrant) netip.AddrPort {
		addr, err := netip.ParseAddrPort(g.Addr)
		if err == nil {
			var relayed netip.AddrPort
			relayed, err = relay.Bind(bctx, rendezvous.PacketConn(c), addr, g.Grant)
			if err == nil {
				return relayed
			}
		}
		fmt.Fprintf(n.stderr, "tickwire-bot: relay %s: %v\n", g.Addr, err)
		return netip.AddrPort{}
	}
	if a.Role != lobby.RoleHost {
		if a.Relay != nil {
			n.relayed = bind(n.client, a.Relay)
		}
		return
	}
	for _, p := range a.Players {
		if p.Relay != nil {
			bind(hc, p.Relay)
		}
	}
}

// punch sends the host's punches toward every player's candidates.
func (n *natPeer) punch(ctx context.Context, a *lobby.Assignment, peer *peerhost.Player) {
	var to []netip.AddrPort
	for _, p := range a.Players {
		for _, s := range p.ClientAddrs {
			if ap, err := netip.ParseAddrPort(s); err == nil {
				to = append(to, ap)
			}
		}
	}
	if len(to) == 0 {
		return
	}
	go rendezvous.Punch(ctx, to, func(b []byte, addr netip.AddrPort) { peer.HostDatagram(b, addr) })
}

// dialer returns the player's first dialer: on the client socket whose
// mapping the lobby learned, each of the host's candidates in turn for
// natAttempt, then the relay; later ones (host migration) are fresh.
func (n *natPeer) dialer(cfg tickwire.Config) func() tickwire.Dialer {
	first := true
	return func() tickwire.Dialer {
		if !first {
			return tickwire.Dialer{Config: cfg}
		}
		first = false
		cfg := cfg
		cfg.HandshakeTimeout = natAttempt
		return tickwire.Dialer{Config: cfg, Conn: n.client}
	}
}

// token is tok with the joiner's relayed address after the host's
// candidates.
func (n *natPeer) token(tok *tickwire.ConnectToken) *tickwire.ConnectToken {
	if !n.relayed.IsValid() || len(tok.ServerAddrs) >= tickwire.MaxTokenAddrs {
		return tok
	}
	t := *tok
	t.ServerAddrs = append(slices.Clone(tok.ServerAddrs), n.relayed.String())
	return &t
}

// path names how the player reached its host at addr.
func (n *natPeer) path(a *lobby.Assignment, addr netip.AddrPort) string {
	switch {
	case a.Role == lobby.RoleHost:
		return "self"
	case addr == n.relayed:
		return "relay"
	case len(a.Addrs) > 0 && addr.String() == a.Addrs[len(a.Addrs)-1]:
		return "direct"
	default:
		return "local"
	}
}
