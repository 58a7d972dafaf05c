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

// ClientGroup runs many Clients on one goroutine and a few sockets, for
// load generators and bots. A Client of its own has a socket, a reader
// goroutine, a loop goroutine and a ticker: a thousand of them cost the
// process thousands of wake-ups and a thousand send system calls a tick.
// A group has one timer at the servers' tick rate that ticks its clients
// in turn and writes their packets in one batch per socket (sendmmsg),
// and reads each socket in batches (recvmmsg), handing every datagram to
// its client.
//
// The clients of one socket share its address: a server tells them
// apart by the connection id in each packet's header (it keys sessions
// by id, and checks the address per session). The handshake's challenge
// names no connection, so each socket runs one handshake at a time, in
// the order Dial was called, and the group spreads its clients over
// ClientGroupConfig.Sockets sockets so that that many handshakes run at
// once. Config's HandshakeTimeout starts when a client's turn comes.
//
// Dial through a group by setting Dialer.Group (and no Dialer.Conn). The
// Client's methods are unchanged, but what they send leaves with the
// group's next batch (its next tick, or its answer to the next datagrams
// read): a no-delay Flush waits for it, and Close returns after the next
// tick.
type ClientGroup struct {
	rate   int // 0 until the first accept, without ClientGroupConfig.TickRate
	period time.Duration
	stall  loopStall    // of run's ticks
	ticker *time.Ticker // owned by run
	socks  []*groupSock
	in     chan sockBatch // the sockets' batches, fanned in
	add    chan *groupDial
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	next   int // the socket of the next dial; owned by dial's caller side under addMu
	addMu  sync.Mutex

	outMu sync.Mutex // guards the sockets' out queues: clients' Flush writes from their own goroutines

	// Owned by run.
	clients []*Client
	byConn  map[groupKey]*Client
	hs      udp.Batch // one datagram, for handshakeBatch
	dropped uint64    // datagrams for no client of the group
	readers int       // sockets whose reader still runs
}

// groupSock is one of a group's sockets.
type groupSock struct {
	conn    udp.BatchConn
	in      *udp.ReadLoop
	out     outQueue     // guarded by the group's outMu
	pending []*groupDial // owned by run; pending[0] is the handshake under way, once started
	// quietUntil: no handshake starts before (owned by run).
	quietUntil time.Time
}

// sockBatch is a batch one socket read (nil when its reader stopped).
type sockBatch struct {
	s *groupSock
	b *udp.Batch
}

// ClientGroupConfig configures a ClientGroup. The zero value is valid.
type ClientGroupConfig struct {
	// TickRate is how often the group ticks its clients, in Hz: the tick
	// rate of the servers they connect to (a client whose server
	// announces another rate fails to dial). Default: the rate the
	// first server to accept a client announces.
	TickRate int
	// Sockets is how many sockets (DSCP-marked, IPv4, ephemeral ports)
	// the group spreads its clients over, and so how many handshakes it
	// runs at once. Default 16.
	Sockets int
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
	token    *ConnectToken // the token it dials with
	rejoined bool          // a rejoin credential
	had      bool          // the client had a session (lost: it rejoins)
	s        *groupSock    // the socket it dials on
	ctx      context.Context
	hs       *session.Initiator
	sentAt   time.Time // last handshake packet sent
	deadline time.Time // set when its turn comes (zero: not started)
	sends    int       // packets sent, copies included
	// challenged is when the challenge was taken: one that no accept
	// follows may have been an earlier client's late one (a challenge
	// names no connection), so the handshake starts over after a while.
	challenged time.Time
	result     chan error
}

// NewClientGroup opens the group's sockets and starts its goroutines;
// Close stops them.
func NewClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	g, err := newClientGroup(cfg)
	if err != nil {
		return nil, err
	}
	g.startReaders()
	go g.run()
	return g, nil
}

