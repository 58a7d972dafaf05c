package session

import (
	"crypto/rand"
	"net/netip"
	"time"
)

// path is where a server's session sends, and whether that address has
// proved it receives there. The handshake validates the first address
// (the client echoed a cookie sent to it). An authenticated packet newer
// than any before it from another address moves the session there at
// once, as NAT rebinding needs, but the new address is not trusted yet:
// a path challenge goes to it with every packet, and until the matching
// path response comes back from it the session sends it at most
// amplification times the bytes it received from it (QUIC's rule, RFC
// 9000 §8–9). An attacker that forges its own session's source address
// therefore reflects at most that much at a victim. A challenge that is
// not answered within pathTimeout moves the session back to the last
// validated address.
type path struct {
	addr      netip.AddrPort
	validated bool
	fallback  netip.AddrPort // last validated address while addr is not
	in, out   int            // bytes received from and sent to addr while not validated
	challenge [8]byte
	since     time.Time // when addr became the unvalidated path
	from      netip.AddrPort
	// answer holds the data of a path challenge received, owed a path
	// response in the next packet.
	answer    [8]byte
	answerDue bool
	// counters
	moves, validations, reverts, blocked uint64
}

const (
	amplification = 3
	pathTimeout   = 2 * time.Second
)

// PathStats counts what path validation did.
type PathStats struct {
	Moves       uint64 // address changes followed (NAT rebinding or forgery)
	Validations uint64 // new addresses that answered their challenge
	Reverts     uint64 // moves undone: the new address never answered
	Blocked     uint64 // datagrams not sent to an unvalidated address (over budget)
}

// SetAddr fixes the session's peer address as validated (the handshake
// proved it).
func (s *Session) SetAddr(addr netip.AddrPort) {
	s.path.addr, s.path.validated = addr, true
}

// Addr is where the session's packets go now.
func (s *Session) Addr() netip.AddrPort { return s.path.addr }

// PathStats returns the path validation counters.
func (s *Session) PathStats() PathStats {
	p := &s.path
	return PathStats{Moves: p.moves, Validations: p.validations, Reverts: p.reverts, Blocked: p.blocked}
}

// Arrived records where an opened packet numbered pn, of size bytes, came
// from, before Receive processes it, and reports whether the session
// moved to a new address.
func (s *Session) Arrived(from netip.AddrPort, pn uint64, size int, now time.Time) (moved bool) {
	p := &s.path
	p.from = from
	if from == p.addr {
		if !p.validated {
			p.in += size
		}
		return false
	}
	if pn < s.acks.LargestReceived() {
		return false // an older packet from elsewhere: a late one, or a copy
	}
	if from == p.fallback {
		// Back at the last validated address: it proved itself already.
		p.addr, p.validated, p.fallback = from, true, netip.AddrPort{}
		p.moves++
		return true
	}
	if p.validated {
		p.fallback = p.addr
	}
	p.addr, p.validated = from, false
	p.in, p.out = size, 0
	p.since = now
	rand.Read(p.challenge[:])
	p.moves++
	return true
}

// Allow says whether a datagram of n bytes may go to the session's
// address now, and counts it.
func (s *Session) Allow(n int) bool {
	p := &s.path
	if p.validated {
		return true
	}
	if p.out+n > amplification*p.in {
		p.blocked++
		return false
	}
	p.out += n
	return true
}

// checkPath moves the session back to its last validated address when
// the new one did not answer its challenge in time.
func (s *Session) checkPath(now time.Time) {
	p := &s.path
	if p.validated || !p.fallback.IsValid() || now.Sub(p.since) < pathTimeout {
		return
	}
	p.addr, p.validated = p.fallback, true
	p.reverts++
}

// pathResponse takes a path response: it validates the session's address
// when it came from there with that address's challenge.
func (s *Session) pathResponse(data [8]byte) {
	p := &s.path
	if p.validated || p.from != p.addr || data != p.challenge {
		return
	}
	p.validated = true
	p.fallback = netip.AddrPort{}
	p.validations++
}
