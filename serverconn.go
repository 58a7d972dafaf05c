package tickwire

import (
	"net/netip"
	"time"

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

// Ticker is implemented by a Handler that wants to run every tick, before
// the server builds the tick's packets.
type Ticker interface {
	Tick(now time.Time, tick uint32)
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
	addr     netip.AddrPort
	sess     *session
	accept   []byte // sealed accept packet, resent while the client repeats its response

	connected  time.Time
	closed     bool
	ackQueued  bool
	migrations uint64
	// Value is for the application (the tick engine keeps its per-
	// connection state here).
	Value any
}

// ConnStats describes one connection.
type ConnStats struct {
	ConnID        uint32
	ClientID      uint64
	GameID        uint64
	Players       []uint16
	Addr          netip.AddrPort
	Connected     time.Time
	RTT           time.Duration // smoothed round-trip time
	Jitter        time.Duration // RTT variation
	Loss          float64       // fraction of our packets the peer did not acknowledge
	PacketsIn     uint64
	PacketsOut    uint64
	BytesIn       uint64
	BytesOut      uint64
	MessagesIn    uint64
	MessagesOut   uint64
	ReliableQueue int // reliable segments waiting to be sent or acknowledged
	BadFrames     uint64
	Migrations    uint64 // address changes (NAT rebinding)
}

// ID is the connection id (in every session header).
func (c *Conn) ID() uint32 { return c.id }

// ClientID is the client id from the connect token.
func (c *Conn) ClientID() uint64 { return c.clientID }

// GameID is the game the token admitted the client to.
func (c *Conn) GameID() uint64 { return c.gameID }

// Players are the player slots the connection carries.
func (c *Conn) Players() []uint16 { return c.players }

// UserData is the token's application data.
func (c *Conn) UserData() [proto.UserDataSize]byte { return c.userData }

// Addr is the client's current address.
func (c *Conn) Addr() netip.AddrPort { return c.addr }

// Send queues a message for the client; it leaves with the next tick's
// packets. data is copied.
func (c *Conn) Send(d Delivery, channel uint8, data []byte) error {
	if c.closed {
		return ErrNotConnected
	}
	return c.sess.send(d, channel, false, 0, data)
}

// SendAt is Send with a tick postmark: the receiver is told the tick at
// which the message takes effect.
func (c *Conn) SendAt(d Delivery, channel uint8, tick uint32, data []byte) error {
	if c.closed {
		return ErrNotConnected
	}
	return c.sess.send(d, channel, true, tick, data)
}

// Close disconnects the client with reason (DisconnectKicked if zero).
func (c *Conn) Close(reason proto.DisconnectReason) {
	if reason == 0 {
		reason = proto.DisconnectKicked
	}
	c.srv.disconnect(c, reason, c.srv.now(), true)
}

// Stats returns the connection's counters and estimates.
func (c *Conn) Stats() ConnStats {
	a := c.sess.acks.Stats()
	r := c.sess.rel.Stats()
	st := c.sess.stats
	return ConnStats{
		ConnID:        c.id,
		ClientID:      c.clientID,
		GameID:        c.gameID,
		Players:       c.players,
		Addr:          c.addr,
		Connected:     c.connected,
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
		Migrations:    c.migrations,
	}
}

// message makes Conn the session's message sink.
func (c *Conn) message(m *Message) { c.srv.handler.Message(c, m) }

func (s *Server) newConn(priv *proto.TokenPrivate, gameID uint64, addr netip.AddrPort, now time.Time) (*Conn, error) {
	id := s.newConnID()
	sess, err := newSession(id, s.cfg.MaxPacketSize, &priv.ServerToClientKey, &priv.ClientToServerKey, now)
	if err != nil {
		return nil, err
	}
	c := &Conn{
		srv:       s,
		id:        id,
		clientID:  priv.ClientID,
		gameID:    gameID,
		players:   append([]uint16(nil), priv.Players[:priv.PlayerCount]...),
		userData:  priv.UserData,
		addr:      addr,
		sess:      sess,
		connected: now,
	}
	s.conns[c.id] = c
	s.clients[c.clientID] = c
	s.games[gameID]++
	return c, nil
}

// appendAccept appends the sealed accept packet for c. The first call
// seals it (consuming packet number 0... of the session); repeats resend
// the same bytes, so a lost accept costs no state.
func (c *Conn) appendAccept(out []byte, now time.Time) []byte {
	if c.accept == nil {
		body := proto.AcceptBody{
			ClientID:    c.clientID,
			TickRate:    uint16(c.srv.cfg.TickRate),
			HeartbeatMs: uint16(c.srv.cfg.Heartbeat / time.Millisecond),
			TimeoutMs:   uint16(c.srv.cfg.Timeout / time.Millisecond),
			MaxPacket:   uint16(c.srv.cfg.MaxPacketSize),
			PlayerCount: uint8(len(c.players)),
		}
		copy(body.Players[:], c.players)
		b, _ := body.Append(nil)
		c.accept = c.sess.appendPacket(nil, now, proto.PacketAccept, c.fields(), fillNone, b)
	}
	return append(out, c.accept...)
}

// fields are the header fields of c's packets: the tick of its game's
// newest state when it plays one (see tickSource), else the server's.
func (c *Conn) fields() packetFields {
	t := c.srv.tickNum
	if ts, ok := c.sess.hooks.(tickSource); ok {
		t = ts.stateTick()
	}
	return packetFields{tick: t, interpFrom: t, interpTo: t}
}

// tickSource is implemented by frame hooks whose connection's packets
// carry their own tick numbers (a game's).
type tickSource interface {
	stateTick() uint32
}

// receiveSession authenticates a session packet and hands its payload to
// its connection.
func (s *Server) receiveSession(pkt []byte, addr netip.AddrPort, at time.Time) {
	h, _, err := proto.ParseHeader(pkt)
	if err != nil {
		s.stats.Dropped[DropMalformed]++
		return
	}
	c := s.conns[h.ConnID]
	if c == nil {
		s.stats.Dropped[DropUnknownConn]++
		return
	}
	pn, payload, drop := c.sess.open(pkt, &h)
	if drop >= 0 {
		s.stats.Dropped[drop]++
		return
	}
	if addr != c.addr && pn >= c.sess.acks.LargestReceived() {
		// NAT rebinding: an authenticated packet newer than any before it
		// moves the connection to its source address.
		s.cfg.Logger.Info("client moved", "conn", c.id, "from", c.addr, "to", addr)
		c.addr = addr
		c.migrations++
	}
	switch h.Type {
	case proto.PacketDisconnect:
		r, _, err := proto.ParseDisconnectReason(payload)
		if err != nil {
			r = proto.DisconnectProtocol
		}
		s.disconnect(c, r, at, false)
	case proto.PacketKeepAlive:
		if err := c.sess.receive(at, &h, pn, len(pkt), nil, c); err != nil {
			s.stats.Dropped[DropMalformed]++
		}
	case proto.PacketData:
		if err := c.sess.receive(at, &h, pn, len(pkt), payload, c); err != nil {
			s.stats.Dropped[DropMalformed]++
			return
		}
		if c.sess.acks.AcksPending() >= ackOnlyThreshold && !c.ackQueued {
			c.ackQueued = true
			s.ackDue = append(s.ackDue, c)
		}
	default:
		s.stats.Dropped[DropUnexpected]++
	}
}

// ackOnlyThreshold is how many packets may arrive between two of ours
// before we send an ack-only packet (half the ack field).
const ackOnlyThreshold = 16

// disconnect ends c. If notify, the client is told why (three times, as
// the notice itself may be lost).
func (s *Server) disconnect(c *Conn, r proto.DisconnectReason, now time.Time, notify bool) {
	if c.closed {
		return
	}
	c.closed = true
	if notify {
		reason := [1]byte{byte(r)}
		for range 3 {
			s.queue(c.sess.appendPacket(s.nextOut(), now, proto.PacketDisconnect, c.fields(), fillNone, reason[:]), c.addr)
		}
	}
	delete(s.conns, c.id)
	delete(s.clients, c.clientID)
	if s.games[c.gameID]--; s.games[c.gameID] <= 0 {
		delete(s.games, c.gameID)
	}
	s.stats.Disconnects[r]++
	s.cfg.Logger.Info("client disconnected", "conn", c.id, "client", c.clientID, "reason", r.String())
	s.handler.Disconnected(c, r)
}

// tick times out silent connections, runs the handler's tick and sends
// every connection's packets.
func (s *Server) tick(now time.Time) {
	s.tickNum++
	for _, c := range s.conns {
		if now.Sub(c.sess.lastRecv) > s.cfg.Timeout {
			s.disconnect(c, proto.DisconnectTimeout, now, true)
		}
	}
	if t, ok := s.handler.(Ticker); ok {
		t.Tick(now, s.tickNum)
	}
	for _, c := range s.conns {
		c.sess.tick(now, c.fields(), s.cfg.Heartbeat, c.sess.hooks != nil, s.nextOut, func(b []byte) { s.queue(b, c.addr) })
		c.ackQueued = false
	}
	s.ackDue = s.ackDue[:0]
}

// sendDueAcks sends an ack-only packet to every connection that received
// many packets since it last sent one.
func (s *Server) sendDueAcks(now time.Time) {
	for _, c := range s.ackDue {
		if !c.closed && c.ackQueued {
			s.queue(c.sess.appendPacket(s.nextOut(), now, proto.PacketData, c.fields(), fillData, nil), c.addr)
		}
		c.ackQueued = false
	}
	s.ackDue = s.ackDue[:0]
}