// newClientGroup is NewClientGroup without the goroutines (tests drive
// it with startReaders, begin, received and step).
func newClientGroup(cfg ClientGroupConfig) (*ClientGroup, error) {
	period := time.Second / DefaultTickRate // until the first accept says
	if cfg.TickRate != 0 {
		period = time.Second / time.Duration(max(cfg.TickRate, 1))
	}
	if cfg.TickRate < 0 || cfg.TickRate > 1000 {
		return nil, fmt.Errorf("tickwire: ClientGroupConfig.TickRate %d out of range 1..1000", cfg.TickRate)
	}
	if cfg.Sockets == 0 {
		cfg.Sockets = 16
	}
	if cfg.Sockets < 1 || cfg.Sockets > 1024 {
		return nil, fmt.Errorf("tickwire: ClientGroupConfig.Sockets %d out of range 1..1024", cfg.Sockets)
	}
	g := &ClientGroup{
		rate:   cfg.TickRate,
		period: period,
		in:     make(chan sockBatch, 4*cfg.Sockets),
		add:    make(chan *groupDial),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		byConn: map[groupKey]*Client{},
		hs:     udp.Batch{Msgs: make([]udp.Message, 1)},
	}
	for range cfg.Sockets {
		// A socket's clients send their packets of a tick together, all to
		// their server and mostly of one size: runs that GSO writes as one
		// message each, for a fraction of a datagram's cost in the kernel.
		uc, err := udp.Listen("udp4", ":0", udp.Config{ReadBuffer: 4 << 20, WriteBuffer: 4 << 20, GSO: true})
		if err != nil {
			for _, s := range g.socks {
				s.conn.Close()
			}
			return nil, err
		}
		g.socks = append(g.socks, &groupSock{
			conn: uc,
			in:   udp.NewReadLoop(uc, udp.ReadLoopConfig{BatchSize: 32, Batches: 4, BufSize: proto.MaxPacketSizeLimit + 1}),
			// A failed write shows as the clients' timeouts. The runs of
			// one size are written whole: a segmented message is one
			// short system call whatever it carries.
			out: outQueue{conn: uc, log: slog.New(slog.DiscardHandler), chunk: udp.DefaultBatchSize},
		})
	}
	return g, nil
}

// startReaders starts every socket's reader and the goroutine that hands
// its batches to the group.
func (g *ClientGroup) startReaders() {
	g.readers = len(g.socks)
	for _, s := range g.socks {
		go s.in.Run()
		go func() {
			for {
				select {
				case b := <-s.in.Batches():
					g.in <- sockBatch{s, b}
				case <-s.in.Done():
					g.in <- sockBatch{s: s}
					return
				}
			}
		}()
	}
}

// Close ends every client of the group (each tells its server it is
// leaving), fails the dials in progress with ErrGroupClosed, closes the
// sockets and stops the group's goroutines.
func (g *ClientGroup) Close() error {
	g.once.Do(func() { close(g.stop) })
	<-g.done
	return nil
}

// clientConn is a client's view of one of the group's sockets (the next,
// in turn): its writes join that socket's next batch; it is never read
// (the group reads).
func (g *ClientGroup) clientConn() udp.BatchConn {
	g.addMu.Lock()
	s := g.socks[g.next%len(g.socks)]
	g.next++
	g.addMu.Unlock()
	return groupConn{g, s}
}

type groupConn struct {
	g *ClientGroup
	s *groupSock
}

func (c groupConn) ReadBatch([]udp.Message) (int, error) {
	return 0, errors.New("tickwire: a ClientGroup's client does not read its socket")
}

// WriteBatch copies msgs into the socket's next batch.
func (c groupConn) WriteBatch(msgs []udp.Message) (int, error) {
	q := &c.s.out
	c.g.outMu.Lock()
	for _, m := range msgs {
		q.queue(append(q.next(), m.Buf...), m.Addr)
	}
	c.g.outMu.Unlock()
	return len(msgs), nil
}

func (c groupConn) LocalAddr() netip.AddrPort { return c.s.conn.LocalAddr() }
func (c groupConn) Close() error              { return nil } // the group's socket outlives its clients

// flush writes the batches the clients queued.
func (g *ClientGroup) flush() {
	g.outMu.Lock()
	for _, s := range g.socks {
		s.out.flush()
	}
	g.outMu.Unlock()
}

// dial runs c's handshake on the group and, once accepted, keeps c in
// the group. It is Dialer.dialAddr for a Dialer with a Group.
func (g *ClientGroup) dial(ctx context.Context, c *Client) (*Client, error) {
	if err := g.handshake(ctx, c, c.token, c.token.rejoin); err != nil {
		return nil, err
	}
	return c, nil
}

// handshake runs c's handshake with token on the group's goroutine and
// waits for it; rejoined: c had a session, lost.
func (g *ClientGroup) handshake(ctx context.Context, c *Client, token *ConnectToken, rejoined bool) error {
	req := token.Request()
	hs, err := session.NewInitiator(&req, &token.ClientKey, &token.ServerKey)
	if err != nil {
		return err
	}
	d := &groupDial{c: c, token: token, rejoined: rejoined, had: c.sess != nil, s: c.conn.(groupConn).s, ctx: ctx, hs: hs, result: make(chan error, 1)}
	select {
	case g.add <- d:
	case <-g.done:
		return ErrGroupClosed
	}
	return <-d.result
}

