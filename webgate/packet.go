package webgate

import (
	"errors"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// packet is one datagram in flight between a browser link and the
// server, in a fixed-size buffer from the Conn's pool.
type packet struct {
	buf    [proto.MaxPacketSizeLimit]byte
	n      int
	link   *Link
	queued time.Duration // a server packet's Conn.clock when queued for its link
}

func (p *packet) bytes() []byte { return p.buf[:p.n] }

// PacketError says why a browser's message is not a tickwire packet.
type PacketError struct{ Reason string }

func (e *PacketError) Error() string { return "webgate: message dropped: " + e.Reason }

// The messages the gateway drops (static: dropping allocates nothing).
var (
	ErrOversize    = &PacketError{"larger than a datagram"}
	ErrNotTickwire = &PacketError{"not a tickwire packet"}
	ErrTextMessage = &PacketError{"a text message"}
)

// ErrLinkClosed is returned by Deliver on a closed link.
var ErrLinkClosed = errors.New("webgate: link closed")

// checkPacket decides whether a browser's message may go to the server:
// it must be one tickwire datagram — at most proto.MaxPacketSizeLimit
// bytes, with tickwire's prefix (a version the server does not speak
// passes, so that the server can tell the client). Anything else is
// dropped at the gateway; the server judges the rest exactly as it
// judges a UDP datagram.
func checkPacket(b []byte) error {
	if len(b) > proto.MaxPacketSizeLimit {
		return ErrOversize
	}
	if _, _, err := proto.ParsePrefix(b); err != nil && !proto.IsVersionMismatch(err) {
		return ErrNotTickwire
	}
	return nil
}
