package webgate

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire/udp"
)

// Config bounds what browsers can make a gateway hold. The zero value
// means every default.
type Config struct {
	// MaxLinks is how many browser connections may be open at once.
	// Default 1024.
	MaxLinks int
	// MaxLinksPerAddr is how many of them one client address may hold.
	// Default 8.
	MaxLinksPerAddr int
	// Queue is how many browser packets may wait for the server's next
	// read, all links together; more are dropped. Default 1024.
	Queue int
	// LinkQueue is how many packets one link may have waiting in each
	// direction (towards the server: its share of Queue); more are
	// dropped, as a full socket buffer drops datagrams. Default 32 (half
	// a second of a 60 Hz server's packets). The gateway's buffers are
	// bounded by (Queue + MaxLinks × LinkQueue) × 1472 bytes: 48 MB with
	// the defaults.
	LinkQueue int
	// MaxPacketAge drops a server packet that waited longer than this
	// for its link's transport: a game packet that late is worth less
	// than the next one, and queueing it only delays that one too (over
	// WebTransport, QUIC's congestion control can hold the link's
	// datagrams back: queues that only grow would make the round trip
	// grow with them). A datagram socket drops where this drops.
	// Default 100 ms, as the browser page's outgoing datagrams; negative:
	// never drop for age.
	MaxPacketAge time.Duration
	// IdleTimeout closes a link that sent nothing for this long (before
	// its first packet as well: an opened, silent connection holds
	// nothing long). Default 15 s.
	IdleTimeout time.Duration
	// Logger receives the gateway's log lines. Nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of the zero Config.
const (
	DefaultMaxLinks        = 1024
	DefaultMaxLinksPerAddr = 8
	DefaultQueue           = 1024
	DefaultLinkQueue       = 32
	DefaultIdleTimeout     = 15 * time.Second
	DefaultMaxPacketAge    = 100 * time.Millisecond
)

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxLinks, DefaultMaxLinks)
	def(&c.MaxLinksPerAddr, DefaultMaxLinksPerAddr)
	def(&c.Queue, DefaultQueue)
	def(&c.LinkQueue, DefaultLinkQueue)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxPacketAge == 0 {
		c.MaxPacketAge = DefaultMaxPacketAge
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxLinks < 0 || c.MaxLinksPerAddr < 0 || c.Queue < 1 || c.LinkQueue < 1 || c.IdleTimeout < 0 {
		return c, fmt.Errorf("webgate: negative limit in %+v", c)
	}
	return c, nil
}

// ErrRefused is returned by Open when a limit refuses a new link.
var ErrRefused = errors.New("webgate: too many browser connections")

// readDeadliner is what Conn needs of the socket it wraps: a read it can
// interrupt when a browser packet arrives.
type readDeadliner interface {
	SetReadDeadline(t time.Time) error
}

// Conn is a udp.BatchConn that carries the server's UDP socket and every
// browser link: see the package documentation.
//
// ReadBatch and WriteBatch keep BatchConn's rules (one reader, one
// writer); Open, Stats and Close are safe from any goroutine.
type Conn struct {
	inner udp.BatchConn
	dl    readDeadliner
	cfg   Config
	epoch time.Time // the monotonic origin of clock

	ready   chan *packet // browser packets for ReadBatch
	free    chan *packet // the pool of packet buffers
	pooled  atomic.Int64 // packets allocated; at most cap(free)
	waiting atomic.Bool  // the reader is (about to be) blocked on the socket
	closing atomic.Bool

	mu     sync.RWMutex // guards the links
	links  map[uint32]*Link
	perIP  map[netip.Addr]int
	nextID uint32

	stats [NumTransports]counters
}

// counters are one transport's figures.
type counters struct {
	open, accepted, refused              atomic.Int64
	packetsIn, packetsOut                atomic.Uint64
	bytesIn, bytesOut                    atomic.Uint64
	malformed, queueFull, sendFull, gone atomic.Uint64
	stale                                atomic.Uint64
}