func (g *ClientGroup) run() {
	defer close(g.done)
	g.ticker = time.NewTicker(g.period)
	defer g.ticker.Stop()
	for {
		select {
		case d := <-g.add:
			g.begin(d)
		case sb := <-g.in:
			if sb.b == nil {
				g.readers--
				g.shutdown() // a socket failed
				return
			}
			g.received(sb.s, sb.b)
			sb.s.in.Release(sb.b)
		case <-g.ticker.C:
			g.step()
		case <-g.stop:
			g.shutdown()
			return
		}
	}
}

// begin queues d's handshake on its socket, and starts it if none is
// under way there.
func (g *ClientGroup) begin(d *groupDial) {
	d.s.pending = append(d.s.pending, d)
	if len(d.s.pending) == 1 {
		g.startHandshake(d.s)
	}
}

// startHandshake starts the next handshake queued on s, unless s waits
// for late copies of the last one's packets to pass.
func (g *ClientGroup) startHandshake(s *groupSock) {
	if len(s.pending) == 0 || s.pending[0].c.now().Before(s.quietUntil) {
		return
	}
	d := s.pending[0]
	d.deadline = d.c.now().Add(d.c.cfg.HandshakeTimeout)
	d.send()
	g.flush()
}

// send sends the handshake packet due (again) now.
func (d *groupDial) send() {
	c := d.c
	d.sentAt = c.now()
	d.sends++
	c.out.queue(append(c.out.next(), d.hs.Packet()...), c.server)
	c.out.flush()
}

// finishHandshake ends the handshake under way on s with err (nil: the
// client joins the group) and starts the next.
func (g *ClientGroup) finishHandshake(s *groupSock, err error) {
	d := s.pending[0]
	if d.sends > 1 {
		// It sent copies: the server's answers to them may still come,
		// and a challenge names no connection, so the next handshake
		// waits until they had time to pass.
		s.quietUntil = d.c.now().Add(quietAfterCopies)
	}
	copy(s.pending, s.pending[1:])
	s.pending[len(s.pending)-1] = nil
	s.pending = s.pending[:len(s.pending)-1]
	if err == nil {
		g.clients = append(g.clients, d.c)
		g.byConn[groupKey{d.c.server, d.c.sess.ID()}] = d.c
	}
	d.result <- err
	g.startHandshake(s)
}

// received hands each datagram of b, read from s, to its client or to
// s's handshake under way, then writes what they answered.
func (g *ClientGroup) received(s *groupSock, b *udp.Batch) {
	for i := range b.N {
		m := &b.Msgs[i]
		if m.N > proto.MaxPacketSizeLimit {
			g.dropped++
			continue
		}
		g.datagram(s, m.Buf[:m.N], m.Addr, b.At)
	}
	g.flush()
}

