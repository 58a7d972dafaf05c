package tickwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// ClientHandler receives a client's events on the client's loop goroutine,
// one at a time, with the client's state locked: it may call the Client's
// Send methods, and must not block.
type ClientHandler interface {
	// Message delivers one message; m.Data is valid only during the call.
	Message(c *Client, m *Message)
	// Disconnected is called once, with the reason the session ended.
	Disconnected(c *Client, reason proto.DisconnectReason)
}

// DeniedError is returned by Dial when the server refused the handshake.
type DeniedError struct {
	Addr   netip.AddrPort
	Reason proto.DenyReason
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("tickwire: %v denied the connection: %v", e.Addr, e.Reason)
}

// DisconnectError is what Client.Err returns after the session ended.
type DisconnectError struct {
	Reason proto.DisconnectReason
	// Remote is true when the server ended the session (or went silent).
	Remote bool
}

func (e *DisconnectError) Error() string {
	who := "client"
	if e.Remote {
		who = "server"
	}
	return fmt.Sprintf("tickwire: disconnected by %s: %v", who, e.Reason)
}

// ErrHandshakeTimeout: no server answered the handshake in time.
var ErrHandshakeTimeout = errors.New("tickwire: handshake timed out")

// handshakeResend is how often a client repeats an unanswered request or
// response.
const handshakeResend = 100 * time.Millisecond

// Dialer connects clients. The zero value dials with default Config on a
// new DSCP-marked socket and queues messages for Client.Receive.
type Dialer struct {
	Config Config
	// Handler, if set, receives messages and the disconnect instead of
	// Client.Receive.
	Handler ClientHandler
	// Conn, if set, is the socket to use (an impaired or in-memory one in
	// tests); it is closed with the client. Its address family must reach
	// the server addresses.
	Conn udp.BatchConn
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Game, if set, plays a game on the connection: it consumes the
	// server's game frames and sends the players' inputs.
	Game *GameClient

	// frameFilter is a test hook (nil in production): it sees every game
	// frame before the game does and returns the frame to deliver (the
	// same slice, a modified copy) or nil to drop it. Tests use it to
	// inject faults behind the AEAD.
	frameFilter func(t proto.FrameType, f []byte) []byte
}

// Dial connects to the server named in token with default settings.
func Dial(ctx context.Context, token *ConnectToken) (*Client, error) {
	var d Dialer
	return d.Dial(ctx, token)
}

// Client is one connection to a game server. Send, Receive, Stats and
// Close are safe for concurrent use.
type Client struct {
	cfg     Config
	handler ClientHandler
	conn    udp.BatchConn
	in      *inbox
	now     func() time.Time
	server  netip.AddrPort
	token   *ConnectToken

	mu       sync.Mutex // held by the loop while it works
	sess     *session
	accept   proto.AcceptBody
	tickRate int
	tickNum  uint32 // the server tick this client estimates
	tick0    time.Time
	out      []udp.Message
	outBufs  [][]byte
	dropped  [dropReasonCount]uint64
	err      error // set once the session ended
	closing  bool
	done     chan struct{}
	queue    []Message // for Receive when there is no handler
	queued   chan struct{}
	stopLoop chan struct{}
	game     *GameClient
	sentAt   time.Time // last handshake packet sent: the accept's RTT sample
	// attachErr: the game could not start on the accepted session.
	attachErr error
	filter    func(t proto.FrameType, f []byte) []byte
}

