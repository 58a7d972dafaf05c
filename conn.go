package tickwire

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// Handler receives a server's connection events. Its methods run on the
// server's loop goroutine, one at a time, with the server's state locked:
// they may call the Conn's methods and the Server's loop-side methods
// (Conn.Send, Conn.Close), and must not block. From other goroutines use
// Server.Do.
type Handler interface {
	// Connected is called once a client completed the handshake.
	Connected(c *Conn)
	// Message delivers one message; m.Data is valid only during the call.
	Message(c *Conn, m *Message)
	// Disconnected is called once per connection, with the reason.
	Disconnected(c *Conn, reason proto.DisconnectReason)
}

// Ticker is implemented by a server's Handler, or a client's
// FrameHandler, that wants to run every tick before the tick's packets
// are built. tick is the server's tick number, or on a client its
// estimate of the server's.
type Ticker interface {
	Tick(now time.Time, tick uint32)
}

// InterruptHandler is implemented by a server's Handler that wants to
// know when a connection goes silent and when it is heard again: c was
// silent for Config.Interrupt (interrupted true), or a packet came
// after that (false). The session lives on until Config.Timeout; a
// game holds or predicts the player meanwhile. Called on the server's
// loop, like Handler's methods, at most once per tick per connection.
type InterruptHandler interface {
	Interrupted(c *Conn, interrupted bool)
}

type nopHandler struct{}

func (nopHandler) Connected(*Conn)                            {}
func (nopHandler) Message(*Conn, *Message)                    {}
func (nopHandler) Disconnected(*Conn, proto.DisconnectReason) {}

// Conn is one client's connection on a server: one client id, one or more
// player slots (split-screen, bots), one session. Its methods may be
// called only from the server's loop goroutine (Handler callbacks, or a
// function passed to Server.Do).
type Conn struct {
	srv      *Server
	id       uint32
	clientID uint64
	gameID   uint64
	players  []uint16
	userData [proto.UserDataSize]byte
	out      connOutput // to the client's current address
	sess     *session.Session
	hs       session.Handshake // the handshake that created it
	handler  sessionHandler
	accept   []byte // sealed accept packet, resent while the client repeats its response
	refusal  []byte // Refuse: the denial detail (slot, text)

	connected   time.Time
	closed      bool
	interrupted bool      // silent for Config.Interrupt, not heard since
	rejoined    bool      // came back with its rejoin credential
	rejoinSent  time.Time // when its newest rejoin credential was sent
	rejoinUntil time.Time // ended without a leave: the end of its grace
	ackQueued   bool
	worker      int // the build worker building its packets (0 outside builds: the loop)
	// Value is the application's: the library never reads or writes it.
	Value any
}

// ConnStats describes one connection.
type ConnStats struct {
	ConnID      uint32
	ClientID    uint64
	GameID      uint64
	Players     []uint16
	Addr        netip.AddrPort
	Connected   time.Time
	RTT         time.Duration // smoothed round-trip time
	Jitter      time.Duration // RTT variation
	Loss        float64       // fraction of our packets the peer did not acknowledge
	PacketsIn   uint64
	PacketsOut  uint64
	BytesIn     uint64
	BytesOut    uint64
	MessagesIn  uint64
	MessagesOut uint64
	// MessagesDropped counts messages a Client dropped because the
	// application did not read them (Client.Receive's queue was full).
	MessagesDropped uint64
	ReliableQueue   int // reliable segments waiting to be sent or acknowledged
	// ReliableRepeats counts reliable data sent again as a copy on a
	// lossy path (before any retransmission was due).
	ReliableRepeats uint64
	// BadFrames counts frames dropped as malformed or refused by the
	// frame handler.
	BadFrames uint64
	// Interruptions counts the sessions a Client lost without a leave
	// while it could rejoin (Dialer.Rejoin), Rejoins those it came back
	// from into its slots. Client only.
	Interruptions, Rejoins uint64
	// AddressChanges counts address changes followed (NAT rebinding, or a
	// forged source address), PathValidations the new addresses that
	// answered their path challenge, PathBlocked the datagrams not sent
	// to an address that had not answered yet (beyond 3× what it sent).
	AddressChanges, PathValidations, PathBlocked uint64
}

// sessionConnStats fills the parts of ConnStats a session knows.
func sessionConnStats(s *session.Session) ConnStats {
	st := s.Stats()
	return ConnStats{
		ConnID:          s.ID(),
		RTT:             st.RTT,
		Jitter:          st.RTTVar,
		Loss:            st.Loss,
		PacketsIn:       st.PacketsIn,
		PacketsOut:      st.PacketsOut,
		BytesIn:         st.BytesIn,
		BytesOut:        st.BytesOut,
		MessagesIn:      st.MessagesIn,
		MessagesOut:     st.MessagesOut,
		ReliableQueue:   st.ReliableQueue,
		ReliableRepeats: st.ReliableRepeats,
		BadFrames:       st.BadFrames,
	}
}

// ID is the connection id (in every session header).
func (c *Conn) ID() uint32 { return c.id }

// ClientID is the client id from the connect token.
func (c *Conn) ClientID() uint64 { return c.clientID }

// GameID is the game the token admitted the client to.
func (c *Conn) GameID() uint64 { return c.gameID }

// Players are the player slots the connection carries.
func (c *Conn) Players() []uint16 { return c.players }

