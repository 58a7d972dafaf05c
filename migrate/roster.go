package migrate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Member is one player of a roster.
type Member struct {
	Slot     uint16 // its player slot (the first, for a connection with several)
	ClientID uint64 // the lobby's random id of its connection
	// Candidate is set when the player offered to host (a UDP port in
	// the lobby); Addr is then where the other players reach its host
	// socket ("host:port").
	Candidate bool
	Addr      string
}

// Limits of a roster (they bound its frame).
const (
	MaxMembers    = 64
	MaxAddrLength = 255
)

// Roster is what the host keeps every player informed of: its epoch,
// which member is the host (0 when the host is not a player) and the
// players connected to it, ascending by slot.
type Roster struct {
	Epoch   Epoch
	Host    uint16
	Members []Member
}

// Roster errors (Validate wraps them with the offending value).
var (
	ErrRosterSize      = errors.New("migrate: roster has no members or more than MaxMembers")
	ErrRosterOrder     = errors.New("migrate: roster members are not ascending, unique slots")
	ErrRosterClientID  = errors.New("migrate: roster client ids are not unique and non-zero")
	ErrRosterAddr      = errors.New("migrate: roster address missing, too long or set on a non-candidate")
	ErrRosterHost      = errors.New("migrate: roster host is not a member")
	ErrRosterEpochZero = errors.New("migrate: roster epoch is zero")
)

// Validate reports the first rule r breaks: 1..MaxMembers members in
// ascending slot order, unique non-zero client ids, an address (at most
// MaxAddrLength bytes) exactly on candidates, a host (if any) among the
// members, a non-zero epoch. A player follows only a valid roster.
func (r *Roster) Validate() error {
	if r.Epoch == 0 {
		return ErrRosterEpochZero
	}
	if len(r.Members) == 0 || len(r.Members) > MaxMembers {
		return fmt.Errorf("%w: %d", ErrRosterSize, len(r.Members))
	}
	ids := make(map[uint64]bool, len(r.Members))
	host := r.Host == 0
	for i, m := range r.Members {
		if m.Slot == 0 || i > 0 && r.Members[i-1].Slot >= m.Slot {
			return fmt.Errorf("%w: slot %d", ErrRosterOrder, m.Slot)
		}
		if m.ClientID == 0 || ids[m.ClientID] {
			return fmt.Errorf("%w: %#x", ErrRosterClientID, m.ClientID)
		}
		ids[m.ClientID] = true
		if m.Candidate != (m.Addr != "") || len(m.Addr) > MaxAddrLength {
			return fmt.Errorf("%w: slot %d", ErrRosterAddr, m.Slot)
		}
		host = host || m.Slot == r.Host
	}
	if !host {
		return fmt.Errorf("%w: slot %d", ErrRosterHost, r.Host)
	}
	return nil
}

// Member returns the member with slot.
func (r *Roster) Member(slot uint16) (Member, bool) {
	i, ok := slices.BinarySearchFunc(r.Members, slot, func(m Member, s uint16) int { return cmp.Compare(m.Slot, s) })
	if !ok {
		return Member{}, false
	}
	return r.Members[i], true
}

// Clone returns a copy of r that shares nothing with it.
func (r *Roster) Clone() Roster {
	return Roster{Epoch: r.Epoch, Host: r.Host, Members: slices.Clone(r.Members)}
}

// Succession appends to dst the order in which the members would take
// over from the host: the candidates other than the host, by ascending
// client id (the seed's "sort session ids", with ids the lobby drew at
// random, so nobody picks their place). The first is the warm standby.
func (r *Roster) Succession(dst []Member) []Member {
	start := len(dst)
	for _, m := range r.Members {
		if m.Candidate && m.Slot != r.Host {
			dst = append(dst, m)
		}
	}
	slices.SortFunc(dst[start:], func(a, b Member) int { return cmp.Compare(a.ClientID, b.ClientID) })
	return dst
}

// Elect is the election every player computes alike: the first member of
// r's succession that is not struck off (a successor that failed to
// announce itself in time), and the epoch it takes over with — r.Epoch
// plus its round, the number of successors tried including it, so that a
// late successor and the one elected after it never share an epoch.
// ok is false when no candidate is left.
func Elect(r *Roster, struck func(slot uint16) bool) (winner Member, epoch Epoch, ok bool) {
	var buf [8]Member
	round := Epoch(0)
	for _, m := range r.Succession(buf[:0]) {
		round++
		if struck == nil || !struck(m.Slot) {
			return m, r.Epoch + round, true
		}
	}
	return Member{}, 0, false
}