// Dial runs the handshake with the token's server addresses, in order,
// until one accepts, and starts the client's loop. ctx and
// Config.HandshakeTimeout bound each attempt.
func (d *Dialer) Dial(ctx context.Context, token *ConnectToken) (*Client, error) {
	cfg, err := d.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(token.ServerAddrs) == 0 {
		return nil, fmt.Errorf("%w: no server address", ErrBadToken)
	}
	var errs []error
	for _, a := range token.ServerAddrs {
		addr, err := resolveUDP(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := d.dialAddr(ctx, cfg, token, addr)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || d.Conn != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func resolveUDP(ctx context.Context, a string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(a); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("tickwire: server address %q: %w", a, err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("tickwire: resolve %q: %v", a, err)
	}
	p, err := net.LookupPort("udp", port)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("tickwire: server address %q: %w", a, err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(p)), nil
}

func (d *Dialer) dialAddr(ctx context.Context, cfg Config, token *ConnectToken, addr netip.AddrPort) (*Client, error) {
	conn := d.Conn
	if conn == nil {
		network := "udp4"
		if addr.Addr().Is6() {
			network = "udp6"
		}
		uc, err := udp.Listen(network, ":0", udp.Config{})
		if err != nil {
			return nil, err
		}
		conn = uc
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	c := &Client{
		cfg:      cfg,
		handler:  d.Handler,
		conn:     conn,
		now:      now,
		server:   addr,
		token:    token,
		done:     make(chan struct{}),
		queued:   make(chan struct{}, 1),
		stopLoop: make(chan struct{}),
		game:     d.Game,
		filter:   d.frameFilter,
	}
	c.in = newInbox(conn, now)
	go c.in.run()
	if err := c.handshake(ctx); err != nil {
		conn.Close()
		c.drainInbox()
		return nil, err
	}
	go c.loop()
	return c, nil
}

// handshake sends the connection request until a challenge arrives, then
// the response until the accept arrives.
func (c *Client) handshake(ctx context.Context) error {
	deadline := time.NewTimer(c.cfg.HandshakeTimeout)
	defer deadline.Stop()
	resend := time.NewTicker(handshakeResend)
	defer resend.Stop()

	req := c.token.Request()
	request, _ := req.Append(make([]byte, 0, proto.ConnectionRequestSize))
	aead, err := newAEAD(c.token.ClientKey[:])
	if err != nil {
		return err
	}
	var response []byte
	send := func() {
		p := request
		if response != nil {
			p = response
		}
		c.sentAt = c.now()
		c.conn.WriteBatch([]udp.Message{{Buf: p, Addr: c.server}})
	}
	send()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w: %v", ErrHandshakeTimeout, c.server)
		case <-resend.C:
			send()
		case <-c.in.done:
			if c.in.err != nil {
				return c.in.err
			}
			return net.ErrClosed
		case b := <-c.in.full:
			var err error
			var accepted bool
			for i := range b.n {
				m := &b.msgs[i]
				if m.Addr != c.server && netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()) != c.server {
					c.dropped[DropUnexpected]++
					continue
				}
				pkt := m.Buf[:m.N]
				t, _, perr := proto.ParsePrefix(pkt)
				if perr != nil {
					c.dropped[DropMalformed]++
					continue
				}
				switch t {
				case proto.PacketChallenge:
					if response != nil {
						continue
					}
					ch, _, perr := proto.ParseChallenge(pkt)
					if perr != nil {
						c.dropped[DropMalformed]++
						continue
					}
					r := proto.ChallengeResponse{Cookie: ch.Cookie}
					response, _ = r.Append(make([]byte, 0, proto.ChallengeResponseSize))
					tag := responseTag(aead, nil, response)
					copy(response[proto.PrefixSize+proto.CookieSize:], tag)
					send()
				case proto.PacketDenied:
					d, _, perr := proto.ParseDenied(pkt)
					if perr != nil {
						c.dropped[DropMalformed]++
						continue
					}
					err = &DeniedError{Addr: c.server, Reason: d.Reason}
				case proto.PacketAccept:
					if response == nil {
						continue
					}
					accepted = c.receiveAccept(pkt, b.at)
				default:
					c.dropped[DropUnexpected]++
				}
			}
			c.in.free <- b
			if accepted {
				return nil
			}
			if c.attachErr != nil {
				return c.attachErr
			}
			if err != nil {
				return err
			}
		}
	}
}

// receiveAccept opens the accept packet and creates the session.
func (c *Client) receiveAccept(pkt []byte, now time.Time) bool {
	h, _, err := proto.ParseHeader(pkt)
	if err != nil || !h.Sealed {
		c.dropped[DropMalformed]++
		return false
	}
	sess, err := newSession(h.ConnID, proto.MaxPacketSizeLimit, &c.token.ClientKey, &c.token.ServerKey, now)
	if err != nil {
		return false
	}
	pn, payload, drop := sess.open(pkt, &h)
	if drop >= 0 {
		c.dropped[drop]++
		return false
	}
	body, _, err := proto.ParseAcceptBody(payload)
	if err != nil || body.TickRate == 0 || int(body.MaxPacket) < minPacketSize || int(body.MaxPacket) > proto.MaxPacketSizeLimit {
		c.dropped[DropMalformed]++
		return false
	}
	if sess.maxPacket != int(body.MaxPacket) {
		// The reliable channel's MTU follows the server's packet size.
		if sess, err = newSession(h.ConnID, int(body.MaxPacket), &c.token.ClientKey, &c.token.ServerKey, now); err != nil {
			return false
		}
		sess.acks.ExpandSeq(h.Seq)
	}
	sess.acks.OnReceive(now, &h, pn, len(pkt), 0)
	c.sess = sess
	c.accept = body
	c.tickRate = int(body.TickRate)
	c.cfg.Heartbeat = time.Duration(body.HeartbeatMs) * time.Millisecond
	c.cfg.Timeout = time.Duration(body.TimeoutMs) * time.Millisecond
	c.tickNum = h.Tick
	c.tick0 = now
	if c.game != nil {
		if err := c.game.attach(c, now, h.Tick, now.Sub(c.sentAt)); err != nil {
			c.attachErr = err
			return false
		}
	}
	if c.filter != nil && c.sess.hooks != nil {
		c.sess.hooks = filteredHooks{c.sess.hooks, c.filter}
	}
	return true
}

// filteredHooks passes game frames through Dialer.frameFilter (tests).
type filteredHooks struct {
	frameHooks
	filter func(t proto.FrameType, f []byte) []byte
}

func (h filteredHooks) frame(t proto.FrameType, f []byte, hdr proto.Header) {
	if f = h.filter(t, f); f != nil {
		h.frameHooks.frame(t, f, hdr)
	}
}

// ConnID is the connection id the server assigned.
func (c *Client) ConnID() uint32 { return c.sess.id }

// ClientID is the client id from the token.
func (c *Client) ClientID() uint64 { return c.accept.ClientID }

// Players are the player slots this connection carries.
func (c *Client) Players() []uint16 { return c.accept.Players[:c.accept.PlayerCount] }

// TickRate is the server's tick rate.
func (c *Client) TickRate() int { return c.tickRate }

// Server is the address of the server the client is connected to.
func (c *Client) Server() netip.AddrPort { return c.server }

// LocalAddr is the client socket's address.
func (c *Client) LocalAddr() netip.AddrPort { return c.conn.LocalAddr() }

// Send queues a message for the server; it leaves with the next tick's
// packet. data is copied.
func (c *Client) Send(d Delivery, channel uint8, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(d, channel, false, 0, data)
}

// SendAt is Send with a tick postmark.
func (c *Client) SendAt(d Delivery, channel uint8, tick uint32, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(d, channel, true, tick, data)
}

func (c *Client) sendLocked(d Delivery, channel uint8, postmarked bool, tick uint32, data []byte) error {
	if c.err != nil || c.closing {
		return ErrNotConnected
	}
	return c.sess.send(d, channel, postmarked, tick, data)
}

// Receive returns the next message (with its own copy of the data), or an
// error once ctx is done or the session has ended and every message was
// read. With a Dialer.Handler set, messages go there instead.
func (c *Client) Receive(ctx context.Context) (Message, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue[0] = Message{}
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return m, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return Message{}, err
		}
		select {
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-c.queued:
		case <-c.done:
		}
	}
}

