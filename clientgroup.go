package tickwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// ClientGroup runs many Clients on one goroutine, for load generators and
// bots: one timer at the servers' tick rate for all of them, and on each
// tick, for each client in turn, its socket read without waiting
// (udp.Conn.TryReadBatch), its session ticked and its packets written.
// A Client of its own has a reader goroutine, a loop goroutine and a
// ticker, so a thousand of them cost the process three thousand wake-ups
// a tick; a group costs one.
//
// Dial through a group by setting Dialer.Group. Each client keeps its
// own socket (the server knows a connection by its connection id and
// its address): Dialer.Conn, if set, must be a *udp.Conn, or any
// BatchConn with a TryReadBatch method. The handshake runs on the
// group's goroutine too.
//
// What changes for the client: the datagrams the server sent wait in the
// socket until the group's next tick, and are stamped with that tick's
// time, so a grouped client hears the server up to one tick later than
// one with its own loop (its RTT estimate includes that wait); the
// follow-up flush of a no-delay Flush also waits for the next tick. The
// Client's methods (Send, Stats, Do, Close...) are unchanged; Close
// returns after the group's next tick.
type ClientGroup struct {
	rate    int
	period  time.Duration
	add     chan *groupDial
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once

	// Owned by run.
	clients []*Client
	pending []*groupDial
	batch   udp.Batch
}

// ClientGroupConfig configures a ClientGroup. The zero value is valid.
type ClientGroupConfig struct {
	// TickRate is how often the group ticks its clients, in Hz: the tick
	// rate of the servers they connect to (a client whose server
	// announces another rate fails to dial). Default DefaultTickRate.
	TickRate int
	// BatchSize is how many datagrams one read of a socket takes at most
	// (default 8; a client hears about one packet a tick).
	BatchSize int
}

// ErrGroupClosed is returned by Dial through a ClientGroup that was
// closed.
var ErrGroupClosed = errors.New("tickwire: client group closed")

// pollConn is a socket a ClientGroup can read without waiting.
type pollConn interface {
	udp.BatchConn
	TryReadBatch(msgs []udp.Message) (int, error)
}

// groupDial is a client whose handshake the group runs.
type groupDial struct {
	c        *Client
	ctx      context.Context
	hs       *session.Initiator
	sentAt   time.Time // last handshake packet sent
	deadline time.Time
	result   chan error
}

// NewClientGroup starts a group's goroutine; Close stops it.
func NewClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	g, err := newClientGroup(cfg)
	if err != nil {
		return nil, err
	}
	go g.run()
	return g, nil
}

// newClientGroup is NewClientGroup without the goroutine (tests drive
// it with begin and step).
func newClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	if cfg.TickRate == 0 {
		cfg.TickRate = DefaultTickRate
	}
	if cfg.TickRate < 1 || cfg.TickRate > 1000 {
		return nil, fmt.Errorf("tickwire: ClientGroupConfig.TickRate %d out of range 1..1000", cfg.TickRate)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 8
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > 1024 {
		return nil, fmt.Errorf("tickwire: ClientGroupConfig.BatchSize %d out of range 1..1024", cfg.BatchSize)
	}
	g := &ClientGroup{
		rate:   cfg.TickRate,
		period: time.Second / time.Duration(cfg.TickRate),
		add:    make(chan *groupDial),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		batch:  udp.Batch{Msgs: make([]udp.Message, cfg.BatchSize)},
	}
	for i := range g.batch.Msgs {
		g.batch.Msgs[i].Buf = make([]byte, proto.MaxPacketSizeLimit+1)
	}
	return g, nil
}

// Close ends every client of the group (each tells its server it is
// leaving), fails the dials in progress with ErrGroupClosed and stops
// the group's goroutine.
func (g *ClientGroup) Close() error {
	g.stopped.Do(func() { close(g.stop) })
	<-g.done
	return nil
}

// dial runs c's handshake on the group and, once accepted, keeps c in
// the group. It is Dialer.dialAddr for a Dialer with a Group.
func (g *ClientGroup) dial(ctx context.Context, c *Client) (*Client, error) {
	if _, ok := c.conn.(pollConn); !ok {
		c.conn.Close()
		return nil, fmt.Errorf("tickwire: a ClientGroup reads sockets without waiting: Dialer.Conn %T has no TryReadBatch", c.conn)
	}
	req := c.token.Request()
	hs, err := session.NewInitiator(&req, &c.token.ClientKey, &c.token.ServerKey)
	if err != nil {
		c.conn.Close()
		return nil, err
	}
	d := &groupDial{c: c, ctx: ctx, hs: hs, deadline: c.now().Add(c.cfg.HandshakeTimeout), result: make(chan error, 1)}
	select {
	case g.add <- d:
	case <-g.done:
		c.conn.Close()
		return nil, ErrGroupClosed
	}
	if err := <-d.result; err != nil {
		return nil, err
	}
	return c, nil
}

