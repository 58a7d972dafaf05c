package rendezvous

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/udp"
)

// resend is how often Reflect repeats its request.
const resend = 200 * time.Millisecond

// Reflect asks the reflector at addr, from pc, for pc's public mapping,
// with the seat's ticket: it resends the request every 200 ms until the
// reply to it arrives from addr, or ctx ends. local are the socket's own
// addresses the request carries (LocalAddrs). It reads pc, setting its
// read deadline (cleared on return), and discards everything else that
// arrives meanwhile: call it before another reader starts.
func Reflect(ctx context.Context, pc net.PacketConn, addr netip.AddrPort, t Ticket, role Role, local []netip.AddrPort) (netip.AddrPort, error) {
	req := Request{Role: role, Ticket: t, Local: local}
	rand.Read(req.TxID[:])
	b := req.Append(nil)
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	dst := net.UDPAddrFromAddrPort(addr)
	defer pc.SetReadDeadline(time.Time{})
	buf := make([]byte, ReplySize+1)
	for {
		if _, err := pc.WriteTo(b, dst); err != nil {
			return netip.AddrPort{}, fmt.Errorf("rendezvous: request to %v: %w", addr, err)
		}
		next := time.Now().Add(resend)
		if d, ok := ctx.Deadline(); ok && d.Before(next) {
			next = d
		}
		pc.SetReadDeadline(next)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return netip.AddrPort{}, err
			}
			if ua, ok := from.(*net.UDPAddr); !ok || netip.AddrPortFrom(ua.AddrPort().Addr().Unmap(), ua.AddrPort().Port()) != addr {
				continue
			}
			if rep, err := ParseReply(buf[:n]); err == nil && rep.TxID == req.TxID {
				return rep.Mapping, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return netip.AddrPort{}, fmt.Errorf("rendezvous: no reply from %v: %w", addr, err)
		}
	}
}

// LocalAddrs are this machine's IPv4 addresses that are neither
// loopback nor link-local, with port: the local candidates of a socket
// bound to all addresses on port.
func LocalAddrs(port uint16) []netip.AddrPort {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := p.Addr().Unmap()
		if !ip.Is4() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || len(out) == MaxLocal {
			continue
		}
		out = append(out, netip.AddrPortFrom(ip, port))
	}
	return out
}

// PacketConn adapts c to a net.PacketConn, one datagram a call, for
// Reflect and relay.Bind before the game's reader starts; closing it
// closes c.
func PacketConn(c *udp.Conn) net.PacketConn { return &packetConn{c: c} }

type packetConn struct {
	c   *udp.Conn
	msg [1]udp.Message
}

func (p *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	p.msg[0] = udp.Message{Buf: b}
	if _, err := p.c.ReadBatch(p.msg[:]); err != nil {
		return 0, nil, err
	}
	return p.msg[0].N, net.UDPAddrFromAddrPort(p.msg[0].Addr), nil
}

func (p *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("rendezvous: not a UDP address: %v", addr)
	}
	ap := ua.AddrPort()
	if _, err := p.c.WriteBatch([]udp.Message{{Buf: b, N: len(b), Addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}}); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (p *packetConn) Close() error { return p.c.Close() }
func (p *packetConn) LocalAddr() net.Addr {
	return net.UDPAddrFromAddrPort(p.c.LocalAddr())
}
func (p *packetConn) SetDeadline(t time.Time) error {
	p.c.SetWriteDeadline(t)
	return p.c.SetReadDeadline(t)
}
func (p *packetConn) SetReadDeadline(t time.Time) error  { return p.c.SetReadDeadline(t) }
func (p *packetConn) SetWriteDeadline(t time.Time) error { return p.c.SetWriteDeadline(t) }
