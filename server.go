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

// ErrClosed is returned by a Server or Client that has been closed.
var ErrClosed = errors.New("tickwire: closed")

// Server accepts clients holding connect tokens minted with its key and
// runs their connections: one goroutine reads datagrams in batches, one
// loop goroutine owns every connection, processes packets as they arrive
// and sends each connection's packet every tick.
type Server struct {
	cfg  Config
	key  Key
	hs   *serverHandshake
	conn udp.BatchConn
	in   *inbox
	now  func() time.Time

	mu      sync.Mutex // guards everything below; held by the loop while it works
	handler Handler
	conns   map[uint32]*Conn
	clients map[uint64]*Conn // by client id
	games   map[uint64]int   // game id -> connections
	out     []udp.Message    // datagrams queued for the next WriteBatch
	outBufs [][]byte         // their buffers, reused
	stats   ServerStats
	closed  bool
	done    chan struct{}
	idSeed  uint64
	tickNum uint32
	ackDue  []*Conn // connections owing an ack-only packet after a batch
}

// ServerStats counts what a server has done since it started.
type ServerStats struct {
	Connections      int    // open now
	Accepted         uint64 // connections created
	Disconnects      [proto.DisconnectHostMigrate + 1]uint64
	PacketsIn        uint64 // datagrams received
	PacketsOut       uint64 // datagrams sent
	BytesIn          uint64
	BytesOut         uint64
	Dropped          [dropReasonCount]uint64 // datagrams dropped, by reason
	HandshakeIn      uint64                  // handshake bytes received
	HandshakeOut     uint64                  // handshake bytes sent
	ChallengesSent   uint64
	HandshakeDenied  uint64
	SendErrors       uint64
	Ticks            uint64
	LastTickDuration time.Duration
}

// Reasons a server or client drops a datagram.
const (
	DropMalformed   = iota // not a valid tickwire packet
	DropVersion            // another protocol version
	DropUnknownConn        // session packet for no connection
	DropReplay             // duplicate or older than the replay window
	DropAuth               // failed authentication (forged, altered, wrong key)
	DropUnexpected         // valid but not expected here (e.g. a challenge sent to a server)
	DropOversize           // larger than the packet size limit
	DropUnsealed           // session packet without encryption
	dropReasonCount
)

// DropReasonName names a drop reason for logs and metrics.
func DropReasonName(r int) string {
	return [...]string{"malformed", "version", "unknown_conn", "replay", "auth", "unexpected", "oversize", "unsealed"}[r]
}

// NewServer creates a server that admits holders of tokens sealed with key.
func NewServer(key Key, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hs, err := newServerHandshake(key, cfg.HandshakeTimeout)
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:     cfg,
		key:     key,
		hs:      hs,
		now:     time.Now,
		handler: nopHandler{},
		conns:   make(map[uint32]*Conn),
		clients: make(map[uint64]*Conn),
		games:   make(map[uint64]int),
		done:    make(chan struct{}),
	}, nil
}

// Handle sets the handler of connection events. Call it before Serve.
func (s *Server) Handle(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		h = nopHandler{}
	}
	s.handler = h
}

// Do runs f on the server's state, serialised with the loop: inside f the
// loop-side methods (Conn.Send, Conn.Close, Server.Conn) are safe to call.
func (s *Server) Do(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// Conn returns the open connection with the given id, or nil. Call it
// from the loop (a Handler method or Server.Do).
func (s *Server) Conn(id uint32) *Conn { return s.conns[id] }

// Each calls f for every open connection. Call it from the loop.
func (s *Server) Each(f func(c *Conn)) {
	for _, c := range s.conns {
		f(c)
	}
}

// Tick is the server's current tick number. Call it from the loop.
func (s *Server) Tick() uint32 { return s.tickNum }

// ListenAndServe opens a DSCP-marked UDP socket on addr and serves on it
// until Close.
func (s *Server) ListenAndServe(addr string) error {
	c, err := udp.Listen("udp", addr, udp.Config{})
	if err != nil {
		return err
	}
	return s.Serve(c)
}

// Serve runs the server on conn until Close; it closes conn when it
// returns.
func (s *Server) Serve(conn udp.BatchConn) error {
	s.mu.Lock()
	if s.closed || s.conn != nil {
		s.mu.Unlock()
		conn.Close()
		return ErrClosed
	}
	s.conn = conn
	s.in = newInbox(conn, s.now)
	s.mu.Unlock()
	go s.in.run()
	return s.loop()
}

// Addr is the address the server is serving on.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return netip.AddrPort{}
	}
	return s.conn.LocalAddr()
}

