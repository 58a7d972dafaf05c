package webgate

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Link is one browser connection: the packets its transport reads go to
// the server through Deliver, the server's packets to it come out of
// Send. Deliver and Send may run on different goroutines; Close is safe
// from any.
type Link struct {
	c         *Conn
	id        uint32
	transport Transport
	addr      netip.AddrPort // the synthetic address the server sees
	remote    netip.Addr     // the browser's address, for the limits

	out    chan *packet // the server's packets for the transport
	queued atomic.Int32 // packets of this link in c.ready
	idle   *time.Timer
	done   chan struct{}
	once   sync.Once
}

// Open opens a link for a browser connection that came from remote over
// transport t, or returns ErrRefused when a limit says no.
func (c *Conn) Open(t Transport, remote netip.Addr) (*Link, error) {
	k := &c.stats[t]
	remote = remote.Unmap()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing.Load() || len(c.links) >= c.cfg.MaxLinks || c.perIP[remote] >= c.cfg.MaxLinksPerAddr {
		k.refused.Add(1)
		return nil, ErrRefused
	}
	c.nextID++
	for c.nextID == 0 || c.links[c.nextID] != nil {
		c.nextID++
	}
	l := &Link{
		c:         c,
		id:        c.nextID,
		transport: t,
		addr:      linkAddr(t, c.nextID),
		remote:    remote,
		out:       make(chan *packet, c.cfg.LinkQueue),
		done:      make(chan struct{}),
	}
	l.idle = time.AfterFunc(c.cfg.IdleTimeout, l.Close)
	c.links[l.id] = l
	c.perIP[remote]++
	k.open.Add(1)
	k.accepted.Add(1)
	return l, nil
}

// Addr is the synthetic address the server knows the link by.
func (l *Link) Addr() netip.AddrPort { return l.addr }

// Transport is the link's transport.
func (l *Link) Transport() Transport { return l.transport }

// Done is closed when the link closes.
func (l *Link) Done() <-chan struct{} { return l.done }

// Deliver hands one message the browser sent to the server (it is copied:
// b is the caller's again on return). A message that is not a tickwire
// datagram is refused with a *PacketError; one that finds the queue full
// is dropped silently, as a socket drops a datagram. It does not
// allocate.
func (l *Link) Deliver(b []byte) error {
	select {
	case <-l.done:
		return ErrLinkClosed
	default:
	}
	c := l.c
	k := &c.stats[l.transport]
	if err := checkPacket(b); err != nil {
		k.malformed.Add(1)
		return err
	}
	l.idle.Reset(c.cfg.IdleTimeout)
	if l.queued.Add(1) > int32(c.cfg.LinkQueue) {
		l.queued.Add(-1)
		k.queueFull.Add(1)
		return nil
	}
	p := c.get()
	if p == nil {
		l.queued.Add(-1)
		k.queueFull.Add(1)
		return nil
	}
	p.n = copy(p.buf[:], b)
	p.link = l
	select {
	case c.ready <- p:
		c.interrupt()
	default:
		l.queued.Add(-1)
		k.queueFull.Add(1)
		c.put(p)
	}
	return nil
}

// Send writes the server's packets for the link with write, one call per
// packet (b is valid during the call only), until the link closes, ctx
// ends or write fails; it returns that error (nil when the link closed).
// A packet that waited longer than Config.MaxPacketAge is dropped
// instead (TransportStats.Stale).
func (l *Link) Send(ctx context.Context, write func(b []byte) error) error {
	for {
		select {
		case p := <-l.out:
			if age := l.c.cfg.MaxPacketAge; age > 0 && l.c.clock()-p.queued > age {
				l.c.stats[l.transport].stale.Add(1)
				l.c.put(p)
				continue
			}
			err := write(p.bytes())
			l.c.put(p)
			if err != nil {
				return err
			}
		case <-l.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close closes the link: the server's packets for it are dropped from
// now on, and the session over it ends as a UDP client's does that goes
// silent (the server times it out).
func (l *Link) Close() {
	l.once.Do(func() {
		c := l.c
		c.mu.Lock()
		// Under mu: the idle timer can fire before Open, which holds
		// mu, has stored it.
		l.idle.Stop()
		delete(c.links, l.id)
		if c.perIP[l.remote]--; c.perIP[l.remote] <= 0 {
			delete(c.perIP, l.remote)
		}
		c.mu.Unlock()
		c.stats[l.transport].open.Add(-1)
		close(l.done)
		for {
			select {
			case p := <-l.out:
				c.put(p)
			default:
				return
			}
		}
	})
}

// Describe names the client at ap for an operator: a UDP address as it
// is; a browser link by its transport and the browser's address
// ("websocket from 198.51.100.7"), or its transport alone once the link
// has closed. The synthetic address means nothing to a reader.
func (c *Conn) Describe(ap netip.AddrPort) string {
	id, t, ok := parseLinkAddr(ap)
	if !ok {
		return ap.String()
	}
	c.mu.RLock()
	l := c.links[id]
	c.mu.RUnlock()
	if l == nil {
		return t.String() + " (closed)"
	}
	return t.String() + " from " + l.remote.String()
}