func (g *ClientGroup) run() {
	defer close(g.done)
	ticker := time.NewTicker(g.period)
	defer ticker.Stop()
	for {
		select {
		case d := <-g.add:
			g.begin(d)
		case <-ticker.C:
			g.step()
		case <-g.stop:
			g.shutdown()
			return
		}
	}
}

// begin starts d's handshake.
func (g *ClientGroup) begin(d *groupDial) {
	d.send()
	g.pending = append(g.pending, d)
}

// step is one tick of the group: the handshakes, then the clients.
func (g *ClientGroup) step() {
	g.handshakes()
	g.tick()
}

// send sends the handshake packet due (again) now.
func (d *groupDial) send() {
	c := d.c
	d.sentAt = c.now()
	c.out.queue(append(c.out.next(), d.hs.Packet()...), c.server)
	c.out.flush()
}

// handshakes advances the handshakes in progress.
func (g *ClientGroup) handshakes() {
	kept := g.pending[:0]
	for _, d := range g.pending {
		finished, err := g.handshake(d)
		if !finished {
			kept = append(kept, d)
			continue
		}
		if err != nil {
			d.c.conn.Close()
		} else {
			g.clients = append(g.clients, d.c)
		}
		d.result <- err
	}
	clear(g.pending[len(kept):])
	g.pending = kept
}

// handshake reads d's socket and reports whether its handshake finished,
// with the error that ended it, if any.
func (g *ClientGroup) handshake(d *groupDial) (finished bool, err error) {
	c := d.c
	if err := d.ctx.Err(); err != nil {
		return true, err
	}
	for {
		n, err := c.conn.(pollConn).TryReadBatch(g.batch.Msgs)
		if err != nil {
			return true, err
		}
		if n == 0 {
			break
		}
		g.batch.N, g.batch.At = n, c.now()
		if err := c.handshakeBatch(&g.batch, d.hs, d.sentAt, d.send); err != nil {
			return true, err
		}
		if c.sess != nil {
			if c.tickRate != g.rate {
				c.sess = nil
				return true, fmt.Errorf("tickwire: the server ticks at %d Hz, the client group at %d Hz", c.tickRate, g.rate)
			}
			return true, nil
		}
		if n < len(g.batch.Msgs) {
			break
		}
	}
	now := c.now()
	if !now.Before(d.deadline) {
		return true, fmt.Errorf("%w: %v", ErrHandshakeTimeout, c.server)
	}
	if now.Sub(d.sentAt) >= handshakeResend {
		d.send()
	}
	return false, nil
}

// tick runs one tick of every client and drops those whose session
// ended.
func (g *ClientGroup) tick() {
	kept := g.clients[:0]
	for _, c := range g.clients {
		if g.tickClient(c) {
			kept = append(kept, c)
		} else {
			c.finish()
		}
	}
	clear(g.clients[len(kept):])
	g.clients = kept
}

// tickClient does for c what its own loop would since the last tick: it
// reads what the socket holds, then sends the tick's packets. It reports
// whether the session goes on.
func (g *ClientGroup) tickClient(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	select {
	case <-c.stopLoop:
		c.tick(now) // one last packet with what was queued
		c.end(c.closeReason, false, now)
		return false
	default:
	}
	select {
	case <-c.flushReq: // flushed with this tick's packets
	default:
	}
	for {
		n, err := c.conn.(pollConn).TryReadBatch(g.batch.Msgs)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.cfg.Logger.Warn("client socket failed", "err", err)
			}
			c.end(proto.DisconnectClosed, false, now)
			return false
		}
		if n == 0 {
			break
		}
		g.batch.N, g.batch.At = n, now
		c.receive(&g.batch)
		c.out.flush()
		if c.err != nil {
			return false
		}
		if n < len(g.batch.Msgs) {
			break
		}
	}
	if c.sess.TimedOut(now) {
		c.end(proto.DisconnectTimeout, true, now)
		return false
	}
	c.tick(now)
	c.out.flush()
	return true
}

// shutdown ends every client and fails every dial in progress.
func (g *ClientGroup) shutdown() {
	for _, c := range g.clients {
		c.mu.Lock()
		c.end(proto.DisconnectClosed, false, c.now())
		c.mu.Unlock()
		c.finish()
	}
	g.clients = nil
	for _, d := range g.pending {
		d.c.conn.Close()
		d.result <- ErrGroupClosed
	}
	g.pending = nil
}