// Close tells every client the server is shutting down, stops the loop and
// closes the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	serving := s.conn != nil
	s.mu.Unlock()
	if serving {
		<-s.done
	}
	return nil
}

// Shutdown is Close bounded by ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	c := make(chan error, 1)
	go func() { c <- s.Close() }()
	select {
	case err := <-c:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Connections = len(s.conns)
	st.HandshakeIn = s.hs.stats.BytesIn
	st.HandshakeOut = s.hs.stats.BytesOut
	st.ChallengesSent = s.hs.stats.Challenges
	st.Dropped[DropMalformed] += s.hs.stats.Malformed
	for _, n := range s.hs.stats.Denied {
		st.HandshakeDenied += n
	}
	return st
}

// loop is the server's only state-owning goroutine.
func (s *Server) loop() error {
	defer close(s.done)
	interval := time.Second / time.Duration(s.cfg.TickRate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var readErr error
	for {
		select {
		case b := <-s.in.full:
			s.mu.Lock()
			s.receive(b)
			s.sendDueAcks(b.at)
			s.flushOut()
			s.mu.Unlock()
			s.in.free <- b
		case <-ticker.C:
			s.mu.Lock()
			if s.closed {
				s.shutdown()
				s.mu.Unlock()
				return nil
			}
			start := s.now()
			s.tick(start)
			s.flushOut()
			s.stats.Ticks++
			s.stats.LastTickDuration = s.now().Sub(start)
			if s.cfg.ObserveTick != nil {
				s.cfg.ObserveTick(s.tickNum, s.stats.LastTickDuration)
			}
			s.mu.Unlock()
		case <-s.in.done:
			readErr = s.in.err
			s.mu.Lock()
			s.closed = true
			s.shutdown()
			s.mu.Unlock()
			if readErr != nil {
				return fmt.Errorf("tickwire: server read: %w", readErr)
			}
			return nil
		}
	}
}

// shutdown disconnects every client and closes the socket. Called with mu
// held, once.
func (s *Server) shutdown() {
	now := s.now()
	for _, c := range s.conns {
		s.disconnect(c, proto.DisconnectShutdown, now, true)
	}
	s.flushOut()
	s.conn.Close()
	// Let the reader see the closed socket: hand back every batch it may
	// be waiting for.
	for {
		select {
		case b := <-s.in.full:
			s.in.free <- b
			continue
		case <-s.in.done:
		}
		break
	}
}

// receive handles one batch of datagrams.
func (s *Server) receive(b *rxBatch) {
	for i := range b.n {
		m := &b.msgs[i]
		s.stats.PacketsIn++
		s.stats.BytesIn += uint64(m.N)
		if m.N > proto.MaxPacketSizeLimit {
			s.stats.Dropped[DropOversize]++
			continue
		}
		s.receiveDatagram(m.Buf[:m.N], m.Addr.Addr().Unmap(), m.Addr.Port(), b.at)
	}
}

func (s *Server) receiveDatagram(pkt []byte, ip netip.Addr, port uint16, at time.Time) {
	addr := netip.AddrPortFrom(ip, port)
	t, sealed, err := proto.ParsePrefix(pkt)
	if err != nil {
		if proto.IsVersionMismatch(err) {
			s.stats.Dropped[DropVersion]++
			if len(pkt) >= proto.ConnectionRequestSize && proto.PacketType(pkt[3]) == proto.PacketConnectionRequest {
				s.queue(s.hs.deny(s.nextOut(), proto.DenyVersion), addr)
			}
			return
		}
		s.stats.Dropped[DropMalformed]++
		return
	}
	switch t {
	case proto.PacketConnectionRequest:
		if s.closed {
			s.queue(s.hs.deny(s.nextOut(), proto.DenyShuttingDown), addr)
			return
		}
		s.queue(s.hs.request(pkt, addr, at, s.nextOut(), func(priv *proto.TokenPrivate, gameID uint64) proto.DenyReason {
			if c := s.clients[priv.ClientID]; c != nil && c.addr == addr {
				// A late or repeated request from a client we accepted:
				// its accept may have been lost, so send that again.
				s.queue(c.appendAccept(s.nextOut(), at), addr)
				return denySilently
			}
			return s.admit(priv, gameID)
		}), addr)
	case proto.PacketChallengeResponse:
		s.handleResponse(pkt, addr, at)
	case proto.PacketData, proto.PacketKeepAlive, proto.PacketDisconnect:
		if !sealed {
			s.stats.Dropped[DropUnsealed]++
			return
		}
		s.receiveSession(pkt, addr, at)
	default:
		s.stats.Dropped[DropUnexpected]++
	}
}

// admit decides whether a client holding a valid token may connect now.
func (s *Server) admit(priv *proto.TokenPrivate, gameID uint64) proto.DenyReason {
	if _, ok := s.clients[priv.ClientID]; ok {
		return proto.DenyAlreadyConnected
	}
	if s.cfg.AcceptGame != nil && !s.cfg.AcceptGame(gameID) {
		return proto.DenyWrongGame
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		return proto.DenyServerFull
	}
	if _, ok := s.games[gameID]; !ok && len(s.games) >= s.cfg.MaxGames {
		return proto.DenyServerFull
	}
	return 0
}

func (s *Server) handleResponse(pkt []byte, addr netip.AddrPort, at time.Time) {
	priv, gameID, out, ok := s.hs.response(pkt, addr, at, s.nextOut())
	if !ok {
		s.queue(out, addr)
		return
	}
	if c, ok := s.clients[priv.ClientID]; ok {
		// A repeated response (our accept was lost): accept again, from
		// the same address only.
		if c.addr == addr {
			s.queue(c.appendAccept(s.nextOut(), at), addr)
		} else {
			s.queue(s.hs.deny(s.nextOut(), proto.DenyAlreadyConnected), addr)
		}
		return
	}
	if deny := s.admit(&priv, gameID); deny != 0 {
		s.queue(s.hs.deny(s.nextOut(), deny), addr)
		return
	}
	c, err := s.newConn(&priv, gameID, addr, at)
	if err != nil {
		s.cfg.Logger.Error("create connection", "err", err)
		return
	}
	s.hs.stats.Accepted++
	s.stats.Accepted++
	s.cfg.Logger.Info("client connected", "conn", c.id, "client", c.clientID, "game", gameID, "addr", addr)
	// The handler first: a game host attaches the game, whose tick the
	// accept then carries.
	s.handler.Connected(c)
	if c.closed {
		// The handler refused it (a game that could not start): the
		// client has no session yet, so tell it as a denial.
		s.queue(s.hs.deny(s.nextOut(), proto.DenyWrongGame), addr)
		return
	}
	s.queue(c.appendAccept(s.nextOut(), at), addr)
}

// newConnID picks a fresh random-looking connection id.
func (s *Server) newConnID() uint32 {
	for {
		s.idSeed++
		id := uint32(mixID(s.idSeed))
		if _, ok := s.conns[id]; id != 0 && !ok {
			return id
		}
	}
}

// mixID scrambles a counter so connection ids are not guessable in
// sequence (they are not a secret: packets are authenticated).
func mixID(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// nextOut returns an empty buffer for the next queued datagram.
func (s *Server) nextOut() []byte {
	i := len(s.out)
	if i == len(s.outBufs) {
		s.outBufs = append(s.outBufs, make([]byte, 0, proto.MaxPacketSizeLimit))
	}
	return s.outBufs[i][:0]
}

// queue schedules b (which must come from nextOut) for sending to addr.
func (s *Server) queue(b []byte, addr netip.AddrPort) {
	if len(b) == 0 {
		return
	}
	s.out = append(s.out, udp.Message{Buf: b, Addr: addr})
}

// flushOut sends every queued datagram.
func (s *Server) flushOut() {
	if len(s.out) == 0 {
		return
	}
	n, err := s.conn.WriteBatch(s.out)
	for _, m := range s.out[:n] {
		s.stats.PacketsOut++
		s.stats.BytesOut += uint64(len(m.Buf))
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.stats.SendErrors++
		s.cfg.Logger.Warn("send", "err", err, "sent", n, "queued", len(s.out))
	}
	for i := range s.out {
		s.outBufs[i] = s.out[i].Buf[:0]
	}
	s.out = s.out[:0]
}
