package udptest

import (
	"container/heap"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/tickwire/tickwire/udp/internal/inbox"
)

// Conn is one socket on a Network. It implements net.PacketConn, plus
// ReadFromUDPAddrPort and WriteToUDPAddrPort like *net.UDPConn. Any
// number of goroutines may use it at once.
type Conn struct {
	net   *Network
	local netip.AddrPort
	laddr *net.UDPAddr
	in    *inbox.Inbox // arrived, unread
	wdl   inbox.Deadline

	mu      sync.Mutex
	air     inflight // sent to this conn, not yet arrived
	timer   *time.Timer
	timerAt time.Time
}

func newConn(n *Network, ap netip.AddrPort) *Conn {
	return &Conn{
		net: n, local: ap, laddr: net.UDPAddrFromAddrPort(ap),
		in:  inbox.New(n.cfg.QueueLen, n.release),
		wdl: inbox.MakeDeadline(),
	}
}

// LocalAddr is the conn's address, a *net.UDPAddr.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// AddrPort is the conn's address.
func (c *Conn) AddrPort() netip.AddrPort { return c.local }

// deliver puts an arrived datagram in the receive queue.
func (c *Conn) deliver(d datagram) {
	select {
	case <-c.in.Closed():
		c.net.release(d.data)
		return
	default:
	}
	// Counted before the reader can see it: a datagram read is always
	// in the stats already.
	c.net.count(func(s *Stats) { s.Delivered++ })
	if !c.in.Push(inbox.Datagram{Data: d.data, From: d.from}) {
		c.net.count(func(s *Stats) { s.Delivered--; s.QueueFull++ })
	}
}

// schedule holds a datagram until its arrival time.
func (c *Conn) schedule(d datagram) {
	c.mu.Lock()
	defer c.mu.Unlock()
	heap.Push(&c.air, d)
	c.armLocked()
}

// armLocked points the timer at the earliest datagram in flight.
func (c *Conn) armLocked() {
	if len(c.air) == 0 {
		return
	}
	next := c.air[0].due
	if c.timer != nil && c.timerAt.Equal(next) {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timerAt = next
	c.timer = time.AfterFunc(time.Until(next), c.arrive)
}

// arrive delivers every datagram whose time has come, in order.
func (c *Conn) arrive() {
	for {
		c.mu.Lock()
		if len(c.air) == 0 || c.air[0].due.After(time.Now()) {
			c.timer = nil
			c.armLocked()
			c.mu.Unlock()
			return
		}
		d := heap.Pop(&c.air).(datagram)
		c.mu.Unlock()
		c.deliver(d)
	}
}

// ReadFromUDPAddrPort reads one datagram into b (truncating it if b is
// short) and returns its length and source.
func (c *Conn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	n, d, err := c.in.Read(b)
	if err != nil {
		return 0, netip.AddrPort{}, c.opError("read", err)
	}
	return n, d.From, nil
}

// ReadFrom implements net.PacketConn; the address is a *net.UDPAddr.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, ap, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(ap), nil
}

// WriteToUDPAddrPort sends b to addr. It never blocks.
func (c *Conn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	select {
	case <-c.in.Closed():
		return 0, c.opError("write", net.ErrClosed)
	case <-c.wdl.Wait():
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	default:
	}
	if err := c.net.send(c.local, b, addr); err != nil {
		return 0, c.opError("write", err)
	}
	return len(b), nil
}

// WriteFrom sends b to addr with a forged source address, src: the
// receiver sees it come from src and its answers go there (the link is
// src's). For tests of what an attacker that spoofs its source can do.
func (c *Conn) WriteFrom(b []byte, src, addr netip.AddrPort) (int, error) {
	select {
	case <-c.in.Closed():
		return 0, c.opError("write", net.ErrClosed)
	default:
	}
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if err := c.net.send(src, b, addr); err != nil {
		return 0, c.opError("write", err)
	}
	return len(b), nil
}

// WriteTo implements net.PacketConn; addr must be a *net.UDPAddr or
// print as host:port.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	var ap netip.AddrPort
	if ua, ok := addr.(*net.UDPAddr); ok {
		ap = ua.AddrPort()
	} else {
		var err error
		if ap, err = netip.ParseAddrPort(addr.String()); err != nil {
			return 0, c.opError("write", err)
		}
	}
	return c.WriteToUDPAddrPort(b, ap)
}

// Close closes the conn; queued and in-flight datagrams to it are lost.
func (c *Conn) Close() error {
	if !c.in.Close() {
		return c.opError("close", net.ErrClosed)
	}
	c.net.remove(c)
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	air := c.air
	c.air = nil
	c.mu.Unlock()
	for _, d := range air {
		c.net.release(d.data)
	}
	c.wdl.Set(time.Time{})
	return nil
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.in.SetDeadline(t)
	c.wdl.Set(t)
	return nil
}

// SetReadDeadline makes reads fail once t has passed; zero clears it.
func (c *Conn) SetReadDeadline(t time.Time) error { c.in.SetDeadline(t); return nil }

// SetWriteDeadline makes writes fail once t has passed; zero clears it.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.Set(t); return nil }

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.laddr, Err: err}
}
