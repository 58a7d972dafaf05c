package lobby

import (
	"crypto/rand"
	"net/netip"
	"slices"
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
