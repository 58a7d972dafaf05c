package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"syscall"
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

// natMigrateAttempt bounds the handshake to a successor's public
// mapping after a host migration before the relayed address is tried:
// the successor punches toward the follower's mapping from its
// promotion on, so a direct path opens within a few round trips of it.
const natMigrateAttempt = time.Second

// natHold is how long a game this player took over holds its tick for
// the others to re-dial (peerhost.Config.Hold): a follower through the
// relay first waits out its direct attempt.
const natHold = natMigrateAttempt + time.Second

// natPeer is a -peer player's NAT traversal (docs/NAT.md): the client
// socket it joins from, whose mapping the lobby learned, and what the
// assignment said.
type natPeer struct {
	client *udp.Conn
	// port is the client socket's local port: a session to a successor
	// re-binds it when the first session's socket is closed, so that it
	// has the mapping the lobby learned (and the successor punches
	// toward).
	port     uint16
	relayed  netip.AddrPort            // the joiner's side of its relay allocation toward the host
	toHost   map[uint16]netip.AddrPort // its joiner sides toward the candidates' host sockets, by slot
	assigned time.Time
	stderr   io.Writer

	// The relay sides bound, kept alive every relay.KeepAliveInterval:
	// an allocation for a host migration may forward nothing for
	// longer than the relay's idle timeout. Host sides go out on the
	// host socket, joiner sides on the socket of the current session.
	mu       sync.Mutex
	keep     []boundSide
	hostConn *turnConn
	cur      *turnConn
	// idle: the client socket is open and no session has it (the host's,
	// until it follows a successor).
	idle bool
}

// boundSide is a relay side bound: its bind request (the keep-alive),
// where it goes, and on which socket.
type boundSide struct {
	host    bool
	relayed netip.AddrPort
	req     []byte
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
	return &natPeer{client: cc, port: cc.LocalAddr().Port(), toHost: map[uint16]netip.AddrPort{}, stderr: stderr}, nil
}

// relayBindTime bounds binding a player's relay sides: a relay that
// does not answer delays the start by no more.
const relayBindTime = 2 * time.Second

// bindRelays binds, before the game's reader starts on the socket, the
// sides of the relay allocations the assignment names, all within
// relayBindTime: on the client socket, the joiner's sides toward the
// host's and the first successors' host sockets (the host's too: it
// joins its own game on loopback, but follows a successor from its
// client socket if it steps down); on the host socket of a player who
// can host, the host's sides for every other player. A relay that does
// not answer leaves those pairs to a direct path.
func (n *natPeer) bindRelays(ctx context.Context, a *lobby.Assignment, hc *udp.Conn) {
	n.assigned = time.Now()
	bctx, cancel := context.WithTimeout(ctx, relayBindTime)
	defer cancel()
	bind := func(c *udp.Conn, g *lobby.RelayGrant, host bool) netip.AddrPort {
		addr, err := netip.ParseAddrPort(g.Addr)
		if err == nil {
			var relayed netip.AddrPort
			relayed, err = relay.Bind(bctx, rendezvous.PacketConn(c), addr, g.Grant)
			if err == nil {
				n.keep = append(n.keep, boundSide{host: host, relayed: relayed, req: relay.AppendBindRequest(nil, g.Grant)})
				return relayed
			}
		}
		fmt.Fprintf(n.stderr, "tickwire-bot: relay %s: %v\n", g.Addr, err)
		return netip.AddrPort{}
	}
	for _, p := range a.Players {
		if p.HostRelay != nil {
			if r := bind(n.client, p.HostRelay, false); r.IsValid() {
				n.toHost[p.Slot] = r
				if p.Host {
					n.relayed = r
				}
			}
		}
	}
	for _, p := range a.Players {
		if p.Relay != nil {
			bind(hc, p.Relay, true)
		}
	}
}

// keepAlive sends every bound side's bind request to its relayed
// address every relay.KeepAliveInterval until ctx ends.
func (n *natPeer) keepAlive(ctx context.Context) {
	t := time.NewTicker(relay.KeepAliveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.mu.Lock()
		hc, cur := n.hostConn, n.cur
		n.mu.Unlock()
		for _, b := range n.keep {
			c := cur
			if b.host {
				c = hc
			}
			if c != nil {
				c.WriteBatch([]udp.Message{{Buf: b.req, N: len(b.req), Addr: b.relayed}})
			}
		}
	}
}