// TransportStats are one transport's figures since the gateway started.
type TransportStats struct {
	Open               int    // links open now
	Accepted, Refused  uint64 // links opened, and refused by a limit
	PacketsIn, BytesIn uint64 // packets handed to the server
	PacketsOut         uint64 // packets sent by the server
	BytesOut           uint64
	// Malformed counts messages that were no tickwire packet; QueueFull
	// packets dropped on the way in (the queue to the server was full),
	// SendFull those dropped on the way out (the link's queue was full),
	// Gone those sent to a link already closed, Stale those dropped on
	// the way out for having waited longer than Config.MaxPacketAge.
	Malformed, QueueFull, SendFull, Gone, Stale uint64
}

// New wraps the server's UDP socket (which must support read deadlines,
// as *udp.Conn does) in a gateway. Close closes inner.
func New(inner udp.BatchConn, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dl, ok := inner.(readDeadliner)
	if !ok {
		return nil, fmt.Errorf("webgate: %T has no SetReadDeadline", inner)
	}
	return &Conn{
		inner: inner,
		dl:    dl,
		cfg:   cfg,
		epoch: time.Now(),
		ready: make(chan *packet, cfg.Queue),
		free:  make(chan *packet, cfg.Queue+cfg.MaxLinks*cfg.LinkQueue),
		links: make(map[uint32]*Link),
		perIP: make(map[netip.Addr]int),
	}, nil
}

// clock is the time since the gateway started (monotonic), for the age
// of queued packets.
func (c *Conn) clock() time.Duration { return time.Since(c.epoch) }

// LocalAddr is the UDP socket's address.
func (c *Conn) LocalAddr() netip.AddrPort { return c.inner.LocalAddr() }

// Close closes every link and the socket.
func (c *Conn) Close() error {
	c.closing.Store(true)
	c.mu.Lock()
	links := make([]*Link, 0, len(c.links))
	for _, l := range c.links {
		links = append(links, l)
	}
	c.mu.Unlock()
	for _, l := range links {
		l.Close()
	}
	return c.inner.Close()
}

// Stats returns the figures of every transport.
func (c *Conn) Stats() [NumTransports]TransportStats {
	var st [NumTransports]TransportStats
	for t := range st {
		k := &c.stats[t]
		st[t] = TransportStats{
			Open: int(k.open.Load()), Accepted: uint64(k.accepted.Load()), Refused: uint64(k.refused.Load()),
			PacketsIn: k.packetsIn.Load(), BytesIn: k.bytesIn.Load(),
			PacketsOut: k.packetsOut.Load(), BytesOut: k.bytesOut.Load(),
			Malformed: k.malformed.Load(), QueueFull: k.queueFull.Load(), SendFull: k.sendFull.Load(), Gone: k.gone.Load(),
			Stale: k.stale.Load(),
		}
	}
	return st
}

// get takes a packet buffer from the pool, growing it up to its bound;
// nil when every buffer is in flight.
func (c *Conn) get() *packet {
	select {
	case p := <-c.free:
		return p
	default:
	}
	if c.pooled.Add(1) > int64(cap(c.free)) {
		c.pooled.Add(-1)
		return nil
	}
	return new(packet)
}

// put returns a packet buffer to the pool.
func (c *Conn) put(p *packet) {
	p.n, p.link = 0, nil
	c.free <- p // never blocks: at most cap(free) exist
}

