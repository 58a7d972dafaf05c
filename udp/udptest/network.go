package udptest

import (
	"container/heap"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ErrTooLarge is wrapped by the error WriteTo returns for a datagram
// larger than the link's MTU.
var ErrTooLarge = errors.New("udptest: datagram larger than link MTU")

// Link describes the path from one host to another.
type Link struct {
	// Latency is the one-way delay of every datagram.
	Latency time.Duration
	// MTU is the largest IP packet the link carries, headers included
	// (IPv4 20 + UDP 8 bytes; IPv6 40 + 8). Zero selects DefaultMTU.
	MTU int
}

const (
	// DefaultMTU is Link.MTU's default: Ethernet.
	DefaultMTU = 1500
	// DefaultQueueLen is Config.QueueLen's default.
	DefaultQueueLen = 1024
	firstEphemeral  = 49152
)

// Config configures a Network; the zero value is a network with no
// latency, 1500-byte MTU and 1024-datagram receive queues.
type Config struct {
	// Link applies between hosts without a SetLink of their own.
	Link Link
	// QueueLen is how many datagrams a Conn holds unread before it drops
	// arrivals. Zero selects DefaultQueueLen.
	QueueLen int
}

// Stats counts datagrams across a Network.
type Stats struct {
	Sent        uint64 // accepted by WriteTo
	Delivered   uint64 // placed in a receive queue
	NoListener  uint64 // dropped: nobody listened on the destination
	QueueFull   uint64 // dropped: the receive queue was full
	RejectedMTU uint64 // refused by WriteTo: larger than the link MTU
}

// Network is an in-memory network of Conns. It is safe for concurrent use.
type Network struct {
	cfg Config

	mu    sync.Mutex
	conns map[netip.AddrPort]*Conn
	links map[[2]netip.Addr]Link
	port  uint16
	seq   uint64
	stats Stats
	free  [][]byte // recycled datagram buffers
}

// NewNetwork returns an empty network.
func NewNetwork(cfg Config) *Network {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	return &Network{
		cfg:   cfg,
		conns: make(map[netip.AddrPort]*Conn),
		links: make(map[[2]netip.Addr]Link),
		port:  firstEphemeral,
	}
}

// SetLink sets the link from host from to host to (one direction; call
// again with the hosts swapped for the way back).
func (n *Network) SetLink(from, to netip.Addr, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[[2]netip.Addr{from.Unmap(), to.Unmap()}] = l
}

func (n *Network) link(from, to netip.Addr) Link {
	l, ok := n.links[[2]netip.Addr{from, to}]
	if !ok {
		l = n.cfg.Link
	}
	if l.MTU == 0 {
		l.MTU = DefaultMTU
	}
	return l
}

// Stats returns the network's counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Listen opens a Conn on addr ("10.0.0.1:7777", "[fd00::1]:0"). The host
// must be a specific address; port 0 picks a free ephemeral port.
func (n *Network) Listen(addr string) (*Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("udptest: listen %q: %w", addr, err)
	}
	return n.ListenAddrPort(ap)
}

// ListenAddrPort is Listen for a parsed address.
func (n *Network) ListenAddrPort(ap netip.AddrPort) (*Conn, error) {
	a := ap.Addr().Unmap()
	if !a.IsValid() || a.IsUnspecified() {
		return nil, fmt.Errorf("udptest: listen %v: need a specific host address", ap)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	port := ap.Port()
	if port == 0 {
		for tries := 0; ; tries++ {
			if tries == 1<<16-firstEphemeral {
				return nil, fmt.Errorf("udptest: listen %v: no free port", ap)
			}
			p := n.port
			n.port++
			if n.port == 0 {
				n.port = firstEphemeral
			}
			if _, used := n.conns[netip.AddrPortFrom(a, p)]; !used {
				port = p
				break
			}
		}
	}
	ap = netip.AddrPortFrom(a, port)
	if _, used := n.conns[ap]; used {
		return nil, fmt.Errorf("udptest: listen %v: address already in use", ap)
	}
	c := newConn(n, ap)
	n.conns[ap] = c
	return c, nil
}

// send routes one datagram; it is called by Conn.WriteTo.
func (n *Network) send(from netip.AddrPort, b []byte, to netip.AddrPort) error {
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	n.mu.Lock()
	l := n.link(from.Addr(), to.Addr())
	header := 20 + 8
	if to.Addr().Is6() {
		header = 40 + 8
	}
	if len(b)+header > l.MTU {
		n.stats.RejectedMTU++
		n.mu.Unlock()
		return fmt.Errorf("%w: %d bytes of payload + %d of headers > MTU %d", ErrTooLarge, len(b), header, l.MTU)
	}
	n.stats.Sent++
	dst := n.conns[to]
	if dst == nil {
		n.stats.NoListener++
		n.mu.Unlock()
		return nil
	}
	n.seq++
	d := datagram{from: from, data: n.copyIn(b), due: time.Now().Add(l.Latency), seq: n.seq}
	n.mu.Unlock()
	if l.Latency <= 0 {
		dst.deliver(d)
	} else {
		dst.schedule(d)
	}
	return nil
}

// maxFree bounds the recycled buffers a Network keeps.
const maxFree = 4096

// copyIn copies b into a recycled buffer; n.mu is held.
func (n *Network) copyIn(b []byte) []byte {
	var buf []byte
	if k := len(n.free); k > 0 && cap(n.free[k-1]) >= len(b) {
		buf, n.free[k-1] = n.free[k-1], nil
		n.free = n.free[:k-1]
	} else {
		buf = make([]byte, 0, max(len(b), 256))
	}
	return append(buf[:0], b...)
}

func (n *Network) release(b []byte) {
	n.mu.Lock()
	if len(n.free) < maxFree {
		n.free = append(n.free, b)
	}
	n.mu.Unlock()
}

func (n *Network) count(f func(*Stats)) {
	n.mu.Lock()
	f(&n.stats)
	n.mu.Unlock()
}

func (n *Network) remove(c *Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[c.local] == c {
		delete(n.conns, c.local)
	}
}

// datagram is one datagram in flight or queued.
type datagram struct {
	from netip.AddrPort
	data []byte
	due  time.Time
	seq  uint64
}

// inflight orders datagrams by arrival time, then send order.
type inflight []datagram

func (h inflight) Len() int { return len(h) }
func (h inflight) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h inflight) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *inflight) Push(x any)   { *h = append(*h, x.(datagram)) }
func (h *inflight) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = datagram{}
	*h = old[:len(old)-1]
	return d
}

var _ heap.Interface = (*inflight)(nil)
var _ net.PacketConn = (*Conn)(nil)
