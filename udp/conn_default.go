//go:build !linux

package udp

import (
	"net"
	"syscall"
)

// Without recvmmsg/sendmmsg every system call moves one datagram.
func platformBatch(int) int { return 1 }

func socketFamily(_ syscall.RawConn, la *net.UDPAddr) (v6, dual bool) {
	v6 = len(la.IP) == net.IPv6len
	// Go opens wildcard "udp" sockets dual-stack where the OS allows it.
	return v6, v6 && la.IP.IsUnspecified()
}

func setBuffer(uc *net.UDPConn, _ syscall.RawConn, size int, read bool) error {
	if read {
		return uc.SetReadBuffer(size)
	}
	return uc.SetWriteBuffer(size)
}

// bufferSizes is unknown here without platform-specific getsockopt.
func bufferSizes(syscall.RawConn) (read, write int) { return 0, 0 }

type reader struct{}

func (*reader) init(*Conn) {}

func (*reader) read(c *Conn, msgs []Message) (int, error) {
	m := &msgs[0]
	n, addr, err := c.uc.ReadFromUDPAddrPort(m.Buf[:cap(m.Buf)])
	if err != nil {
		c.rx.fail(err)
		return 0, err
	}
	m.N, m.Addr = n, unmap(addr)
	c.rx.batch(1, n)
	return 1, nil
}

type writer struct{}

func (*writer) init(*Conn) {}

func (*writer) write(c *Conn, msgs []Message) (int, error) {
	m := &msgs[0]
	if _, err := c.uc.WriteToUDPAddrPort(m.Buf, m.Addr); err != nil {
		c.tx.fail(err)
		return 0, err
	}
	c.tx.batch(1, len(m.Buf))
	return 1, nil
}

// socketDrops is unknown here.
func socketDrops(syscall.RawConn) (uint64, bool) { return 0, false }