// ReadBatch returns the browsers' waiting packets, if any, else blocks
// on the socket until a datagram or a browser packet arrives. A browser
// packet's Addr is its link's synthetic address. It does not allocate.
func (c *Conn) ReadBatch(msgs []udp.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	for {
		if c.closing.Load() {
			return 0, net.ErrClosed
		}
		if n := c.drain(msgs); n > 0 {
			return n, nil
		}
		// Tell the links to interrupt the socket read, then look again:
		// a packet queued before this store is seen by the drain, one
		// queued after it interrupts the read (Link.Deliver).
		c.waiting.Store(true)
		if n := c.drain(msgs); n > 0 {
			c.waiting.Store(false)
			return n, nil
		}
		n, err := c.inner.ReadBatch(msgs)
		c.waiting.Store(false)
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			// A link's interrupt (perhaps a late one): clear it and look
			// at the queue again. The server sets no read deadline.
			c.dl.SetReadDeadline(time.Time{})
			if n > 0 {
				c.countUDP(msgs[:n])
				return n, nil
			}
			continue
		}
		if n > 0 {
			c.countUDP(msgs[:n])
		}
		return n, err
	}
}

// countUDP adds a batch of socket datagrams to the UDP figures.
func (c *Conn) countUDP(msgs []udp.Message) {
	var bytes uint64
	for i := range msgs {
		bytes += uint64(msgs[i].N)
	}
	c.stats[UDP].packetsIn.Add(uint64(len(msgs)))
	c.stats[UDP].bytesIn.Add(bytes)
}

// drain moves waiting browser packets into msgs without blocking.
func (c *Conn) drain(msgs []udp.Message) int {
	n := 0
	for n < len(msgs) {
		var p *packet
		select {
		case p = <-c.ready:
		default:
			return n
		}
		l := p.link
		l.queued.Add(-1)
		m := &msgs[n]
		if m.N = copy(m.Buf[:cap(m.Buf)], p.bytes()); m.N < p.n {
			m.N = cap(m.Buf) + 1 // as the socket reports an oversize datagram
		}
		m.Addr = l.addr
		k := &c.stats[l.transport]
		k.packetsIn.Add(1)
		k.bytesIn.Add(uint64(p.n))
		c.put(p)
		n++
	}
	return n
}

// interrupt wakes a reader blocked on the socket, once per wait.
func (c *Conn) interrupt() {
	if c.waiting.Swap(false) {
		c.dl.SetReadDeadline(time.Unix(1, 0))
	}
}

// WriteBatch sends the datagrams addressed to browser links to them and
// the others to the socket, in order. A link's datagram is queued for
// its transport (dropped, like a datagram, when that queue is full or
// the link has closed). It does not allocate.
func (c *Conn) WriteBatch(msgs []udp.Message) (int, error) {
	sent := 0
	var now time.Duration // the batch's time, read at its first link datagram
	for sent < len(msgs) {
		j := sent
		for j < len(msgs) && !isLinkAddr(msgs[j].Addr) {
			j++
		}
		if j > sent {
			n, err := c.inner.WriteBatch(msgs[sent:j])
			sent += n
			if err != nil {
				return sent, err
			}
		}
		for sent < len(msgs) && isLinkAddr(msgs[sent].Addr) {
			if now == 0 {
				now = c.clock()
			}
			c.sendLink(&msgs[sent], now)
			sent++
		}
	}
	return sent, nil
}

func isLinkAddr(ap netip.AddrPort) bool {
	_, _, ok := parseLinkAddr(ap)
	return ok
}

// sendLink queues one datagram for its link, at now (Conn.clock).
func (c *Conn) sendLink(m *udp.Message, now time.Duration) {
	id, t, _ := parseLinkAddr(m.Addr)
	k := &c.stats[t]
	// The read lock is held to the send: a link's Close removes it from
	// the map before it drains its queue, so nothing is left behind.
	c.mu.RLock()
	defer c.mu.RUnlock()
	l := c.links[id]
	if l == nil || l.transport != t || len(m.Buf) > len(packet{}.buf) {
		k.gone.Add(1)
		return
	}
	p := c.get()
	if p == nil {
		k.sendFull.Add(1)
		return
	}
	n := copy(p.buf[:], m.Buf)
	p.n = n
	p.queued = now
	select {
	case l.out <- p: // p is the link's now: Send may already have put it back
		k.packetsOut.Add(1)
		k.bytesOut.Add(uint64(n))
	default:
		k.sendFull.Add(1)
		c.put(p)
	}
}