// message makes Client the session's message sink.
func (c *Client) message(m *Message) {
	if c.handler != nil {
		c.handler.Message(c, m)
		return
	}
	cp := *m
	cp.Data = append([]byte(nil), m.Data...)
	c.queue = append(c.queue, cp)
	select {
	case c.queued <- struct{}{}:
	default:
	}
}

// Done is closed when the session has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is nil while connected, then a *DisconnectError.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stats returns the connection's counters and estimates.
func (c *Client) Stats() ConnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.sess.acks.Stats()
	r := c.sess.rel.Stats()
	st := c.sess.stats
	return ConnStats{
		ConnID:        c.sess.id,
		ClientID:      c.accept.ClientID,
		GameID:        c.token.GameID,
		Players:       c.Players(),
		Addr:          c.server,
		Connected:     c.tick0,
		RTT:           a.RTT,
		Jitter:        a.RTTVar,
		Loss:          a.Loss,
		PacketsIn:     st.PacketsIn,
		PacketsOut:    st.PacketsOut,
		BytesIn:       st.BytesIn,
		BytesOut:      st.BytesOut,
		MessagesIn:    st.MessagesIn,
		MessagesOut:   st.MessagesOut,
		ReliableQueue: r.QueuedSegments,
		BadFrames:     st.BadFrames,
	}
}

// Dropped returns how many datagrams the client dropped, by reason (see
// DropReasonName).
func (c *Client) Dropped() [dropReasonCount]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// Close tells the server the client is leaving and closes the socket. It
// waits until queued reliable messages were sent once, at most one tick.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closing = true
	c.mu.Unlock()
	close(c.stopLoop)
	<-c.done
	return nil
}

// loop owns the session: it processes datagrams as they arrive and sends
// one packet per server tick.
func (c *Client) loop() {
	interval := time.Second / time.Duration(c.tickRate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case b := <-c.in.full:
			c.mu.Lock()
			c.receive(b)
			c.flushOut()
			ended := c.err != nil
			c.mu.Unlock()
			c.in.free <- b
			if ended {
				c.finish()
				return
			}
		case <-ticker.C:
			c.mu.Lock()
			now := c.now()
			if now.Sub(c.sess.lastRecv) > c.cfg.Timeout {
				c.end(proto.DisconnectTimeout, true, now)
				c.mu.Unlock()
				c.finish()
				return
			}
			c.tick(now)
			c.flushOut()
			c.mu.Unlock()
		case <-c.stopLoop:
			c.mu.Lock()
			now := c.now()
			c.tick(now) // one last packet with what was queued
			c.end(proto.DisconnectClosed, false, now)
			c.mu.Unlock()
			c.finish()
			return
		case <-c.in.done:
			c.mu.Lock()
			c.end(proto.DisconnectClosed, false, c.now())
			c.mu.Unlock()
			c.finish()
			return
		}
	}
}

