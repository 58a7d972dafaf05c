package udp

import (
	"net/netip"
)

// Message is one datagram in a batch. The caller owns Buf.
//
// ReadBatch: Buf[:cap] is filled (len(Buf) is ignored, cap(Buf) is the
// largest datagram accepted); on return N is the datagram's size and Addr
// its source. WriteBatch: Buf is the datagram and Addr its destination.
type Message struct {
	Buf  []byte
	N    int
	Addr netip.AddrPort
}

// BatchConn is what tickwire's server and client send and receive through:
// a real DSCP-marked socket (*Conn), or any net.PacketConn adapted with
// FromPacketConn (an in-memory network, a netem-impaired connection).
//
// ReadBatch blocks until at least one datagram arrives and returns how many
// messages it filled; WriteBatch sends msgs in order and returns how many
// were sent, with an error if that is fewer than len(msgs). After Close,
// both return an error for which errors.Is(err, net.ErrClosed) holds. One
// goroutine may read while another writes; concurrent readers (or writers)
// must synchronise themselves.
type BatchConn interface {
	ReadBatch(msgs []Message) (int, error)
	WriteBatch(msgs []Message) (int, error)
	LocalAddr() netip.AddrPort
	Close() error
}
