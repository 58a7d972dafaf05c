package netem

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/udp/internal/inbox"
)

// Config configures a Conn: one Spec per direction and the seed both
// impairments are drawn from. The zero value impairs nothing (it still
// counts).
type Config struct {
	Egress  Spec // applied to WriteTo: datagrams leaving through the conn
	Ingress Spec // applied to datagrams read from the wrapped conn
	Seed    uint64
}

// ingressSeed derives the ingress direction's seed from Config.Seed.
const ingressSeed = 0x9e3779b97f4a7c15

// readQueue is how many impaired datagrams a Conn holds for ReadFrom.
const readQueue = 4096

// addrPortConn is implemented by *net.UDPConn and udptest.Conn.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// Conn wraps a net.PacketConn and impairs both directions. It implements
// net.PacketConn, plus ReadFromUDPAddrPort and WriteToUDPAddrPort; any
// number of goroutines may use it.
//
// WriteTo queues a copy of the datagram and returns at once; it leaves
// through the wrapped conn when the egress impairment releases it (at
// once when nothing delays it; errors from that later write are counted
// in Stats, not returned). A goroutine reads the wrapped conn and passes
// what it reads through the ingress impairment to ReadFrom.
//
// Only Go timers, channels and goroutines are used, so over an in-memory
// network inside a testing/synctest bubble a Conn runs in virtual time
// and, for the same seed and the same datagrams offered at the same
// (virtual) times, impairs them identically.
type Conn struct {
	pc   net.PacketConn
	fast addrPortConn

	out, in *direction
	inbox   *inbox.Inbox
	wdl     inbox.Deadline

	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// direction is one impairment with the goroutine that releases it.
type direction struct {
	mu  sync.Mutex // guards imp
	imp *Impairment

	sendMu  sync.Mutex // serialises deliver, so datagrams leave in queue order
	deliver func(Packet) bool
	wake    chan struct{}
	failed  atomic.Uint64 // released but not handed on
}

// Wrap impairs pc per cfg. Close closes pc.
func Wrap(pc net.PacketConn, cfg Config) *Conn {
	c := &Conn{
		pc:     pc,
		closed: make(chan struct{}),
		inbox:  inbox.New(readQueue, nil),
		wdl:    inbox.MakeDeadline(),
	}
	c.fast, _ = pc.(addrPortConn)
	c.out = newDirection(cfg.Egress, cfg.Seed, c.send)
	c.in = newDirection(cfg.Ingress, cfg.Seed^ingressSeed, c.receive)
	c.wg.Add(3)
	go c.out.run(c.closed, &c.wg)
	go c.in.run(c.closed, &c.wg)
	go c.readLoop()
	return c
}

func newDirection(spec Spec, seed uint64, deliver func(Packet) bool) *direction {
	return &direction{imp: NewImpairment(spec, seed), deliver: deliver, wake: make(chan struct{}, 1)}
}

func (d *direction) enqueue(p Packet) {
	d.mu.Lock()
	d.imp.Enqueue(time.Now(), p)
	d.mu.Unlock()
	d.pump()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// pump hands on every datagram that is due.
func (d *direction) pump() {
	d.sendMu.Lock()
	defer d.sendMu.Unlock()
	for {
		d.mu.Lock()
		p, ok := d.imp.Dequeue(time.Now())
		d.mu.Unlock()
		if !ok {
			return
		}
		if !d.deliver(p) {
			d.failed.Add(1)
		}
	}
}

// run releases delayed datagrams when they fall due.
func (d *direction) run(done <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		d.pump()
		d.mu.Lock()
		next, ok := d.imp.Next()
		d.mu.Unlock()
		var fire <-chan time.Time
		if ok {
			timer.Reset(time.Until(next))
			fire = timer.C
		}
		select {
		case <-d.wake:
		case <-fire:
		case <-done:
			return
		}
	}
}

func (d *direction) stats() Stats {
	d.mu.Lock()
	s := d.imp.Stats()
	d.mu.Unlock()
	s.Undeliverable = d.failed.Load()
	return s
}

// send writes one released egress datagram to the wrapped conn.
func (c *Conn) send(p Packet) bool {
	var err error
	if c.fast != nil && p.AddrPort.IsValid() {
		_, err = c.fast.WriteToUDPAddrPort(p.Data, p.AddrPort)
	} else if p.Addr != nil {
		_, err = c.pc.WriteTo(p.Data, p.Addr)
	} else {
		_, err = c.pc.WriteTo(p.Data, net.UDPAddrFromAddrPort(p.AddrPort))
	}
	return err == nil
}

// receive queues one released ingress datagram for ReadFrom.
func (c *Conn) receive(p Packet) bool {
	return c.inbox.Push(inbox.Datagram{Data: p.Data, From: p.AddrPort, Addr: p.Addr})
}

// readLoop feeds what the wrapped conn receives into the ingress
// impairment.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		var (
			n    int
			ap   netip.AddrPort
			addr net.Addr
			err  error
		)
		if c.fast != nil {
			n, ap, err = c.fast.ReadFromUDPAddrPort(buf)
		} else if n, addr, err = c.pc.ReadFrom(buf); err == nil {
			if ua, ok := addr.(*net.UDPAddr); ok {
				ap = ua.AddrPort()
			}
		}
		if err != nil {
			select {
			case <-c.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				c.inbox.Close()
				return
			}
			continue // a transient error (e.g. ICMP-induced); keep reading
		}
		c.in.enqueue(Packet{Data: append([]byte(nil), buf[:n]...), AddrPort: ap, Addr: addr})
	}
}