// finish closes the socket and releases the reader.
func (c *Client) finish() {
	c.conn.Close()
	c.drainInbox()
	close(c.done)
}

func (c *Client) drainInbox() {
	for {
		select {
		case b := <-c.in.full:
			c.in.free <- b
			continue
		case <-c.in.done:
		}
		return
	}
}

// end records the end of the session; a local end tells the server.
func (c *Client) end(r proto.DisconnectReason, remote bool, now time.Time) {
	if c.err != nil {
		return
	}
	if !remote || r == proto.DisconnectTimeout {
		reason := [1]byte{byte(r)}
		for range 3 {
			c.queueOut(c.sess.appendPacket(c.nextOut(), now, proto.PacketDisconnect, c.fields(), fillNone, reason[:]))
		}
		c.flushOut()
	}
	c.err = &DisconnectError{Reason: r, Remote: remote}
	if c.handler != nil {
		c.handler.Disconnected(c, r)
	}
	select {
	case c.queued <- struct{}{}:
	default:
	}
}

// fields are the header fields of the client's packets.
func (c *Client) fields() packetFields {
	if c.game != nil {
		return c.game.fields()
	}
	return packetFields{tick: c.tickNum, interpFrom: c.tickNum, interpTo: c.tickNum}
}

// tick advances the tick estimate and sends this tick's packets.
func (c *Client) tick(now time.Time) {
	c.tickNum++
	if c.game != nil {
		c.game.advance(now)
	}
	c.sess.tick(now, c.fields(), c.cfg.Heartbeat, c.sess.hooks != nil, c.nextOut, c.queueOut)
}

func (c *Client) receive(b *rxBatch) {
	for i := range b.n {
		m := &b.msgs[i]
		if m.N > proto.MaxPacketSizeLimit {
			c.dropped[DropOversize]++
			continue
		}
		if netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()) != c.server {
			c.dropped[DropUnexpected]++
			continue
		}
		c.receiveDatagram(m.Buf[:m.N], b.at)
		if c.err != nil {
			return
		}
	}
}

func (c *Client) receiveDatagram(pkt []byte, at time.Time) {
	t, sealed, err := proto.ParsePrefix(pkt)
	if err != nil {
		if proto.IsVersionMismatch(err) {
			c.dropped[DropVersion]++
		} else {
			c.dropped[DropMalformed]++
		}
		return
	}
	switch t {
	case proto.PacketData, proto.PacketKeepAlive, proto.PacketDisconnect, proto.PacketAccept:
	default:
		c.dropped[DropUnexpected]++
		return
	}
	if !sealed {
		c.dropped[DropUnsealed]++
		return
	}
	h, _, err := proto.ParseHeader(pkt)
	if err != nil {
		c.dropped[DropMalformed]++
		return
	}
	if h.ConnID != c.sess.id {
		c.dropped[DropUnknownConn]++
		return
	}
	pn, payload, drop := c.sess.open(pkt, &h)
	if drop >= 0 {
		c.dropped[drop]++
		return
	}
	switch t {
	case proto.PacketAccept:
		// A repeated accept (we repeated our response): acks only.
		c.sess.acks.OnReceive(at, &h, pn, len(pkt), 0)
	case proto.PacketDisconnect:
		r, _, err := proto.ParseDisconnectReason(payload)
		if err != nil {
			r = proto.DisconnectProtocol
		}
		c.end(r, true, at)
	case proto.PacketKeepAlive:
		c.sess.receive(at, &h, pn, len(pkt), nil, c)
	case proto.PacketData:
		if err := c.sess.receive(at, &h, pn, len(pkt), payload, c); err != nil {
			c.dropped[DropMalformed]++
			return
		}
		if c.sess.acks.AcksPending() >= ackOnlyThreshold {
			c.queueOut(c.sess.appendPacket(c.nextOut(), at, proto.PacketData, c.fields(), fillData, nil))
		}
	}
}

func (c *Client) nextOut() []byte {
	i := len(c.out)
	if i == len(c.outBufs) {
		c.outBufs = append(c.outBufs, make([]byte, 0, proto.MaxPacketSizeLimit))
	}
	return c.outBufs[i][:0]
}

func (c *Client) queueOut(b []byte) {
	c.out = append(c.out, udp.Message{Buf: b, Addr: c.server})
}

func (c *Client) flushOut() {
	if len(c.out) == 0 {
		return
	}
	c.conn.WriteBatch(c.out)
	for i := range c.out {
		c.outBufs[i] = c.out[i].Buf[:0]
	}
	c.out = c.out[:0]
}