func (g *ClientGroup) datagram(s *groupSock, pkt []byte, from netip.AddrPort, at time.Time) {
	t, sealed, err := proto.ParsePrefix(pkt)
	if err == nil && sealed && t != proto.PacketDenied {
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
	if len(s.pending) == 0 || s.pending[0].deadline.IsZero() || from != s.pending[0].c.server {
		g.dropped++ // no handshake under way: nobody's, or a late copy for the last one
		return
	}
	d := s.pending[0]
	c := d.c
	g.hs.Msgs[0] = udp.Message{Buf: pkt, N: len(pkt), Addr: from}
	g.hs.N, g.hs.At = 1, at
	was := d.hs.Challenged()
	w, wAt, err := c.handshakeBatch(&g.hs, d.hs, d.send)
	if err == nil && w.Session != nil {
		err = c.start(d.token, w, wAt, d.sentAt, d.rejoined)
	}
	g.hs.Msgs[0] = udp.Message{}
	if !was && d.hs.Challenged() {
		d.challenged = at
	}
	switch {
	case err != nil:
		g.finishHandshake(s, err)
	case w.Session == nil:
		// under way
	case g.rate == 0:
		g.rate, g.period = c.tickRate, time.Second/time.Duration(c.tickRate)
		if g.ticker != nil {
			g.ticker.Reset(g.period)
		}
		g.finishHandshake(s, nil)
	case c.tickRate != g.rate:
		if !d.had {
			c.sess = nil
		}
		g.finishHandshake(s, fmt.Errorf("tickwire: the server ticks at %d Hz, the client group at %d Hz", c.tickRate, g.rate))
	default:
		g.finishHandshake(s, nil)
	}
}

// step is one tick of the group: the handshakes' timers, then every
// client's tick, then one batch per socket of all their packets.
func (g *ClientGroup) step() {
	for _, s := range g.socks {
		g.handshakeTimers(s)
	}
	excuse := g.stall.since(time.Now(), g.period) // the group's loop stalled, not the servers
	kept := g.clients[:0]
	for _, c := range g.clients {
		switch goesOn, lost := g.tickClient(c, excuse); {
		case goesOn:
			kept = append(kept, c)
		case lost != 0:
			// Out of the group's clients while it rejoins: back in
			// when its new handshake finishes.
			delete(g.byConn, groupKey{c.server, c.sess.ID()})
			go c.rejoinThen(lost, func(ctx context.Context, tok *ConnectToken) error { return g.handshake(ctx, c, tok, true) })
		default:
			delete(g.byConn, groupKey{c.server, c.sess.ID()})
			c.finish()
		}
	}
	clear(g.clients[len(kept):])
	g.clients = kept
	g.flush()
}

// handshakeTimers fails s's handshakes whose context ended or whose time
// ran out, starts over one that took a challenge long ago, and resends
// the one under way when due.
func (g *ClientGroup) handshakeTimers(s *groupSock) {
	for i := 1; i < len(s.pending); i++ {
		if d := s.pending[i]; d.ctx.Err() != nil {
			d.result <- d.ctx.Err()
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			i--
		}
	}
	if len(s.pending) == 0 {
		return
	}
	d := s.pending[0]
	if d.deadline.IsZero() {
		g.startHandshake(s) // after the quiet time
		return
	}
	now := d.c.now()
	switch {
	case d.ctx.Err() != nil:
		g.finishHandshake(s, d.ctx.Err())
	case !now.Before(d.deadline):
		g.finishHandshake(s, fmt.Errorf("%w: %v", ErrHandshakeTimeout, d.c.server))
	case d.hs.Challenged() && now.Sub(d.challenged) >= restartAfter:
		if err := d.restart(); err != nil {
			g.finishHandshake(s, err)
			return
		}
		d.send()
	case now.Sub(d.sentAt) >= handshakeResend:
		d.send()
	}
}

const (
	// restartAfter is how long a group's handshake waits for the accept
	// after taking a challenge before it starts over with a new request
	// (the challenge may have been a late one of the handshake before).
	restartAfter = time.Second
	// quietAfterCopies is how long a group's socket waits after a
	// handshake that sent copies of its packets before it starts the
	// next.
	quietAfterCopies = 3 * handshakeResend
)

// restart starts d's handshake over: the request again, ready for a new
// challenge.
func (d *groupDial) restart() error {
	req := d.token.Request()
	hs, err := session.NewInitiator(&req, &d.token.ClientKey, &d.token.ServerKey)
	if err != nil {
		return err
	}
	d.hs = hs
	return nil
}

// tickClient does for c what its own loop does on a tick, and reports
// whether the session goes on; if not, lost is the reason it was lost
// when c is to rejoin (0: it ended).
func (g *ClientGroup) tickClient(c *Client, excuse time.Duration) (goesOn bool, lost proto.DisconnectReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil { // ended by a datagram (the server's disconnect)
		return false, 0
	}
	now := c.now()
	select {
	case <-c.stopLoop:
		c.tick(now) // one last packet with what was queued
		c.end(c.closeReason, false, now)
		return false, 0
	default:
	}
	select {
	case <-c.flushReq: // flushed with this tick's packets
	default:
	}
	if excuse > 0 {
		c.sess.Excuse(excuse)
	}
	lost = c.lost
	if c.sess.TimedOut(now) {
		lost = proto.DisconnectTimeout
	}
	if lost != 0 {
		c.lost = 0
		if c.canRejoin() {
			return false, lost
		}
		c.end(lost, true, now)
		return false, 0
	}
	c.tick(now)
	c.out.flush()
	return true, 0
}

// shutdown ends every client, fails every dial in progress, closes the
// sockets and waits for their readers.
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
	for _, s := range g.socks {
		for _, d := range s.pending {
			d.result <- ErrGroupClosed
		}
		s.pending = nil
		s.conn.Close()
	}
	for g.readers > 0 {
		sb := <-g.in
		if sb.b == nil {
			g.readers--
		} else {
			sb.s.in.Release(sb.b)
		}
	}
}
