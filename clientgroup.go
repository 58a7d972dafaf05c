package tickwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// ClientGroup runs many Clients on one goroutine and one socket, for
// load generators and bots. A Client of its own has a socket, a reader
// goroutine, a loop goroutine and a ticker: a thousand of them cost the
// process thousands of wake-ups and a thousand send system calls a tick.
// A group has one timer at the servers' tick rate that ticks its clients
// in turn and writes all their packets with one batch (sendmmsg), and one
// reader that takes the servers' datagrams in batches (recvmmsg) and
// hands each to its client.
//
// The clients share the group's address: a server tells them apart by
// the connection id in each packet's header (it keys sessions by id, and
// checks the address per session). The handshake's challenge names no
// connection, so a group runs one handshake at a time, in the order Dial
// was called (a handshake takes a round trip or two; Config's
// HandshakeTimeout starts when a client's turn comes).
//
// Dial through a group by setting Dialer.Group (and no Dialer.Conn). The
// Client's methods are unchanged; its Close returns after the group's
// next tick, and the follow-up flush of a no-delay Flush waits for it
// too.
type ClientGroup struct {
	rate   int
	period time.Duration
	conn   udp.BatchConn
	in     *udp.ReadLoop
	add    chan *groupDial
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	outMu sync.Mutex // guards out: clients' Flush writes from their own goroutines
	out   outQueue

	// Owned by run.
	clients []*Client
	byConn  map[groupKey]*Client
	pending []*groupDial // pending[0] is the handshake under way
	hs      udp.Batch    // one datagram, for handshakeBatch
	dropped uint64       // datagrams for no client of the group
}

// ClientGroupConfig configures a ClientGroup. The zero value is valid.
type ClientGroupConfig struct {
	// TickRate is how often the group ticks its clients, in Hz: the tick
	// rate of the servers they connect to (a client whose server
	// announces another rate fails to dial). Default DefaultTickRate.
	TickRate int
	// Conn is the group's socket, closed with the group (an impaired or
	// in-memory one in tests). Default: a new DSCP-marked IPv4 socket on
	// an ephemeral port with 8 MiB buffers, which reaches IPv4 servers.
	Conn udp.BatchConn
}

// ErrGroupClosed is returned by Dial through a ClientGroup that was
// closed.
var ErrGroupClosed = errors.New("tickwire: client group closed")

// groupKey names a client of the group: its server and connection id.
type groupKey struct {
	server netip.AddrPort
	id     uint32
}

// groupDial is a client whose handshake the group runs.
type groupDial struct {
	c        *Client
	ctx      context.Context
	hs       *session.Initiator
	sentAt   time.Time // last handshake packet sent
	deadline time.Time // set when its turn comes
	result   chan error
}

// NewClientGroup opens the group's socket and starts its goroutines;
// Close stops them.
func NewClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	g, err := newClientGroup(cfg)
	if err != nil {
		return nil, err
	}
	go g.in.Run()
	go g.run()
	return g, nil
}

// newClientGroup is NewClientGroup without the group's own goroutine
// (tests drive it with begin, received and step).
func newClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	if cfg.TickRate == 0 {
		cfg.TickRate = DefaultTickRate
	}
	if cfg.TickRate < 1 || cfg.TickRate > 1000 {
		return nil, fmt.Errorf("tickwire: ClientGroupConfig.TickRate %d out of range 1..1000", cfg.TickRate)
	}
	conn := cfg.Conn
	if conn == nil {
		uc, err := udp.Listen("udp4", ":0", udp.Config{ReadBuffer: 8 << 20, WriteBuffer: 8 << 20})
		if err != nil {
			return nil, err
		}
		conn = uc
	}
	g := &ClientGroup{
		rate:   cfg.TickRate,
		period: time.Second / time.Duration(cfg.TickRate),
		conn:   conn,
		in:     udp.NewReadLoop(conn, udp.ReadLoopConfig{BatchSize: udp.DefaultBatchSize, BufSize: proto.MaxPacketSizeLimit + 1}),
		add:    make(chan *groupDial),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		out:    outQueue{conn: conn, log: slog.New(slog.DiscardHandler)}, // a failed write shows as the clients' timeouts
		byConn: map[groupKey]*Client{},
		hs:     udp.Batch{Msgs: make([]udp.Message, 1)},
	}
	return g, nil
}

