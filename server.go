package tickwire

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// ErrClosed is returned by a Server or Client that has been closed.
var ErrClosed = errors.New("tickwire: closed")

// Server accepts clients holding connect tokens minted with its key and
// runs their connections: one goroutine reads datagrams in batches, one
// loop goroutine owns every connection, processes packets as they arrive
// (the batches waiting together, opened first on the workers) and sends
// each connection's packet every tick.
type Server struct {
	cfg  Config
	key  Key
	hs   *session.Responder
	conn udp.BatchConn
	in   *udp.ReadLoop
	now  func() time.Time

	mu      sync.Mutex // guards everything below; held by the loop while it works
	handler Handler
	conns   map[uint32]*Conn
	clients map[uint64]*Conn // by client id
	games   map[uint64]int   // game id -> connections
	out     outQueue
	stats   ServerStats
	closed  bool
	driven  bool      // Drive: the caller's loop runs the server
	at      time.Time // Drive: the time of the last Receive or Step
	done    chan struct{}
	idSeed  uint64
	tickNum uint32
	ackDue  []*Conn // connections owing an ack-only packet after a batch
	stall   loopStall
	builder builder // builds the connections' packets each tick (build.go)
	// backlog holds the batches of datagrams received together, and
	// opened what the workers made of them (backlog.go)
	backlog  []*udp.Batch
	openFrom []*udp.Batch // the batches the workers open
	opened   []openedPacket
	// no-delay flushes waiting for the reliable channel's next flush
	flushTimer *time.Timer
	flushArmed bool
	flushConns []*Conn
	// rejoin credentials (rejoin.go): nil rejoinKey when rejoining is off
	rejoinKey   *Key
	rejoins     map[uint64]*rejoinEntry // by client id
	rejoinSweep time.Time
}

// ServerStats counts what a server has done since it started.
type ServerStats struct {
	Connections      int    // open now
	Accepted         uint64 // connections created
	Disconnects      [proto.NumDisconnectReasons]uint64
	PacketsIn        uint64     // datagrams received
	PacketsOut       uint64     // datagrams sent
	BytesIn          uint64     //
	BytesOut         uint64     //
	Dropped          DropCounts // datagrams dropped, by reason
	HandshakeIn      uint64     // handshake bytes received
	HandshakeOut     uint64     // handshake bytes sent
	ChallengesSent   uint64
	HandshakeDenied  uint64
	SendErrors       uint64
	Ticks            uint64
	LastTickDuration time.Duration
	// Stalled is the time the server's loop was not running between
	// ticks (beyond twice the tick interval): its clients' silence in
	// that time is excused.
	Stalled time.Duration
	// Workers is how many build workers run (Config.Workers once enough
	// connections called for them; the loop counts as the first).
	Workers int
	// OpenedAhead counts the datagrams the workers opened before the
	// loop received them (a backlog large enough to share).
	OpenedAhead uint64
	// Interrupted counts connections that went silent for
	// Config.Interrupt (each time); Rejoined the sessions that came back
	// with their rejoin credential, RejoinRefused the credentials
	// refused (used, expired, or for another game).
	Interrupted, Rejoined, RejoinRefused uint64
}

