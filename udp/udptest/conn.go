package udptest

import (
	"container/heap"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Conn is one socket on a Network. It implements net.PacketConn, plus
// ReadFromUDPAddrPort and WriteToUDPAddrPort like *net.UDPConn. Any
// number of goroutines may use it at once.
type Conn struct {
	net    *Network
	local  netip.AddrPort
	laddr  *net.UDPAddr
	notify chan struct{} // a token when the queue may be non-empty
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	queue   []datagram // arrived; queue[head:] is unread
	head    int
	air     inflight // sent to this conn, not yet arrived
	timer   *time.Timer
	timerAt time.Time

	rdl, wdl deadline
}

func newConn(n *Network, ap netip.AddrPort) *Conn {
	return &Conn{
		net: n, local: ap, laddr: net.UDPAddrFromAddrPort(ap),
		notify: make(chan struct{}, 1), closed: make(chan struct{}),
		rdl: makeDeadline(), wdl: makeDeadline(),
	}
}

// LocalAddr is the conn's address, a *net.UDPAddr.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// AddrPort is the conn's address.
func (c *Conn) AddrPort() netip.AddrPort { return c.local }

// deliver puts an arrived datagram in the receive queue.
func (c *Conn) deliver(d datagram) {
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		c.net.release(d.data)
		return
	default:
	}
	if len(c.queue)-c.head >= c.net.cfg.QueueLen {
		c.mu.Unlock()
		c.net.release(d.data)
		c.net.count(func(s *Stats) { s.QueueFull++ })
		return
	}
	if c.head > 0 && len(c.queue) == cap(c.queue) {
		// Reuse the read prefix rather than growing.
		k := copy(c.queue, c.queue[c.head:])
		clear(c.queue[k:])
		c.queue, c.head = c.queue[:k], 0
	}
	c.queue = append(c.queue, d)
	c.mu.Unlock()
	c.net.count(func(s *Stats) { s.Delivered++ })
	c.wake()
}

func (c *Conn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
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
	for {
		select {
		case <-c.closed:
			return 0, netip.AddrPort{}, c.opError("read", net.ErrClosed)
		case <-c.rdl.wait():
			return 0, netip.AddrPort{}, c.opError("read", os.ErrDeadlineExceeded)
		default:
		}
		c.mu.Lock()
		if c.head < len(c.queue) {
			d := c.queue[c.head]
			c.queue[c.head] = datagram{}
			c.head++
			more := c.head < len(c.queue)
			if !more {
				c.queue, c.head = c.queue[:0], 0
			}
			c.mu.Unlock()
			if more {
				c.wake() // for another reader
			}
			n := copy(b, *d.data)
			c.net.release(d.data)
			return n, d.from, nil
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-c.closed:
		case <-c.rdl.wait():
		}
	}
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
	case <-c.closed:
		return 0, c.opError("write", net.ErrClosed)
	case <-c.wdl.wait():
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	default:
	}
	if err := c.net.send(c, b, addr); err != nil {
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
	closed := false
	c.once.Do(func() {
		closed = true
		close(c.closed)
		c.net.remove(c)
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
		for _, d := range c.queue[c.head:] {
			c.net.release(d.data)
		}
		for _, d := range c.air {
			c.net.release(d.data)
		}
		c.queue, c.head, c.air = nil, 0, nil
		c.mu.Unlock()
		c.rdl.set(time.Time{})
		c.wdl.set(time.Time{})
	})
	if !closed {
		return c.opError("close", net.ErrClosed)
	}
	return nil
}

func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}
func (c *Conn) SetReadDeadline(t time.Time) error  { c.rdl.set(t); return nil }
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.laddr, Err: err}
}

// deadline is a channel closed when a settable point in time passes.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	passed chan struct{}
}

func makeDeadline() deadline { return deadline{passed: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer fired: wait until it has closed the channel
	}
	d.timer = nil
	closed := isClosed(d.passed)
	if t.IsZero() {
		if closed {
			d.passed = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.passed = make(chan struct{})
		}
		ch := d.passed
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.passed)
	}
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
