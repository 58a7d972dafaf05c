package udptest

import (
	"net"
	"sync/atomic"
)

// Cuttable is a socket whose traffic both ways can be cut: a host that
// drops off the network without a word. While Cut is set, what it
// writes is dropped and what arrives is discarded.
type Cuttable struct {
	net.PacketConn
	Cut atomic.Bool
}

// WriteTo sends b, or drops it while the socket is cut.
func (c *Cuttable) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.Cut.Load() {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}

// ReadFrom returns the next datagram that arrives while the socket is
// not cut.
func (c *Cuttable) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil || !c.Cut.Load() {
			return n, addr, err
		}
	}
}
