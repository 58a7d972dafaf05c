package tickwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tickwire/tickwire/internal/session"
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
	// Slot and Text, for proto.DenyJoinRefused: the player slot the game
	// refused (0: the game itself could not start) and the game's reason
	// (at most proto.MaxDenyText bytes).
	Slot uint16
	Text string
}

func (e *DeniedError) Error() string {
	if e.Reason == proto.DenyJoinRefused {
		if e.Slot == 0 {
			return fmt.Sprintf("tickwire: %v refused the game: %s", e.Addr, e.Text)
		}
		return fmt.Sprintf("tickwire: %v refused player %d: %s", e.Addr, e.Slot, e.Text)
	}
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
	// tests, or one whose NAT mapping was learned and punched: package
	// rendezvous); it is closed with the client, or when the Dial fails.
	// Every server address is tried on it in turn. Its address family
	// must reach the server addresses.
	Conn udp.BatchConn
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Resolve, if set, turns each of the token's server addresses
	// ("host:port") into the address to send to, instead of a DNS
	// lookup: a Conn that is no socket (a browser's WebTransport
	// session, which has one peer) names that peer whatever the token
	// says.
	Resolve func(ctx context.Context, addr string) (netip.AddrPort, error)
	// Game, if set, plays a game on the connection (a *game.Client, or
	// any other ClientLayer): it is attached once the server accepted,
	// before Dial returns, and consumes the server's frames beyond
	// messages.
	Game ClientLayer

	// Group, if set, runs the client on that ClientGroup's goroutine and
	// socket, with many others, instead of goroutines and a socket of its
	// own.
	Group *ClientGroup

	// Rejoin, if set, makes the client come back by itself into its
	// slots when its session is lost without a leave (see Rejoin).
	Rejoin *Rejoin
}

// ClientLayer is a protocol layer that starts on a client's accepted
// session: Attach returns the FrameHandler that reads and writes the
// connection's frames from then on, or an error that fails the Dial.
// game.Client is one.
type ClientLayer interface {
	Attach(c *Client, a Accepted) (FrameHandler, error)
}

// Accepted describes the server's accept, for ClientLayer.Attach.
type Accepted struct {
	Time       time.Time     // when the accept arrived
	ServerTick uint32        // the server's tick in the accept's header
	RTT        time.Duration // from the last handshake packet sent to the accept
	Players    []uint16      // the connection's player slots (Client.Players)
	TickRate   int           // the server's tick rate (Client.TickRate)
	// SendFrame queues one encoded proto frame (copied) on the reliable
	// channel to the server, like Client.SendFrame, for code already on
	// the client's loop: the layer's FrameHandler methods and functions
	// passed to Client.Do, where Client.SendFrame would wait for the
	// loop forever.
	SendFrame func(frame []byte) error
	// ReliableQueued is Conn.ReliableQueued's count on the client, for
	// code on the client's loop: how many reliable segments wait to be
	// sent or acknowledged (a layer that sends much paces itself by it).
	ReliableQueued func() int
	// Rejoined: the session continues one that was lost, in the same
	// player slots (Dialer.Rejoin, or a Dial of Client.RejoinToken); the
	// server sends the game as it stands.
	Rejoined bool
}

// Dial connects to the server named in token with default settings.
func Dial(ctx context.Context, token *ConnectToken) (*Client, error) {
	var d Dialer
	return d.Dial(ctx, token)
}