// Interrupted reports whether the client has been silent for
// Config.Interrupt and not heard since (InterruptHandler).
func (c *Conn) Interrupted() bool { return c.interrupted }

// UserData is the token's application data.
func (c *Conn) UserData() [proto.UserDataSize]byte { return c.userData }

// Addr is the client's current address.
func (c *Conn) Addr() netip.AddrPort { return c.sess.Addr() }

// Closed reports whether the connection has ended.
func (c *Conn) Closed() bool { return c.closed }

// Send queues a message for the client; it leaves with the next tick's
// packets. data is copied.
func (c *Conn) Send(d Delivery, channel uint8, data []byte) error {
	if c.closed {
		return ErrNotConnected
	}
	return c.sess.Send(d, channel, false, 0, data)
}

// SendAt is Send with a tick postmark: the receiver is told the tick at
// which the message takes effect.
func (c *Conn) SendAt(d Delivery, channel uint8, tick uint32, data []byte) error {
	if c.closed {
		return ErrNotConnected
	}
	return c.sess.Send(d, channel, true, tick, data)
}

// SendFrame queues one encoded proto frame on the reliable channel, for a
// FrameHandler on the client (full snapshots, control frames). frame is
// copied.
func (c *Conn) SendFrame(frame []byte) error {
	if c.closed {
		return ErrNotConnected
	}
	return c.sess.SendFrame(frame)
}

// Flush sends the connection's queued messages now rather than with the
// next tick's packet: Send then Flush is the no-delay send, for chat or
// RPC traffic whose latency matters more than packing (reliable data goes
// as soon as the reliable channel's 10 ms flush interval allows). Game
// frames stay tick-aligned. The datagrams leave when the server's loop
// next writes, at the end of the handler call or tick.
func (c *Conn) Flush() {
	if c.closed {
		return
	}
	now := c.srv.now()
	c.sess.Flush(now, c.ticks(), &c.out)
	if due, ok := c.sess.FlushDue(); ok {
		c.srv.flushLater(c, due.Sub(now))
	}
}

// Worker is the build worker writing the connection's packet now, from 0
// to Config.Workers-1 (0 on the loop): a FrameHandler's AppendFrames may
// keep scratch memory per worker and use this one's.
func (c *Conn) Worker() int { return c.worker }

// ReliableQueued is how many reliable segments wait to be sent or
// acknowledged: zero once everything sent reliably was acknowledged.
func (c *Conn) ReliableQueued() int { return c.sess.ReliableQueued() }

// SetFrameHandler attaches the protocol layer that reads and writes the
// connection's frames beyond messages (nil detaches it). While one is
// attached the connection sends a packet every tick (or on the ticks a
// Pacer says are due).
func (c *Conn) SetFrameHandler(h FrameHandler) { c.handler.setFrames(h) }

// Close disconnects the client with reason (DisconnectKicked if zero).
func (c *Conn) Close(reason proto.DisconnectReason) {
	if reason == 0 {
		reason = proto.DisconnectKicked
	}
	c.srv.disconnect(c, reason, c.srv.now(), true)
}

// Refuse is Close for a handler's Connected that cannot take the
// connection's players: the client, still in its handshake, is denied
// with proto.DenyJoinRefused and learns slot (0: the game as a whole)
// and text (the game's reason, cut to proto.MaxDenyText bytes) — sealed,
// so only it can read them. After Connected it is Close(DisconnectKicked).
func (c *Conn) Refuse(slot uint16, text string) {
	if len(text) > proto.MaxDenyText {
		text = text[:proto.MaxDenyText]
	}
	c.refusal = binary.LittleEndian.AppendUint16(make([]byte, 0, 2+len(text)), slot)
	c.refusal = append(c.refusal, text...)
	c.Close(proto.DisconnectKicked)
}

// Stats returns the connection's counters and estimates.
func (c *Conn) Stats() ConnStats {
	st := sessionConnStats(c.sess)
	st.ClientID = c.clientID
	st.GameID = c.gameID
	st.Players = c.players
	st.Addr = c.sess.Addr()
	st.Connected = c.connected
	ps := c.sess.PathStats()
	st.AddressChanges, st.PathValidations, st.PathBlocked = ps.Moves, ps.Validations, ps.Blocked
	return st
}

// ticks are the header ticks of c's packets: its frame handler's (a
// game's newest state), else the server's tick.
func (c *Conn) ticks() Ticks { return c.handler.ticks(c.srv.tickNum) }

// appendAccept appends the sealed accept packet for c. The first call
// seals it (consuming the session's first packet number); repeats resend
// the same bytes, so a lost accept costs no state.
func (c *Conn) appendAccept(out []byte, now time.Time) []byte {
	if c.accept == nil {
		cfg := &c.srv.cfg
		body := proto.AcceptBody{
			ClientID:    c.clientID,
			TickRate:    uint16(cfg.TickRate),
			HeartbeatMs: uint16(cfg.Heartbeat / time.Millisecond),
			TimeoutMs:   uint16(cfg.Timeout / time.Millisecond),
			MaxPacket:   uint16(cfg.MaxPacketSize),
			PlayerCount: uint8(len(c.players)),
		}
		copy(body.Players[:], c.players)
		b, _ := body.Append(nil)
		c.accept = c.sess.AppendControl(nil, now, proto.PacketAccept, c.ticks(), b)
	}
	return append(out, c.accept...)
}
