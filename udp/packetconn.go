package udp

import (
	"net"
	"net/netip"
)

// addrPortConn is implemented by *net.UDPConn and by tickwire's test and
// impairment conns: datagram I/O without a net.Addr per call.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// FromPacketConn adapts any net.PacketConn (an in-memory test network, a
// netem-impaired connection, a plain *net.UDPConn) to BatchConn, moving
// one datagram per call. It does not mark DSCP or count anything. It
// allocates nothing per datagram when pc has ReadFromUDPAddrPort and
// WriteToUDPAddrPort methods (*net.UDPConn, udptest and netem conns do).
// Close closes pc.
func FromPacketConn(pc net.PacketConn) BatchConn {
	a := &packetConn{pc: pc}
	a.fast, _ = pc.(addrPortConn)
	a.local = addrPortOf(pc.LocalAddr())
	return a
}

type packetConn struct {
	pc    net.PacketConn
	fast  addrPortConn
	local netip.AddrPort
}

func (a *packetConn) ReadBatch(msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	m := &msgs[0]
	b := m.Buf[:cap(m.Buf)]
	if a.fast != nil {
		n, ap, err := a.fast.ReadFromUDPAddrPort(b)
		if err != nil {
			return 0, err
		}
		m.N, m.Addr = n, unmap(ap)
		return 1, nil
	}
	n, addr, err := a.pc.ReadFrom(b)
	if err != nil {
		return 0, err
	}
	m.N, m.Addr = n, addrPortOf(addr)
	return 1, nil
}

func (a *packetConn) WriteBatch(msgs []Message) (int, error) {
	for i := range msgs {
		m := &msgs[i]
		var err error
		if a.fast != nil {
			_, err = a.fast.WriteToUDPAddrPort(m.Buf, m.Addr)
		} else {
			_, err = a.pc.WriteTo(m.Buf, net.UDPAddrFromAddrPort(m.Addr))
		}
		if err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

func (a *packetConn) LocalAddr() netip.AddrPort { return a.local }
func (a *packetConn) Close() error              { return a.pc.Close() }

// addrPortOf converts a net.Addr to netip.AddrPort (unmapped), or the zero
// value if it names no IP address and port.
func addrPortOf(addr net.Addr) netip.AddrPort {
	if ua, ok := addr.(*net.UDPAddr); ok {
		return unmap(ua.AddrPort())
	}
	if addr == nil {
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return unmap(ap)
}
