package lobby

import (
	"cmp"
	"crypto/rand"
	"net/netip"
	"slices"

	"github.com/tickwire/tickwire"
)

// NAT traversal (Config.Rendezvous, docs/NAT.md): the reflector learns
// the mappings of a seat's sockets and reports them here; the
// assignment turns them into candidates.

// ticketSize is the size of a rendezvous ticket (rendezvous.TicketSize).
const ticketSize = 16

// maxNotes bounds the mappings one seat may report: a player learns two
// (its host and client sockets) and resends a few.
const maxNotes = 32

// mapping is what the reflector learned of one of a seat's sockets.
type mapping struct {
	public netip.AddrPort   // the address its requests came from
	local  []netip.AddrPort // the addresses the player says it has
	notes  int
}

// The sockets of a seat, as NoteMapping names them.
const (
	hostSocket   = 0
	clientSocket = 1
)

// issueTicket gives s a rendezvous ticket if its room is peer-hosted
// and the lobby learns mappings; l.mu is held.
func (l *Lobby) issueTicket(s *seat) {
	if l.cfg.Rendezvous == "" || s.room == nil || s.room.hosting != PeerHosted {
		return
	}
	var t [ticketSize]byte
	rand.Read(t[:])
	l.ticketMu.Lock()
	defer l.ticketMu.Unlock()
	if l.tickets == nil {
		l.tickets = map[[ticketSize]byte]*seat{}
	}
	l.tickets[t] = s
	s.ticket = &t
}

// dropTicket forgets s's ticket; l.mu is held.
func (l *Lobby) dropTicket(s *seat) {
	if s.ticket != nil {
		l.ticketMu.Lock()
		delete(l.tickets, *s.ticket)
		l.ticketMu.Unlock()
		s.ticket = nil
	}
}

// NoteMapping records, for the seat that holds ticket, the public
// mapping of its host socket (host) or client socket, as the reflector
// saw it (the address the request came from), and the local addresses
// the player sent along. It reports whether the ticket is a seat's
// (the reflector answers only then), at most 32 times per seat. It is
// what package rendezvous's ReflectorConfig.Note calls.
func (l *Lobby) NoteMapping(ticket [16]byte, host bool, public netip.AddrPort, local []netip.AddrPort) bool {
	// A flood of made-up tickets costs a read lock, not the lobby's.
	l.ticketMu.RLock()
	_, ok := l.tickets[ticket]
	l.ticketMu.RUnlock()
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.tickets[ticket]
	if s == nil || s.room == nil {
		return false
	}
	which := clientSocket
	if host {
		which = hostSocket
	}
	m := &s.mapped[which]
	if m.notes >= maxNotes {
		return false
	}
	m.notes++
	m.public = netip.AddrPortFrom(public.Addr().Unmap(), public.Port())
	m.local = slices.Clone(local)
	return true
}

// hostAddrOf is where s's host socket is reached from the internet: its
// learned mapping, else the address of its HTTP requests with the port
// it offered.
func hostAddrOf(s *seat) netip.AddrPort {
	if m := s.mapped[hostSocket].public; m.IsValid() {
		return m
	}
	if s.remote.IsValid() && s.hostPort != 0 {
		return netip.AddrPortFrom(s.remote, s.hostPort)
	}
	return netip.AddrPort{}
}

// publicIP is the address s is seen at from the internet.
func publicIP(s *seat) netip.Addr {
	for _, m := range s.mapped {
		if m.public.IsValid() {
			return m.public.Addr()
		}
	}
	return s.remote
}

// sameNAT reports whether a and b are seen at one public address (and
// so, likely, share a LAN behind one NAT).
func sameNAT(a, b *seat) bool {
	ip := publicIP(a)
	return ip.IsValid() && ip == publicIP(b)
}

// candidates are where peer reaches the socket which of s: its local
// addresses first when both share a public address (a NAT seldom loops
// its own mapping back), then its public mapping; at most max.
func candidates(s, peer *seat, which, max int) []string {
	var out []string
	m := s.mapped[which]
	if sameNAT(s, peer) {
		for _, a := range m.local {
			if len(out) < max-1 {
				out = append(out, a.String())
			}
		}
	}
	pub := m.public
	if which == hostSocket {
		pub = hostAddrOf(s)
	}
	if pub.IsValid() {
		out = append(out, pub.String())
	}
	return out
}

// RelaySuccessors bounds the candidates, first in the succession,
// who get relay allocations toward every other player besides the
// host. It equals peerhost.MaxSuccessors, the successors a host hands
// credentials for (the players can follow only those); tickwire-bot's
// tests check that the two stay equal.
const RelaySuccessors = 8

// natViews are the players' views of each other in peer-hosted room r
// (players, in r's order): a player who can host sees the candidates of
// every other player's client socket, which it punches toward when it
// hosts (at the start, or promoted: host migration). With Config.Relay,
// each pair of a relay candidate (the host and the first
// RelaySuccessors candidates of the succession, by ascending client
// id as package migrate elects) and another player gets an allocation:
// the candidate sees its host side in the player's Relay, the player
// its joiner side in the candidate's HostRelay. A game of n players
// costs at most (1+RelaySuccessors)×(n-1) grants; the relay opens an
// allocation only when both sides bind.
func (l *Lobby) natViews(r *room, players []AssignedPlayer) [][]AssignedPlayer {
	views := make([][]AssignedPlayer, len(players))
	for v := range views {
		views[v] = slices.Clone(players)
		if players[v].HostAddr == "" {
			continue
		}
		for i, s := range r.players {
			if i != v {
				views[v][i].ClientAddrs = candidates(s, r.players[v], clientSocket, tickwire.MaxTokenAddrs)
			}
		}
	}
	if l.cfg.Relay == nil {
		return views
	}
	var host int
	var succ []int
	for i, p := range players {
		switch {
		case p.Host:
			host = i
		case p.HostAddr != "":
			succ = append(succ, i)
		}
	}
	slices.SortFunc(succ, func(a, b int) int { return cmp.Compare(players[a].ClientID, players[b].ClientID) })
	for _, c := range append([]int{host}, succ[:min(len(succ), RelaySuccessors)]...) {
		for p := range players {
			if p == c {
				continue
			}
			pair, err := l.RelayGrants()
			if err != nil {
				l.cfg.Logger.Warn("lobby: no relay allocation", "room", r.id, "candidate", players[c].Name, "player", players[p].Name, "err", err)
				continue
			}
			views[c][p].Relay = &RelayGrant{Addr: pair.Addr, Grant: pair.Host}
			views[p][c].HostRelay = &RelayGrant{Addr: pair.Addr, Grant: pair.Joiner}
		}
	}
	return views
}