// LocalAddr is the group's socket's address, which all its clients share.
func (g *ClientGroup) LocalAddr() netip.AddrPort { return g.conn.LocalAddr() }

// Close ends every client of the group (each tells its server it is
// leaving), fails the dials in progress with ErrGroupClosed, closes the
// socket and stops the group's goroutines.
func (g *ClientGroup) Close() error {
	g.once.Do(func() { close(g.stop) })
	<-g.done
	return nil
}

// clientConn is a client's view of the group's socket: its writes join
// the group's next batch; it is never read (the group reads).
func (g *ClientGroup) clientConn() udp.BatchConn { return groupConn{g} }

type groupConn struct{ g *ClientGroup }

func (c groupConn) ReadBatch([]udp.Message) (int, error) {
	return 0, errors.New("tickwire: a ClientGroup's client does not read its socket")
}

// WriteBatch copies msgs into the group's next batch.
func (c groupConn) WriteBatch(msgs []udp.Message) (int, error) {
	q := &c.g.out
	c.g.outMu.Lock()
	for _, m := range msgs {
		q.queue(append(q.next(), m.Buf...), m.Addr)
	}
	c.g.outMu.Unlock()
	return len(msgs), nil
}

func (c groupConn) LocalAddr() netip.AddrPort { return c.g.conn.LocalAddr() }
func (c groupConn) Close() error              { return nil } // the group's socket outlives its clients

// flush writes the batch the clients queued.
func (g *ClientGroup) flush() {
	g.outMu.Lock()
	g.out.flush()
	g.outMu.Unlock()
}

// dial runs c's handshake on the group and, once accepted, keeps c in
// the group. It is Dialer.dialAddr for a Dialer with a Group.
func (g *ClientGroup) dial(ctx context.Context, c *Client) (*Client, error) {
	req := c.token.Request()
	hs, err := session.NewInitiator(&req, &c.token.ClientKey, &c.token.ServerKey)
	if err != nil {
		return nil, err
	}
	d := &groupDial{c: c, ctx: ctx, hs: hs, result: make(chan error, 1)}
	select {
	case g.add <- d:
	case <-g.done:
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
		case b := <-g.in.Batches():
			g.received(b)
			g.in.Release(b)
		case <-ticker.C:
			g.step()
		case <-g.in.Done():
			g.shutdown()
			return
		case <-g.stop:
			g.shutdown()
			return
		}
	}
}

// begin queues d's handshake, and starts it if none is under way.
func (g *ClientGroup) begin(d *groupDial) {
	g.pending = append(g.pending, d)
	if len(g.pending) == 1 {
		g.startHandshake()
	}
}

// startHandshake starts the next queued handshake.
func (g *ClientGroup) startHandshake() {
	if len(g.pending) == 0 {
		return
	}
	d := g.pending[0]
	d.deadline = d.c.now().Add(d.c.cfg.HandshakeTimeout)
	d.send()
	g.flush()
}

// send sends the handshake packet due (again) now.
func (d *groupDial) send() {
	c := d.c
	d.sentAt = c.now()
	c.out.queue(append(c.out.next(), d.hs.Packet()...), c.server)
	c.out.flush()
}

// finishHandshake ends the handshake under way with err (nil: the client
// joins the group) and starts the next.
func (g *ClientGroup) finishHandshake(err error) {
	d := g.pending[0]
	copy(g.pending, g.pending[1:])
	g.pending[len(g.pending)-1] = nil
	g.pending = g.pending[:len(g.pending)-1]
	if err == nil {
		g.clients = append(g.clients, d.c)
		g.byConn[groupKey{d.c.server, d.c.sess.ID()}] = d.c
	}
	d.result <- err
	g.startHandshake()
}