// turnConn is a socket written to by its owner (a session, or the
// host's server) and by the relay keep-alives: writes take turns
// (udp.Conn takes one writer at a time).
type turnConn struct {
	udp.BatchConn
	mu sync.Mutex
}

func (c *turnConn) WriteBatch(msgs []udp.Message) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.BatchConn.WriteBatch(msgs)
}

// hostSocket is the host socket hc as the game uses it, its writes
// shared with the keep-alives.
func (n *natPeer) hostSocket(hc udp.BatchConn) udp.BatchConn {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hostConn = &turnConn{BatchConn: hc}
	return n.hostConn
}

// keepIdle keeps the client socket, which no session has, for the
// relay keep-alives of its joiner sides until a session to a successor
// takes its port.
func (n *natPeer) keepIdle() {
	n.session(n.client)
	n.mu.Lock()
	n.idle = true
	n.mu.Unlock()
}

// session makes c the socket of the current session.
func (n *natPeer) session(c udp.BatchConn) *turnConn {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cur = &turnConn{BatchConn: c}
	return n.cur
}

// punch sends the host's punches toward every other player's client
// candidates: at the start, and promoted (host migration).
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
// natAttempt, then the relay; later ones (its own promoted host, the
// host it lost) are fresh.
func (n *natPeer) dialer(cfg tickwire.Config) func() tickwire.Dialer {
	first := true
	return func() tickwire.Dialer {
		if !first {
			return tickwire.Dialer{Config: cfg}
		}
		first = false
		cfg := cfg
		cfg.HandshakeTimeout = natAttempt
		return tickwire.Dialer{Config: cfg, Conn: n.session(n.client)}
	}
}

// rebindWait bounds the wait for the client socket's port to be free
// again: the session before it closes its socket as it ends.
const rebindWait = time.Second

// successor returns the player's peerhost.Config.Successor: the
// session to an elected successor goes out from the client socket's
// port, re-bound (a fresh port when it stays taken, whose mapping
// nobody learned), to the successor's public mapping for
// natMigrateAttempt, then to the player's side of its relay
// allocation toward the successor, if bound.
func (n *natPeer) successor(cfg tickwire.Config) func(slot uint16, addr string) (tickwire.Dialer, []string) {
	return func(slot uint16, addr string) (tickwire.Dialer, []string) {
		n.mu.Lock()
		if n.idle {
			n.client.Close() // its port is the session's now
			n.idle = false
		}
		n.mu.Unlock()
		c, err := listenPort(n.port)
		if err != nil {
			fmt.Fprintf(n.stderr, "tickwire-bot: the client socket's port %d: %v\n", n.port, err)
			if c, err = udp.Listen("udp4", ":0", udp.Config{}); err != nil {
				fmt.Fprintf(n.stderr, "tickwire-bot: no socket for the successor: %v\n", err)
				return tickwire.Dialer{Config: cfg}, nil
			}
		}
		cfg := cfg
		cfg.HandshakeTimeout = natMigrateAttempt
		addrs := []string{addr}
		if r := n.toHost[slot]; r.IsValid() {
			addrs = append(addrs, r.String())
		}
		return tickwire.Dialer{Config: cfg, Conn: n.session(c)}, addrs
	}
}

// listenPort binds a UDP socket to port, waiting up to rebindWait for
// the port to be free.
func listenPort(port uint16) (*udp.Conn, error) {
	deadline := time.Now().Add(rebindWait)
	for {
		c, err := udp.Listen("udp4", ":"+strconv.Itoa(int(port)), udp.Config{})
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(10 * time.Millisecond) // the old socket's close is under way
	}
}

// followed is the path by which the session to successor slot reached
// it at addr: its relayed address, or its mapping.
func (n *natPeer) followed(slot uint16, addr netip.AddrPort) string {
	if r := n.toHost[slot]; r.IsValid() && r == addr {
		return "relay"
	}
	return "direct"
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
