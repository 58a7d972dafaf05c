package relay

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Control packets: the bind request a side sends, the reply the relay
// sends back. Every one starts with a prefix whose first byte no
// tickwire packet has ('R', where tickwire's is 't'), so a socket that
// carries both tells them apart by IsControl before proto sees them.
const (
	Magic0  = 'R'
	Magic1  = 'w'
	Version = 1

	// PrefixSize is the size of the prefix: magic, version, type.
	PrefixSize = 4
)

// PacketType is byte 3 of a control packet.
type PacketType uint8

const (
	PacketBindRequest PacketType = 1 // side → relay: a grant
	PacketBindReply   PacketType = 2 // relay → side: the relayed port, or why not
)

// Control packet layout (offsets in bytes, little-endian).
const (
	offVersion = 2
	offType    = 3

	// BindRequestSize is the size of a bind request: prefix + grant.
	BindRequestSize = PrefixSize + GrantSize

	replyOffStatus = 4
	replyOffFlags  = 5
	replyOffSide   = 6
	replyOffAlloc  = 7
	replyOffPort   = 15
	// BindReplySize is the size of a bind reply, less than a bind
	// request's: the relay never sends more than it received.
	BindReplySize = 17

	flagPeerBound = 0x01
	flagsKnown    = flagPeerBound
)

// Status is a bind reply's verdict.
type Status uint8

const (
	// StatusOK: from the control address, the side's relayed port was
	// allocated (BindReply.Port); from the relayed port, the sender's
	// address is bound to the side.
	StatusOK Status = 0
	// StatusExpired: the grant's expiry has passed.
	StatusExpired Status = 1
	// StatusInUse: another address holds the side and was heard from
	// within Config.RebindQuiet.
	StatusInUse Status = 2
	// StatusFull: the relay holds Config.MaxAllocations allocations, or
	// has no free port.
	StatusFull Status = 3
	// StatusSpent: the allocation forwarded its byte budget.
	StatusSpent Status = 4
	statusEnd   Status = 5
)

var statusNames = [...]string{
	StatusOK:      "ok",
	StatusExpired: "grant expired",
	StatusInUse:   "side in use by another address",
	StatusFull:    "relay full",
	StatusSpent:   "byte budget spent",
}

func (s Status) String() string {
	if s < statusEnd {
		return statusNames[s]
	}
	return "unknown"
}

// Decoding errors are static so that a flood of garbage allocates nothing.
var (
	errTruncated = errors.New("relay: control packet: truncated")
	errMagic     = errors.New("relay: control packet: not a relay control packet")
	errVersion   = errors.New("relay: control packet: unknown version")
	errType      = errors.New("relay: control packet: unexpected type")
	errLength    = errors.New("relay: control packet: wrong length")
	errStatus    = errors.New("relay: bind reply: unknown status")
	errFlags     = errors.New("relay: bind reply: unknown flags")
	errSide      = errors.New("relay: bind reply: side is neither 0 nor 1")
)

// IsControl reports whether b is a relay control packet (by its magic
// bytes; it may still fail to parse). No tickwire packet is one.
func IsControl(b []byte) bool {
	return len(b) >= 2 && b[0] == Magic0 && b[1] == Magic1
}

func appendPrefix(dst []byte, t PacketType) []byte {
	return append(dst, Magic0, Magic1, Version, byte(t))
}

func parsePrefix(b []byte, t PacketType, size int) error {
	switch {
	case len(b) < PrefixSize:
		return errTruncated
	case !IsControl(b):
		return errMagic
	case b[offVersion] != Version:
		return errVersion
	case PacketType(b[offType]) != t:
		return errType
	case len(b) != size:
		return errLength
	}
	return nil
}

// AppendBindRequest appends a bind request carrying grant (a token from
// Mint) to dst. The same packet asks the control address for a relayed
// port and, sent to that port, binds the sender's address (and keeps
// the binding and the sender's NAT mapping alive).
func AppendBindRequest(dst, grant []byte) []byte {
	return append(appendPrefix(dst, PacketBindRequest), grant...)
}

// ParseBindRequest returns the grant token in a bind request (a
// subslice of b); its MAC is for the relay to check.
func ParseBindRequest(b []byte) (grant []byte, err error) {
	if err := parsePrefix(b, PacketBindRequest, BindRequestSize); err != nil {
		return nil, err
	}
	return b[PrefixSize:], nil
}

// BindReply is the relay's answer to an authenticated bind request.
// A request whose grant fails its MAC gets no answer.
type BindReply struct {
	Status Status
	// Alloc and Side repeat the grant's.
	Alloc uint64
	Side  uint8
	// Port is the side's relayed port, on the relay's address.
	Port uint16
	// PeerBound: the other side is bound too, so datagrams flow.
	PeerBound bool
}

// Relayed is the side's relayed address: relay's address (the one the
// bind request was sent to) with the reply's port.
func (r BindReply) Relayed(relay netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(relay.Addr(), r.Port)
}

// Append appends the reply (BindReplySize bytes) to dst.
func (r BindReply) Append(dst []byte) []byte {
	dst = appendPrefix(dst, PacketBindReply)
	var flags byte
	if r.PeerBound {
		flags |= flagPeerBound
	}
	dst = append(dst, byte(r.Status), flags, r.Side)
	dst = binary.LittleEndian.AppendUint64(dst, r.Alloc)
	return binary.LittleEndian.AppendUint16(dst, r.Port)
}

// ParseBindReply decodes a bind reply.
func ParseBindReply(b []byte) (BindReply, error) {
	if err := parsePrefix(b, PacketBindReply, BindReplySize); err != nil {
		return BindReply{}, err
	}
	r := BindReply{
		Status:    Status(b[replyOffStatus]),
		Side:      b[replyOffSide],
		Alloc:     binary.LittleEndian.Uint64(b[replyOffAlloc:]),
		Port:      binary.LittleEndian.Uint16(b[replyOffPort:]),
		PeerBound: b[replyOffFlags]&flagPeerBound != 0,
	}
	switch {
	case r.Status >= statusEnd:
		return BindReply{}, errStatus
	case b[replyOffFlags]&^flagsKnown != 0:
		return BindReply{}, errFlags
	case r.Side > SideHost:
		return BindReply{}, errSide
	}
	return r, nil
}