// NewServer creates a server that admits holders of tokens sealed with key.
func NewServer(key Key, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	keys := []*[proto.KeySize]byte{(*[proto.KeySize]byte)(&key)}
	for i := range cfg.PreviousKeys {
		keys = append(keys, (*[proto.KeySize]byte)(&cfg.PreviousKeys[i]))
	}
	rcfg := session.ResponderConfig{Keys: keys, CookieLifetime: cfg.HandshakeTimeout, ServerAddrs: cfg.ServerAddrs}
	var rejoinKey *Key
	if cfg.RejoinGrace > 0 {
		k, err := rejoinKeyFor(key)
		if err != nil {
			return nil, err
		}
		rejoinKey, rcfg.RejoinKey = &k, (*[proto.KeySize]byte)(&k)
	}
	hs, err := session.NewResponder(rcfg)
	if err != nil {
		return nil, err
	}
	var seed [8]byte
	rand.Read(seed[:])
	return &Server{
		rejoinKey: rejoinKey,
		rejoins:   make(map[uint64]*rejoinEntry),
		idSeed:    binary.LittleEndian.Uint64(seed[:]),
		cfg:       cfg,
		key:       key,
		hs:        hs,
		now:       time.Now,
		handler:   nopHandler{},
		conns:     make(map[uint32]*Conn),
		clients:   make(map[uint64]*Conn),
		games:     make(map[uint64]int),
		out:       outQueue{log: cfg.Logger},
		done:      make(chan struct{}),
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

// CloseAll closes every connection, telling each client reason (a host
// that steps down after a migration tells them proto.DisconnectHostMigrate).
// Call it from the loop (a Handler method or Server.Do).
func (s *Server) CloseAll(reason proto.DisconnectReason) {
	for _, c := range s.conns {
		c.Close(reason)
	}
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

// SendDatagram queues b (copied) for addr, to go from the server's socket
// with the loop's other datagrams; b longer than proto.MaxPacketSizeLimit
// is not sent. It is for a mode's own small, bounded packets (commits
// mode's mesh check): the caller answers for never sending an address
// that has not proved it listens more than 3× what came from it. Call it
// from the loop.
func (s *Server) SendDatagram(b []byte, addr netip.AddrPort) {
	if len(b) == 0 || len(b) > proto.MaxPacketSizeLimit || !addr.IsValid() {
		return
	}
	s.out.queue(append(s.out.next(), b...), addr)
}

// Tick is the server's current tick number. Call it from the loop.
func (s *Server) Tick() uint32 { return s.tickNum }

// Config is the server's configuration with every default applied.
func (s *Server) Config() Config { return s.cfg }

// Now reads the server's clock.
func (s *Server) Now() time.Time { return s.now() }

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
	s.out.conn = conn
	s.in = udp.NewReadLoop(conn, udp.ReadLoopConfig{BufSize: proto.MaxPacketSizeLimit + 1, Batches: readBatches, Now: s.now})
	s.mu.Unlock()
	go s.in.Run()
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
	if s.driven {
		s.shutdown()
		s.builder.stop()
		close(s.done)
		serving = false
	}
	s.mu.Unlock()
	if serving {
		<-s.done
	}
	return nil
}

// Done is closed once the server has stopped: its loop ended (Close, or
// a socket that failed), or a driven server was closed.
func (s *Server) Done() <-chan struct{} { return s.done }

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
	st.Workers = len(s.builder.workers)
	st.Stalled = s.stall.total
	st.PacketsOut, st.BytesOut, st.SendErrors = s.out.packets, s.out.bytes, s.out.errors
	for _, w := range s.builder.workers {
		st.PacketsOut, st.BytesOut, st.SendErrors = st.PacketsOut+w.q.packets, st.BytesOut+w.q.bytes, st.SendErrors+w.q.errors
	}
	hs := s.hs.Stats()
	st.HandshakeIn = hs.BytesIn
	st.HandshakeOut = hs.BytesOut
	st.ChallengesSent = hs.Challenges
	st.Dropped[DropMalformed] += hs.Malformed
	for _, n := range hs.Denied {
		st.HandshakeDenied += n
	}
	return st
}

// loop is the server's only state-owning goroutine.
func (s *Server) loop() error {
	defer close(s.done)
	defer s.builder.stop()
	interval := time.Second / time.Duration(s.cfg.TickRate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	s.flushTimer = time.NewTimer(time.Hour)
	s.flushTimer.Stop()
	defer s.flushTimer.Stop()
	var readErr error
	for {
		select {
		case <-s.flushTimer.C:
			s.mu.Lock()
			s.flushArmed = false
			held := s.flushConns
			s.flushConns = nil
			for _, c := range held {
				c.Flush()
			}
			s.out.flush()
			s.mu.Unlock()
		case b := <-s.in.Batches():
			s.mu.Lock()
			s.takeBacklog(b)
			at := s.receiveBacklog()
			s.sendDueAcks(at)
			s.out.flush()
			s.mu.Unlock()
		case <-ticker.C:
			s.mu.Lock()
			if s.closed {
				s.shutdown()
				s.mu.Unlock()
				return nil
			}
			s.receivePending()
			s.step(s.now()) // the tick's duration leaves the datagrams out
			s.mu.Unlock()
		case <-s.in.Done():
			readErr = s.in.Err()
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

// step runs one tick that starts at start and sends its packets. On the
// loop, with mu held.
func (s *Server) step(start time.Time) {
	s.tick(start)
	s.out.flush()
	s.stats.Ticks++
	s.stats.LastTickDuration = s.now().Sub(start)
	if s.cfg.ObserveTick != nil {
		s.cfg.ObserveTick(s.tickNum, s.stats.LastTickDuration)
	}
}

// readBatches is how many batches of datagrams the read loop holds for
// the server's loop.
const readBatches = 16

// receivePending handles the batches of datagrams already read, so that
// a tick sees the inputs and acknowledgements that arrived before it.
// Without it, when ticks take most of the loop's time, select picks the
// ready tick or a ready batch at random: about one batch is handled per
// tick, the read loop's batches fill, the socket drops datagrams, and the
// losses (acks missing, inputs resent in ever larger packets, baselines
// aging) add work until the server cannot recover even when its load
// would fit. The tick's packets carry the acknowledgements the datagrams
// are owed. At most twice the read loop's batches are taken, so a flood
// cannot hold a tick off. On the loop, with mu held.
func (s *Server) receivePending() {
	for range 2 {
		if s.takeBacklog(nil); len(s.backlog) == 0 {
			return
		}
		s.receiveBacklog()
	}
}

// flushLater flushes c again after d (a no-delay Flush whose reliable
// data waits for the channel's next flush). On the loop.
func (s *Server) flushLater(c *Conn, d time.Duration) {
	if !slices.Contains(s.flushConns, c) {
		s.flushConns = append(s.flushConns, c)
	}
	if !s.flushArmed && s.flushTimer != nil {
		s.flushArmed = true
		s.flushTimer.Reset(max(d, 0))
	}
}

// shutdown disconnects every client and closes the socket. Called with mu
// held, once.
func (s *Server) shutdown() {
	now := s.now()
	for _, c := range s.conns {
		s.disconnect(c, proto.DisconnectShutdown, now, true)
	}
	s.out.flush()
	s.conn.Close()
	if s.in != nil {
		s.in.Drain()
	}
}

func (s *Server) receiveDatagram(pkt []byte, ip netip.Addr, port uint16, at time.Time) {
	addr := netip.AddrPortFrom(ip, port)
	t, sealed, err := proto.ParsePrefix(pkt)
	if err != nil {
		if proto.IsVersionMismatch(err) {
			s.stats.Dropped[DropVersion]++
			if len(pkt) >= proto.ConnectionRequestSize && proto.PacketType(pkt[3]) == proto.PacketConnectionRequest {
				s.out.queue(s.hs.Deny(s.out.next(), proto.DenyVersion), addr)
			}
			return
		}
		s.stats.Dropped[DropMalformed]++
		return
	}
	switch t {
	case proto.PacketConnectionRequest:
		if s.closed {
			// No reply larger than the datagram: a short one gets none.
			if len(pkt) >= proto.ConnectionRequestSize {
				s.out.queue(s.hs.Deny(s.out.next(), proto.DenyShuttingDown), addr)
			} else {
				s.stats.Dropped[DropMalformed]++
			}
			return
		}
		s.out.queue(s.hs.Request(pkt, addr, at, s.out.next(), func(a *session.Admission) proto.DenyReason {
			if c := s.clients[a.Priv.ClientID]; c != nil && c.Addr() == addr && c.hs.TokenNonce() == a.Nonce {
				// A late or repeated request from a client we accepted:
				// its accept may have been lost, so send that again.
				s.out.queue(c.appendAccept(s.out.next(), at), addr)
				return session.DenySilently
			}
			return s.admit(a, at)
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
func (s *Server) admit(a *session.Admission, now time.Time) proto.DenyReason {
	if a.Rejoin {
		return s.admitRejoin(a, now)
	}
	gameID := a.GameID
	if _, ok := s.clients[a.Priv.ClientID]; ok {
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
	hs, out, ok := s.hs.Response(pkt, addr, at, s.out.next())
	if !ok {
		s.out.queue(out, addr)
		return
	}
	old := s.clients[hs.Priv.ClientID]
	if old != nil && hs.SameToken(&old.hs) {
		// A repeated response (our accept was lost): the same accept
		// again, to the same handshake from the same address only.
		if old.Addr() == addr {
			s.out.queue(old.appendAccept(s.out.next(), at), addr)
		} else {
			s.out.queue(s.hs.DenyHandshake(s.out.next(), &hs, proto.DenyAlreadyConnected), addr)
		}
		return
	}
	a := session.Admission{Priv: &hs.Priv, GameID: hs.GameID, Nonce: hs.TokenNonce(), Rejoin: hs.Rejoin()}
	if deny := s.admit(&a, at); deny != 0 {
		s.out.queue(s.hs.DenyHandshake(s.out.next(), &hs, deny), addr)
		return
	}
	id := s.newConnID()
	c2s, s2c, deny := s.hs.Use(&hs, id, at)
	if deny != 0 {
		s.out.queue(s.hs.DenyHandshake(s.out.next(), &hs, deny), addr)
		return
	}
	if old != nil {
		// A rejoin while the old session lives (admit let only a
		// rejoin through): the new session takes its place.
		s.disconnect(old, proto.DisconnectReplaced, at, true)
	}
	c, err := s.newConn(id, &hs.Priv, hs.GameID, addr, at, &c2s, &s2c)
	if err != nil {
		s.cfg.Logger.Error("create connection", "err", err)
		return
	}
	c.hs = hs
	c.rejoined = hs.Rejoin()
	gameID := hs.GameID
	s.stats.Accepted++
	if c.rejoined {
		s.stats.Rejoined++
	}
	s.cfg.Logger.Info("client connected", "conn", c.id, "client", c.clientID, "game", gameID, "addr", addr, "rejoin", c.rejoined)
	// The handler first: a game host attaches the game, whose tick the
	// accept then carries.
	s.handler.Connected(c)
	if c.closed {
		// The handler refused it: the client has no session yet, so
		// tell it as a denial — with the game's reason when it gave one
		// (Conn.Refuse).
		if c.refusal != nil {
			s.out.queue(s.hs.DenyHandshakeDetail(s.out.next(), &hs, proto.DenyJoinRefused, c.refusal), addr)
		} else {
			s.out.queue(s.hs.DenyHandshake(s.out.next(), &hs, proto.DenyWrongGame), addr)
		}
		return
	}
	s.out.queue(c.appendAccept(s.out.next(), at), addr)
	s.offerRejoin(c, at)
}

// SeedConnIDs makes the server's connection ids the sequence that
// follows from seed, instead of one from a random seed: for a run that
// must send the same bytes twice (comparing two builds of packets,
// reproducing a capture). Call it before the first client connects. A
// server in production keeps its random seed, so the ids of a restarted
// server never match the sessions of the last one.
func (s *Server) SeedConnIDs(seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idSeed = seed
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

// newConn creates connection id for a token's client at addr, with the
// session keys c2s (client to server) and s2c.
func (s *Server) newConn(id uint32, priv *proto.TokenPrivate, gameID uint64, addr netip.AddrPort, now time.Time, c2s, s2c *[proto.KeySize]byte) (*Conn, error) {
	c := &Conn{
		srv:       s,
		id:        id,
		clientID:  priv.ClientID,
		gameID:    gameID,
		players:   append([]uint16(nil), priv.Players[:priv.PlayerCount]...),
		userData:  priv.UserData,
		out:       connOutput{q: &s.out},
		connected: now,
	}
	c.handler.message = func(m *Message) { s.handler.Message(c, m) }
	sess, err := session.New(session.Config{
		ID:        id,
		MaxPacket: s.cfg.MaxPacketSize,
		TxKey:     s2c,
		RxKey:     c2s,
		Heartbeat: s.cfg.Heartbeat,
		Timeout:   s.cfg.Timeout,
		Handler:   &c.handler,
	}, now)
	if err != nil {
		return nil, err
	}
	sess.SetAddr(addr)
	c.sess, c.out.sess = sess, sess
	s.conns[c.id] = c
	s.builder.changed()
	s.clients[c.clientID] = c
	s.games[gameID]++
	return c, nil
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
	pn, payload, drop, ok := c.sess.Open(pkt, &h)
	if !ok {
		s.stats.Dropped[drop]++
		return
	}
	s.receiveOpened(c, &h, pn, pkt, payload, addr, at)
}

// receiveOpened handles session packet pkt of c, opened: its number pn,
// its payload.
func (s *Server) receiveOpened(c *Conn, h *proto.Header, pn uint64, pkt, payload []byte, addr netip.AddrPort, at time.Time) {
	if from := c.Addr(); c.sess.Arrived(addr, pn, len(pkt), at) {
		// NAT rebinding, or a forged source: the session follows it, and
		// sends there at most 3× what it receives until the new address
		// answers its path challenge.
		s.cfg.Logger.Info("client moved", "conn", c.id, "from", from, "to", addr)
	}
	switch h.Type {
	case proto.PacketDisconnect:
		r, _, err := proto.ParseDisconnectReason(payload)
		if err != nil {
			r = proto.DisconnectProtocol
		}
		s.disconnect(c, r, at, false)
	case proto.PacketKeepAlive:
		if err := c.sess.Receive(at, h, pn, len(pkt), nil); err != nil {
			s.stats.Dropped[DropMalformed]++
		}
	case proto.PacketData:
		if err := c.sess.Receive(at, h, pn, len(pkt), payload); err != nil {
			s.stats.Dropped[DropMalformed]++
			return
		}
		if c.sess.AckDue() && !c.ackQueued {
			c.ackQueued = true
			s.ackDue = append(s.ackDue, c)
		}
	default:
		s.stats.Dropped[DropUnexpected]++
	}
}

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
			c.out.Emit(c.sess.AppendControl(s.out.next(), now, proto.PacketDisconnect, c.ticks(), reason[:]))
		}
	}
	delete(s.conns, c.id)
	s.builder.changed()
	delete(s.clients, c.clientID)
	s.rejoinEnded(c, r, now)
	if s.games[c.gameID]--; s.games[c.gameID] <= 0 {
		delete(s.games, c.gameID)
	}
	s.stats.Disconnects[r]++
	s.cfg.Logger.Info("client disconnected", "conn", c.id, "client", c.clientID, "reason", r.String())
	s.handler.Disconnected(c, r)
}

// tick times out silent connections, runs the handler's tick and sends
// every connection's packets. Silence is counted in the loop's own
// running time: after a stall of the loop, every connection is excused
// the stall first.
func (s *Server) tick(now time.Time) {
	s.tickNum++
	if d := s.stall.since(now, time.Second/time.Duration(s.cfg.TickRate)); d > 0 {
		for _, c := range s.conns {
			c.sess.Excuse(d)
		}
		s.cfg.Logger.Warn("server loop stalled: its clients' silence is excused", "stalled", d.Round(time.Millisecond), "conns", len(s.conns))
	}
	for _, c := range s.conns {
		if c.sess.TimedOut(now) {
			s.disconnect(c, proto.DisconnectTimeout, now, true)
			continue
		}
		s.noteSilence(c, now)
	}
	s.expireRejoins(now)
	s.build(now)
}

// noteSilence marks c interrupted once it has been silent for
// Config.Interrupt, and back once it is heard again, telling the handler
// of each change.
func (s *Server) noteSilence(c *Conn, now time.Time) {
	silence := c.sess.Silent(now)
	silent := silence >= s.cfg.Interrupt
	if silent == c.interrupted {
		return
	}
	c.interrupted = silent
	if silent {
		s.stats.Interrupted++
		s.cfg.Logger.Info("client interrupted", "conn", c.id, "client", c.clientID, "silent", silence.Round(time.Millisecond))
	} else {
		s.cfg.Logger.Info("client back", "conn", c.id, "client", c.clientID)
	}
	if ih, ok := s.handler.(InterruptHandler); ok {
		ih.Interrupted(c, silent)
	}
}

// build runs the handler's tick and builds every connection's packets.
func (s *Server) build(now time.Time) {
	if t, ok := s.handler.(Ticker); ok {
		t.Tick(now, s.tickNum)
	}
	s.builder.build(s, now)
	s.ackDue = s.ackDue[:0]
}

// sendDueAcks sends an ack-only packet to every connection that received
// many packets since it last sent one.
func (s *Server) sendDueAcks(now time.Time) {
	for _, c := range s.ackDue {
		if !c.closed && c.ackQueued {
			c.out.Emit(c.sess.AppendAckPacket(s.out.next(), now, c.ticks()))
		}
		c.ackQueued = false
	}
	s.ackDue = s.ackDue[:0]
}