// received hands each datagram of b to its client, or to the handshake
// under way, then writes what they answered.
func (g *ClientGroup) received(b *udp.Batch) {
	for i := range b.N {
		m := &b.Msgs[i]
		if m.N > proto.MaxPacketSizeLimit {
			g.dropped++
			continue
		}
		g.datagram(m.Buf[:m.N], m.Addr, b.At)
	}
	g.flush()
}

func (g *ClientGroup) datagram(pkt []byte, from netip.AddrPort, at time.Time) {
	if t, sealed, err := proto.ParsePrefix(pkt); err == nil && sealed && t != proto.PacketDenied {
		if h, _, err := proto.ParseHeader(pkt); err == nil {
			if c := g.byConn[groupKey{from, h.ConnID}]; c != nil {
				c.mu.Lock()
				if c.err == nil {
					c.receiveDatagram(pkt, at)
					c.out.flush()
				}
				c.mu.Unlock()
				return
			}
		}
	}
	if len(g.pending) == 0 || from != g.pending[0].c.server {
		g.dropped++
		return
	}
	d := g.pending[0]
	c := d.c
	g.hs.Msgs[0] = udp.Message{Buf: pkt, N: len(pkt), Addr: from}
	g.hs.N, g.hs.At = 1, at
	err := c.handshakeBatch(&g.hs, d.hs, d.sentAt, d.send)
	g.hs.Msgs[0] = udp.Message{}
	switch {
	case err != nil:
		g.finishHandshake(err)
	case c.sess != nil && c.tickRate != g.rate:
		c.sess = nil
		g.finishHandshake(fmt.Errorf("tickwire: the server ticks at %d Hz, the client group at %d Hz", c.tickRate, g.rate))
	case c.sess != nil:
		g.finishHandshake(nil)
	}
}

// step is one tick of the group: the handshakes' timers, then every
// client's tick, then one batch of all their packets.
func (g *ClientGroup) step() {
	g.handshakeTimers()
	kept := g.clients[:0]
	for _, c := range g.clients {
		if g.tickClient(c) {
			kept = append(kept, c)
		} else {
			delete(g.byConn, groupKey{c.server, c.sess.ID()})
			c.finish()
		}
	}
	clear(g.clients[len(kept):])
	g.clients = kept
	g.flush()
}

// handshakeTimers fails the handshakes whose context ended or whose time
// ran out, and resends the one under way when due.
func (g *ClientGroup) handshakeTimers() {
	for i := 1; i < len(g.pending); i++ {
		if d := g.pending[i]; d.ctx.Err() != nil {
			d.result <- d.ctx.Err()
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			i--
		}
	}
	if len(g.pending) == 0 {
		return
	}
	d := g.pending[0]
	now := d.c.now()
	switch {
	case d.ctx.Err() != nil:
		g.finishHandshake(d.ctx.Err())
	case !now.Before(d.deadline):
		g.finishHandshake(fmt.Errorf("%w: %v", ErrHandshakeTimeout, d.c.server))
	case now.Sub(d.sentAt) >= handshakeResend:
		d.send()
	}
}

// tickClient does for c what its own loop does on a tick, and reports
// whether the session goes on.
func (g *ClientGroup) tickClient(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil { // ended by a datagram (the server's disconnect)
		return false
	}
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
	if c.sess.TimedOut(now) {
		c.end(proto.DisconnectTimeout, true, now)
		return false
	}
	c.tick(now)
	c.out.flush()
	return true
}

// shutdown ends every client, fails every dial in progress and closes
// the socket.
func (g *ClientGroup) shutdown() {
	for _, c := range g.clients {
		c.mu.Lock()
		c.end(proto.DisconnectClosed, false, c.now())
		c.mu.Unlock()
		c.finish()
	}
	g.flush()
	g.clients = nil
	clear(g.byConn)
	for _, d := range g.pending {
		d.result <- ErrGroupClosed
	}
	g.pending = nil
	g.conn.Close()
	g.in.Drain()
}