// Client is one connection to a game server. Send, Receive, Stats, Do
// and Close are safe for concurrent use.
type Client struct {
	cfg     Config
	handler ClientHandler
	conn    udp.BatchConn
	in      *udp.ReadLoop
	now     func() time.Time
	server  netip.AddrPort
	token   *ConnectToken

	mu          sync.Mutex // held by the loop while it works
	sess        *session.Session
	sh          sessionHandler
	accept      proto.AcceptBody
	tickRate    int
	tickNum     uint32 // the server tick this client estimates
	stall       loopStall
	tick0       time.Time
	out         outQueue
	peer        peerOutput
	dropped     DropCounts
	err         error // set once the session ended
	closing     bool
	closeReason proto.DisconnectReason // what Close tells the server
	done        chan struct{}
	queue       []Message // for Receive when there is no handler
	// queueBytes is the data queue holds; queueDropped counts messages
	// dropped because it was full.
	queueBytes   int
	queueDropped uint64
	queued       chan struct{}
	stopLoop     chan struct{}
	flushReq     chan time.Duration // a no-delay Flush wants another flush this much later
	layer        ClientLayer

	ownTimeout   time.Duration // Dialer.Config.Timeout as given (0: the server's)
	rejoinTok    *ConnectToken // the newest rejoin credential the server sent
	rejoinPolicy *Rejoin       // Dialer.Rejoin with its defaults
	rejoining    bool          // the session was lost; a new one is being dialled
	lost         proto.DisconnectReason
	stats        struct{ Interruptions, Rejoins uint64 }
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
	resolve := d.Resolve
	if resolve == nil {
		resolve = resolveUDP
	}
	if d.Conn != nil && d.Group == nil {
		return d.dialOn(ctx, cfg, token, resolve)
	}
	for _, a := range token.ServerAddrs {
		addr, err := resolve(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := d.dialAddr(ctx, cfg, token, addr)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// dialOn runs the handshake with each of the token's server addresses
// in turn on the caller's socket (Dialer.Conn), one reader for all the
// attempts, and closes the socket if none accepts.
func (d *Dialer) dialOn(ctx context.Context, cfg Config, token *ConnectToken, resolve func(context.Context, string) (netip.AddrPort, error)) (*Client, error) {
	var c *Client
	var errs []error
	for _, a := range token.ServerAddrs {
		addr, err := resolve(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c == nil {
			if c, err = d.newClient(cfg, token, d.Conn, addr); err != nil {
				return nil, err
			}
			c.startReading()
		}
		c.target(addr)
		err = c.handshakeWith(ctx, token)
		if err == nil {
			go c.loop()
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || c.sess != nil || errors.Is(err, net.ErrClosed) {
			break
		}
	}
	d.Conn.Close()
	if c != nil {
		c.in.Drain()
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
	switch {
	case d.Group != nil:
		if conn != nil {
			return nil, errors.New("tickwire: Dialer.Conn and Dialer.Group: give one (a group's clients share its socket)")
		}
		conn = d.Group.clientConn()
	case conn == nil:
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
	c, err := d.newClient(cfg, token, conn, addr)
	if err != nil {
		return nil, err
	}
	if d.Group != nil {
		return d.Group.dial(ctx, c)
	}
	c.startReading()
	if err := c.handshakeWith(ctx, token); err != nil {
		conn.Close()
		c.in.Drain()
		return nil, err
	}
	go c.loop()
	return c, nil
}

// target points the client's handshake and packets at the server
// address addr.
func (c *Client) target(addr netip.AddrPort) {
	c.server = addr
	c.peer = peerOutput{q: &c.out, addr: addr}
}

// startReading starts the reader of the client's socket.
func (c *Client) startReading() {
	c.in = udp.NewReadLoop(c.conn, udp.ReadLoopConfig{BufSize: proto.MaxPacketSizeLimit + 1, Now: c.now})
	go c.in.Run()
}

// newClient makes the client of a Dial of token to addr on conn.
func (d *Dialer) newClient(cfg Config, token *ConnectToken, conn udp.BatchConn, addr netip.AddrPort) (*Client, error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	c := &Client{
		cfg:      cfg,
		handler:  d.Handler,
		conn:     conn,
		now:      now,
		token:    token,
		done:     make(chan struct{}),
		queued:   make(chan struct{}, 1),
		stopLoop: make(chan struct{}),
		flushReq: make(chan time.Duration, 1),
		layer:    d.Game,
		out:      outQueue{conn: conn, log: cfg.Logger},

		ownTimeout: d.Config.Timeout,
	}
	c.target(addr)
	c.sh.message = c.message
	c.sh.rejoin = c.takeRejoin
	if d.Rejoin != nil {
		p, err := d.Rejoin.withDefaults()
		if err != nil {
			return nil, err
		}
		c.rejoinPolicy = &p
	}
	return c, nil
}

// handshakeWith sends the connection request of token until a challenge
// arrives, then the response until the accept arrives.
func (c *Client) handshakeWith(ctx context.Context, token *ConnectToken) error {
	deadline := time.NewTimer(c.cfg.HandshakeTimeout)
	defer deadline.Stop()
	resend := time.NewTicker(handshakeResend)
	defer resend.Stop()

	req := token.Request()
	hs, err := session.NewInitiator(&req, &token.ClientKey, &token.ServerKey)
	if err != nil {
		return err
	}
	rejoined := c.sess != nil || token.rejoin
	var sentAt time.Time // last handshake packet sent: the accept's RTT sample
	send := func() {
		sentAt = c.now()
		c.out.queue(append(c.out.next(), hs.Packet()...), c.server)
		c.out.flush()
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
		case <-c.in.Done():
			if err := c.in.Err(); err != nil {
				return err
			}
			return net.ErrClosed
		case b := <-c.in.Batches():
			w, at, err := c.handshakeBatch(b, hs, send)
			c.in.Release(b)
			if err != nil {
				return err
			}
			if w.Session != nil {
				return c.start(token, w, at, sentAt, rejoined)
			}
		}
	}
}

// handshakeBatch handles one batch of datagrams during the handshake: it
// answers a challenge, fails on a denial, and returns the session an
// accept created.
func (c *Client) handshakeBatch(b *udp.Batch, hs *session.Initiator, send func()) (session.Welcome, time.Time, error) {
	var denied error
	for i := range b.N {
		m := &b.Msgs[i]
		if netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()) != c.server {
			c.dropped[DropUnexpected]++
			continue
		}
		pkt := m.Buf[:m.N]
		t, _, err := proto.ParsePrefix(pkt)
		if proto.IsVersionMismatch(err) && len(pkt) >= proto.PrefixSize && proto.PacketType(pkt[3]) == proto.PacketDenied {
			// A server of another version says so in its own version.
			t, err = proto.PacketDenied, nil
		}
		if err != nil {
			c.dropped[DropMalformed]++
			continue
		}
		switch t {
		case proto.PacketChallenge:
			if hs.Challenged() {
				continue
			}
			if err := hs.Challenge(pkt); err != nil {
				c.dropped[DropMalformed]++
				continue
			}
			send()
		case proto.PacketDenied:
			reason, honour, detail, err := hs.Denied(pkt)
			switch {
			case err != nil:
				c.dropped[DropMalformed]++
			case !honour:
				// Forged, or a plaintext denial after the server
				// challenged us (it seals its denials from then on).
				c.dropped[DropAuth]++
			default:
				de := &DeniedError{Addr: c.server, Reason: reason}
				if len(detail) >= 2 {
					de.Slot, de.Text = binary.LittleEndian.Uint16(detail), strings.ToValidUTF8(string(detail[2:]), "?")
				}
				denied = de
			}
		case proto.PacketAccept:
			if !hs.Challenged() {
				continue
			}
			w, drop, ok := hs.Accept(pkt, b.At, session.Config{Handler: &c.sh, Timeout: c.ownTimeout})
			if !ok {
				c.dropped[drop]++
				continue
			}
			return w, b.At, nil
		default:
			c.dropped[DropUnexpected]++
		}
	}
	return session.Welcome{}, time.Time{}, denied
}

// start takes the session the accept of token created and attaches the
// game; rejoined: the session replaces one that was lost.
func (c *Client) start(token *ConnectToken, w session.Welcome, now, sentAt time.Time, rejoined bool) error {
	had := c.sess != nil // a session lost: the new one must carry its players
	if had && (w.Body.ClientID != c.accept.ClientID || w.Body.PlayerCount != c.accept.PlayerCount || w.Body.Players != c.accept.Players) {
		return errors.New("tickwire: the rejoined session carries other players")
	}
	c.mu.Lock()
	c.token = token
	c.accept = w.Body
	c.tickRate = int(w.Body.TickRate)
	c.tickNum = w.Tick
	c.tick0 = now
	c.sess = w.Session
	c.mu.Unlock()
	if c.layer != nil {
		fh, err := c.layer.Attach(c, Accepted{Time: now, ServerTick: c.tickNum, RTT: now.Sub(sentAt),
			Players: c.Players(), TickRate: c.TickRate(), SendFrame: c.sendFrameLoop,
			ReliableQueued: c.sess.ReliableQueued, Rejoined: rejoined})
		if err != nil {
			if !had {
				c.sess = nil
			}
			return err
		}
		c.sh.setFrames(fh)
	}
	return nil
}

// ConnID is the connection id the server assigned.
func (c *Client) ConnID() uint32 { return c.sess.ID() }

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

// SendAt is Send with a tick postmark. A server's game runs the message
// as the connection's first player's; see SendPlayerAt for the others.
func (c *Client) SendAt(d Delivery, channel uint8, tick uint32, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendLocked(d, channel, true, tick, data)
}

// SendPlayerAt is SendAt on behalf of player, one of the connection's
// players (Players): the message names it (proto.MessageFrame.Player),
// and a server's game.Host runs it as that player's. For the first player
// it sends exactly what SendAt does.
func (c *Client) SendPlayerAt(player uint16, d Delivery, channel uint8, tick uint32, data []byte) error {
	players := c.Players()
	i := slices.Index(players, player)
	if i < 0 {
		return fmt.Errorf("tickwire: player %d is not on this connection (%v)", player, players)
	}
	if i == 0 {
		player = 0 // the default: the layout older builds read
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.closing {
		return ErrNotConnected
	}
	if c.rejoining {
		return ErrRejoining
	}
	return c.sess.SendMessage(d, proto.MessageFrame{Channel: channel, Postmarked: true, Tick: tick, Player: player, Data: data})
}

func (c *Client) sendLocked(d Delivery, channel uint8, postmarked bool, tick uint32, data []byte) error {
	if c.err != nil || c.closing {
		return ErrNotConnected
	}
	if c.rejoining {
		return ErrRejoining
	}
	return c.sess.Send(d, channel, postmarked, tick, data)
}

// SendFrame queues one encoded proto frame on the reliable channel to the
// server, for a client-side protocol layer (the peer message stream of
// host migration). frame is copied. Do not call it from a handler
// callback.
func (c *Client) SendFrame(frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.closing {
		return ErrNotConnected
	}
	if c.rejoining {
		return ErrRejoining
	}
	return c.sess.SendFrame(frame)
}

// sendFrameLoop is SendFrame for code already on the client's loop (a
// FrameHandler, or a function passed to Do).
func (c *Client) sendFrameLoop(frame []byte) error {
	if c.err != nil || c.closing {
		return ErrNotConnected
	}
	if c.rejoining {
		return ErrRejoining
	}
	return c.sess.SendFrame(frame)
}

// Flush sends the client's queued messages now rather than with the next
// tick's packet: Send then Flush is the no-delay send, for chat or RPC
// traffic whose latency matters more than packing (reliable data goes as
// soon as the reliable channel's 10 ms flush interval allows). Game
// frames stay tick-aligned. Do not call it from a handler callback.
func (c *Client) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.closing {
		return
	}
	c.flushLocked()
}

// flushLocked sends what is queued now and, when the reliable channel
// holds messages until its next flush, asks the loop to flush again then.
func (c *Client) flushLocked() {
	now := c.now()
	c.sess.Flush(now, c.ticks(), &c.peer)
	c.out.flush()
	if due, ok := c.sess.FlushDue(); ok {
		select {
		case c.flushReq <- due.Sub(now):
		default:
		}
	}
}

// Do runs f serialised with the client's loop: between two of its
// frames, never during a handler callback. Do not call it from a
// ClientHandler or FrameHandler method (the loop already holds the
// client there).
func (c *Client) Do(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// Receive returns the next message (with its own copy of the data), or an
// error once ctx is done or the session has ended and every message was
// read. With a Dialer.Handler set, messages go there instead. Messages
// that arrive while 65,536 messages or 8 MiB wait unread are dropped and
// counted (ConnStats.MessagesDropped).
func (c *Client) Receive(ctx context.Context) (Message, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue[0] = Message{}
			c.queue = c.queue[1:]
			c.queueBytes -= len(m.Data)
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

// Bounds of the queue Receive reads when there is no handler: a peer
// cannot make an application that does not read grow without bound.
const (
	maxReceiveQueue      = 1 << 16 // messages
	maxReceiveQueueBytes = 8 << 20
)

// message makes Client the session's message sink.
func (c *Client) message(m *Message) {
	if c.handler != nil {
		c.handler.Message(c, m)
		return
	}
	if len(c.queue) >= maxReceiveQueue || c.queueBytes+len(m.Data) > maxReceiveQueueBytes {
		if c.queueDropped == 0 {
			c.cfg.Logger.Warn("receive queue full: dropping messages until Receive reads", "messages", len(c.queue), "bytes", c.queueBytes)
		}
		c.queueDropped++
		return
	}
	c.queueBytes += len(m.Data)
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
	st := sessionConnStats(c.sess)
	st.ClientID = c.accept.ClientID
	st.GameID = c.token.GameID
	st.Players = c.Players()
	st.Addr = c.server
	st.Connected = c.tick0
	st.MessagesDropped = c.queueDropped
	st.Interruptions, st.Rejoins = c.stats.Interruptions, c.stats.Rejoins
	return st
}

// Dropped returns how many datagrams the client dropped, by reason.
func (c *Client) Dropped() DropCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// SendErrors counts failed socket writes.
func (c *Client) SendErrors() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.errors
}

// Close tells the server the client is leaving and closes the socket. It
// waits until queued reliable messages were sent once, at most one tick.
func (c *Client) Close() error { return c.CloseWith(proto.DisconnectClosed) }

// CloseWith is Close telling the server reason r (a player that follows
// a successor leaves its old host with proto.DisconnectHostMigrate).
func (c *Client) CloseWith(r proto.DisconnectReason) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closing = true
	c.closeReason = r
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
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	for {
		select {
		case d := <-c.flushReq:
			flush.Reset(max(d, 0))
		case <-flush.C:
			c.mu.Lock()
			if c.err == nil && !c.closing {
				c.flushLocked()
			}
			c.mu.Unlock()
		case b := <-c.in.Batches():
			c.mu.Lock()
			c.receive(b)
			c.out.flush()
			lost := c.lost
			c.lost = 0
			c.mu.Unlock()
			c.in.Release(b)
			if lost != 0 {
				if c.rejoin(lost, c.now(), c.handshakeWith) {
					continue
				}
				c.endLost(lost)
			}
			c.mu.Lock()
			ended := c.err != nil
			c.mu.Unlock()
			if ended {
				c.finish()
				return
			}
		case <-ticker.C:
			c.mu.Lock()
			now := c.now()
			if d := c.stall.since(now, interval); d > 0 {
				c.sess.Excuse(d) // the client's loop stalled, not the server
			}
			if c.sess.TimedOut(now) {
				c.mu.Unlock()
				if c.rejoin(proto.DisconnectTimeout, now, c.handshakeWith) {
					continue
				}
				c.endLost(proto.DisconnectTimeout)
				c.finish()
				return
			}
			c.tick(now)
			c.out.flush()
			c.mu.Unlock()
		case <-c.stopLoop:
			c.mu.Lock()
			now := c.now()
			c.tick(now) // one last packet with what was queued
			c.end(c.closeReason, false, now)
			c.mu.Unlock()
			c.finish()
			return
		case <-c.in.Done():
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
	if c.in != nil { // nil on a ClientGroup
		c.in.Drain()
	}
	close(c.done)
}

// end records the end of the session; a local end tells the server.
func (c *Client) end(r proto.DisconnectReason, remote bool, now time.Time) {
	if c.err != nil {
		return
	}
	if !remote || r == proto.DisconnectTimeout {
		reason := [1]byte{byte(r)}
		for range 3 {
			c.peer.Emit(c.sess.AppendControl(c.out.next(), now, proto.PacketDisconnect, c.ticks(), reason[:]))
		}
		c.out.flush()
	}
	c.err = &DisconnectError{Reason: r, Remote: remote}
	if e, ok := c.sh.frames.(Ender); ok {
		e.Ended(now, r)
	}
	if c.handler != nil {
		c.handler.Disconnected(c, r)
	}
	select {
	case c.queued <- struct{}{}:
	default:
	}
}

// ticks are the header ticks of the client's packets: the game's
// predicted tick and view, else the client's estimate of the server tick.
func (c *Client) ticks() Ticks { return c.sh.ticks(c.tickNum) }

// tick advances the tick estimate and sends this tick's packets.
func (c *Client) tick(now time.Time) {
	c.tickNum++
	if t, ok := c.sh.frames.(Ticker); ok {
		t.Tick(now, c.tickNum)
	}
	c.sess.Tick(now, c.ticks(), c.sh.sendMode(c.tickNum), &c.peer)
}

func (c *Client) receive(b *udp.Batch) {
	for i := range b.N {
		m := &b.Msgs[i]
		if m.N > proto.MaxPacketSizeLimit {
			c.dropped[DropOversize]++
			continue
		}
		if netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()) != c.server {
			c.dropped[DropUnexpected]++
			continue
		}
		c.receiveDatagram(m.Buf[:m.N], b.At)
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
	if h.ConnID != c.sess.ID() {
		c.dropped[DropUnknownConn]++
		return
	}
	pn, payload, drop, ok := c.sess.Open(pkt, &h)
	if !ok {
		c.dropped[drop]++
		return
	}
	switch t {
	case proto.PacketAccept:
		// A repeated accept (we repeated our response): acks only.
		c.sess.ReceiveAcks(at, &h, pn, len(pkt))
	case proto.PacketDisconnect:
		r, _, err := proto.ParseDisconnectReason(payload)
		if err != nil {
			r = proto.DisconnectProtocol
		}
		if r == proto.DisconnectTimeout && c.canRejoin() {
			// The server timed us out: a session lost without a leave.
			c.lost = r // the loop rejoins, holding no lock
			return
		}
		c.end(r, true, at)
	case proto.PacketKeepAlive:
		c.sess.Receive(at, &h, pn, len(pkt), nil)
	case proto.PacketData:
		if err := c.sess.Receive(at, &h, pn, len(pkt), payload); err != nil {
			c.dropped[DropMalformed]++
			return
		}
		if c.sess.AckDue() {
			c.peer.Emit(c.sess.AppendAckPacket(c.out.next(), at, c.ticks()))
		}
	}
}
