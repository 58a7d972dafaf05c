package webgate

import "net/netip"

// Transport is how a packet reached the server.
type Transport uint8

const (
	UDP          Transport = iota // the server's own UDP socket
	WebTransport                  // a browser's WebTransport session (QUIC datagrams)
	WebSocket                     // a browser's WebSocket (binary messages)
	NumTransports
)

func (t Transport) String() string {
	switch t {
	case UDP:
		return "udp"
	case WebTransport:
		return "webtransport"
	case WebSocket:
		return "websocket"
	}
	return "unknown"
}

// Link addresses live in 100::/64, the discard-only prefix (RFC 6666):
// byte 8 is the transport, bytes 12..15 the link id; the port is 1.
const (
	linkPrefix0   = 0x01
	linkTransport = 8
	linkID        = 12
	linkPort      = 1
)

// linkAddr is the synthetic address of link id on transport t.
func linkAddr(t Transport, id uint32) netip.AddrPort {
	var a [16]byte
	a[0] = linkPrefix0
	a[linkTransport] = byte(t)
	a[linkID], a[linkID+1], a[linkID+2], a[linkID+3] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return netip.AddrPortFrom(netip.AddrFrom16(a), linkPort)
}

// parseLinkAddr returns the link id of a synthetic address, or false for
// any other address (a real UDP peer).
func parseLinkAddr(ap netip.AddrPort) (uint32, Transport, bool) {
	a := ap.Addr()
	if !a.Is6() || a.Is4In6() {
		return 0, 0, false
	}
	b := a.As16()
	if b[0] != linkPrefix0 || b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7]|b[9]|b[10]|b[11] != 0 {
		return 0, 0, false
	}
	t := Transport(b[linkTransport])
	if t == UDP || t >= NumTransports {
		return 0, 0, false
	}
	return uint32(b[linkID])<<24 | uint32(b[linkID+1])<<16 | uint32(b[linkID+2])<<8 | uint32(b[linkID+3]), t, true
}

// TransportOf says which transport the address a server connection has
// (tickwire.Conn.Addr) belongs to: a browser link's synthetic address, or
// UDP for any other.
func TransportOf(addr netip.AddrPort) Transport {
	if _, t, ok := parseLinkAddr(addr); ok {
		return t
	}
	return UDP
}
