package rendezvous

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Packet layout (offsets in bytes; ports big-endian). Every rendezvous
// packet starts with the magic 'R' 'v', the version and the type; a
// tickwire packet starts with 't' 'w' and a relay control packet with
// 'R' 'w', so the three never look alike.
//
//	request (RequestSize bytes, zero-padded):
//	  0  magic "Rv"   2  version   3  type 1   4  role
//	  5  transaction id (TxIDSize)   17  ticket (TicketSize)
//	  33 count of local addresses (at most MaxLocal)
//	  34 local addresses, each 4 bytes IPv4 + 2 bytes port
//	reply (ReplySize bytes):
//	  0  magic   2  version   3  type 2   4  transaction id
//	  16 the mapping: 16 bytes IPv6 (IPv4-mapped for IPv4) + 2 bytes port
//	punch (PunchSize bytes):
//	  0  magic   2  version   3  type 3   4  zero
const (
	magic0, magic1 = 'R', 'v'
	version        = 1

	typeRequest = 1
	typeReply   = 2
	typePunch   = 3

	offType   = 3
	offRole   = 4
	offTxID   = 5
	offTicket = offTxID + TxIDSize
	offCount  = offTicket + TicketSize
	offLocal  = offCount + 1
	localSize = 6

	replyOffTxID = 4
	replyOffAddr = replyOffTxID + TxIDSize

	// TxIDSize is the size of a request's random transaction id, which
	// its reply echoes: an off-path sender cannot forge the reply.
	TxIDSize = 12
	// TicketSize is the size of the ticket the lobby issues a seat.
	TicketSize = 16
	// MaxLocal bounds the local addresses a request carries.
	MaxLocal = 4
	// RequestSize is the size of every request: padded so that a reply
	// is never larger (reflection at most 1×).
	RequestSize = offLocal + MaxLocal*localSize
	// ReplySize is the size of a reply.
	ReplySize = replyOffAddr + 18
	// PunchSize is the size of a punch.
	PunchSize = 8
)

// Role says which of a player's sockets a request comes from.
type Role uint8

// The roles.
const (
	RoleHost   Role = 1 // the socket the player hosts a game on
	RoleClient Role = 2 // the socket the player joins games from
)

func (r Role) String() string {
	switch r {
	case RoleHost:
		return "host"
	case RoleClient:
		return "client"
	}
	return "unknown"
}

// Ticket authenticates a request: the lobby issues one per seat.
type Ticket [TicketSize]byte

// TxID is a request's transaction id.
type TxID [TxIDSize]byte

// Request asks the reflector for the mapping the request arrived from.
type Request struct {
	Role   Role
	TxID   TxID
	Ticket Ticket
	// Local are the player's own addresses of the socket (candidates
	// for a peer behind the same NAT); IPv4 only, at most MaxLocal.
	Local []netip.AddrPort
}

// Reply answers a Request with the address it came from.
type Reply struct {
	TxID    TxID
	Mapping netip.AddrPort
}

// Errors of the parsers.
var (
	ErrNotRendezvous = errors.New("rendezvous: not a rendezvous packet")
	ErrMalformed     = errors.New("rendezvous: malformed packet")
)

// IsRendezvous reports whether b starts like a rendezvous packet.
func IsRendezvous(b []byte) bool {
	return len(b) >= 4 && b[0] == magic0 && b[1] == magic1 && b[2] == version
}

func header(dst []byte, typ byte) []byte { return append(dst, magic0, magic1, version, typ) }

func parseHeader(b []byte, typ byte, size int) error {
	if !IsRendezvous(b) {
		return ErrNotRendezvous
	}
	if b[offType] != typ || len(b) != size {
		return ErrMalformed
	}
	return nil
}

// Append appends the encoded request to dst. Local addresses that are
// not IPv4 are left out, and those beyond MaxLocal.
func (r *Request) Append(dst []byte) []byte {
	dst = header(dst, typeRequest)
	dst = append(dst, byte(r.Role))
	dst = append(dst, r.TxID[:]...)
	dst = append(dst, r.Ticket[:]...)
	at := len(dst)
	dst = append(dst, 0)
	n := 0
	for _, a := range r.Local {
		if n == MaxLocal || !a.Addr().Unmap().Is4() {
			continue
		}
		ip := a.Addr().Unmap().As4()
		dst = append(dst, ip[:]...)
		dst = binary.BigEndian.AppendUint16(dst, a.Port())
		n++
	}
	dst[at] = byte(n)
	for range (MaxLocal - n) * localSize {
		dst = append(dst, 0)
	}
	return dst
}

// ParseRequest decodes a request.
func ParseRequest(b []byte) (Request, error) {
	var r Request
	if err := parseHeader(b, typeRequest, RequestSize); err != nil {
		return r, err
	}
	r.Role = Role(b[offRole])
	if r.Role != RoleHost && r.Role != RoleClient {
		return r, ErrMalformed
	}
	copy(r.TxID[:], b[offTxID:])
	copy(r.Ticket[:], b[offTicket:])
	n := int(b[offCount])
	if n > MaxLocal {
		return r, ErrMalformed
	}
	for i := range n {
		o := offLocal + i*localSize
		ip := netip.AddrFrom4([4]byte(b[o : o+4]))
		r.Local = append(r.Local, netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[o+4:])))
	}
	return r, nil
}

// Append appends the encoded reply to dst.
func (r *Reply) Append(dst []byte) []byte {
	dst = header(dst, typeReply)
	dst = append(dst, r.TxID[:]...)
	ip := r.Mapping.Addr().As16()
	dst = append(dst, ip[:]...)
	return binary.BigEndian.AppendUint16(dst, r.Mapping.Port())
}

// ParseReply decodes a reply.
func ParseReply(b []byte) (Reply, error) {
	var r Reply
	if err := parseHeader(b, typeReply, ReplySize); err != nil {
		return r, err
	}
	copy(r.TxID[:], b[replyOffTxID:])
	ip := netip.AddrFrom16([16]byte(b[replyOffAddr : replyOffAddr+16])).Unmap()
	r.Mapping = netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[replyOffAddr+16:]))
	return r, nil
}

// AppendPunch appends a punch: a datagram with no meaning, sent only to
// open the sender's NAT toward a peer.
func AppendPunch(dst []byte) []byte {
	dst = header(dst, typePunch)
	return append(dst, 0, 0, 0, 0)
}

// IsPunch reports whether b is a punch.
func IsPunch(b []byte) bool { return parseHeader(b, typePunch, PunchSize) == nil }
