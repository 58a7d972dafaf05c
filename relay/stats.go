package relay

import "sync/atomic"

// DropReason is why the relay dropped a datagram.
type DropReason uint8

const (
	// DropMalformed: not a bind request where one is due (the control
	// address), an undecodable control packet, or a datagram from a bound
	// side that is no tickwire packet (it does not start with tickwire's
	// magic bytes) or is larger than MaxDatagram.
	DropMalformed DropReason = iota
	// DropBadGrant: the grant's MAC does not verify (not answered).
	DropBadGrant
	// DropExpired: the grant's expiry has passed (StatusExpired).
	DropExpired
	// DropWrongPort: a valid grant of another allocation or side sent to
	// a relayed port (not answered).
	DropWrongPort
	// DropInUse: a bind from a second address while the bound one is
	// live (StatusInUse).
	DropInUse
	// DropFull: a new allocation beyond MaxAllocations, or no free port
	// (StatusFull).
	DropFull
	// DropUnbound: a datagram on a relayed port from an address that is
	// not the side's bound one. Never forwarded.
	DropUnbound
	// DropPeerUnbound: a datagram from a bound side before the other
	// side is bound.
	DropPeerUnbound
	// DropRate: over the allocation's rate (Config.Rate).
	DropRate
	// DropBudget: over the allocation's byte budget (StatusSpent to a
	// bind).
	DropBudget
	// DropSend: the socket refused to send it.
	DropSend
	dropReasonEnd
)

var dropNames = [...]string{
	DropMalformed:   "malformed",
	DropBadGrant:    "bad_grant",
	DropExpired:     "expired",
	DropWrongPort:   "wrong_port",
	DropInUse:       "in_use",
	DropFull:        "full",
	DropUnbound:     "unbound",
	DropPeerUnbound: "peer_unbound",
	DropRate:        "rate",
	DropBudget:      "budget",
	DropSend:        "send",
}

// String is the reason's metric label.
func (r DropReason) String() string {
	if r < dropReasonEnd {
		return dropNames[r]
	}
	return "unknown"
}

// DropReasons is the number of drop reasons (Stats.Dropped's length).
const DropReasons = int(dropReasonEnd)

// Stats are a relay's counters since it started.
type Stats struct {
	// Allocations is how many allocations are held now; Bound how many
	// of their sides are bound.
	Allocations, Bound int
	// AllocationsCreated and AllocationsExpired count allocations made
	// and closed for idleness.
	AllocationsCreated, AllocationsExpired uint64
	// Binds counts bind requests accepted (StatusOK), at the control
	// address and at relayed ports.
	Binds uint64
	// Forwarded and ForwardedBytes count datagrams sent on to the other
	// side.
	Forwarded, ForwardedBytes uint64
	// PacketsIn, BytesIn, PacketsOut and BytesOut count every datagram
	// received and sent, on every socket (bind replies included).
	PacketsIn, BytesIn, PacketsOut, BytesOut uint64
	// Dropped counts datagrams dropped, by DropReason.
	Dropped [DropReasons]uint64
}

// counters are the Server's live Stats.
type counters struct {
	allocations, bound                     atomic.Int64
	allocationsCreated, allocationsExpired atomic.Uint64
	binds                                  atomic.Uint64
	forwarded, forwardedBytes              atomic.Uint64
	packetsIn, bytesIn                     atomic.Uint64
	packetsOut, bytesOut                   atomic.Uint64
	dropped                                [DropReasons]atomic.Uint64
}

func (c *counters) in(n int)          { c.packetsIn.Add(1); c.bytesIn.Add(uint64(n)) }
func (c *counters) out(n int)         { c.packetsOut.Add(1); c.bytesOut.Add(uint64(n)) }
func (c *counters) drop(r DropReason) { c.dropped[r].Add(1) }
func (c *counters) forward(packets, n int) {
	c.forwarded.Add(uint64(packets))
	c.forwardedBytes.Add(uint64(n))
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Allocations:        int(c.allocations.Load()),
		Bound:              int(c.bound.Load()),
		AllocationsCreated: c.allocationsCreated.Load(),
		AllocationsExpired: c.allocationsExpired.Load(),
		Binds:              c.binds.Load(),
		Forwarded:          c.forwarded.Load(),
		ForwardedBytes:     c.forwardedBytes.Load(),
		PacketsIn:          c.packetsIn.Load(),
		BytesIn:            c.bytesIn.Load(),
		PacketsOut:         c.packetsOut.Load(),
		BytesOut:           c.bytesOut.Load(),
	}
	for r := range s.Dropped {
		s.Dropped[r] = c.dropped[r].Load()
	}
	return s
}