// WriteToUDPAddrPort queues b for addr through the egress impairment.
func (c *Conn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if err := c.writable(); err != nil {
		return 0, err
	}
	c.out.enqueue(Packet{Data: append([]byte(nil), b...), AddrPort: addr})
	return len(b), nil
}

// WriteTo queues b for addr through the egress impairment.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if err := c.writable(); err != nil {
		return 0, err
	}
	p := Packet{Data: append([]byte(nil), b...), Addr: addr}
	if ua, ok := addr.(*net.UDPAddr); ok {
		p.AddrPort = ua.AddrPort()
	}
	c.out.enqueue(p)
	return len(b), nil
}

func (c *Conn) writable() error {
	select {
	case <-c.closed:
		return c.opError("write", net.ErrClosed)
	default:
	}
	if c.wdl.Passed() {
		return c.opError("write", os.ErrDeadlineExceeded)
	}
	return nil
}

// ReadFromUDPAddrPort reads the next datagram the ingress impairment
// released. The source is the zero AddrPort if the wrapped conn's
// addresses are not IP addresses.
func (c *Conn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	n, d, err := c.inbox.Read(b)
	if err != nil {
		return 0, netip.AddrPort{}, c.opError("read", err)
	}
	return n, d.From, nil
}

// ReadFrom reads the next datagram the ingress impairment released.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, d, err := c.inbox.Read(b)
	if err != nil {
		return 0, nil, c.opError("read", err)
	}
	if d.Addr != nil {
		return n, d.Addr, nil
	}
	return n, net.UDPAddrFromAddrPort(d.From), nil
}

// Stats returns each direction's counters.
func (c *Conn) Stats() (egress, ingress Stats) { return c.out.stats(), c.in.stats() }

// LocalAddr is the wrapped conn's address.
func (c *Conn) LocalAddr() net.Addr { return c.pc.LocalAddr() }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.inbox.SetDeadline(t)
	c.wdl.Set(t)
	return nil
}

// SetReadDeadline makes ReadFrom fail once t has passed; zero clears it.
func (c *Conn) SetReadDeadline(t time.Time) error { c.inbox.SetDeadline(t); return nil }

// SetWriteDeadline makes WriteTo fail once t has passed (writes never
// block); zero clears it.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.Set(t); return nil }

// Close closes the wrapped conn, discards queued datagrams and stops the
// conn's goroutines.
func (c *Conn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		close(c.closed)
		c.closeErr = c.pc.Close()
		c.inbox.Close()
		c.wdl.Set(time.Time{})
		c.wg.Wait()
	})
	if !first {
		return c.opError("close", net.ErrClosed)
	}
	return c.closeErr
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.pc.LocalAddr().Network(), Source: c.pc.LocalAddr(), Err: err}
}
