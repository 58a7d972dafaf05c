package peerhost

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// HostConfig makes a game.Host the host of a peer-hosted game that
// its players can take over when it is lost (host migration,
// docs/MIGRATION.md). The host keeps every player informed of the roster
// (who can host, where, in which order), streams the game to the first
// successor in line (its warm standby: StandbyFeed), hands out the
// credentials the successor's server admits the players with (a fresh
// key to the successor, a token for its address to everyone), and steps
// down when it learns it was replaced. The game.Host then runs one game.
type HostConfig struct {
	// Game is the id of the game (the one the players' tokens name).
	Game uint64
	// Epoch is the host's term: 1 for the lobby's host, the election's
	// for a successor.
	Epoch uint32
	// Self is the host's own player slot (0 when it does not play).
	Self uint16
	// Candidates are the players who can host, by player slot: the
	// address ("host:port") the other players reach their game server at.
	Candidates map[uint16]string
	// TokenTTL is the validity of the successor tokens (default
	// DefaultTokenTTL); fresh ones go out every TokenTTL/3 and whenever
	// the roster changes.
	TokenTTL time.Duration
	// UserData goes into the successor tokens (the lobby's game type).
	UserData [proto.UserDataSize]byte
	// Standbys is how many candidates, first in the succession, the
	// host keeps warm (default DefaultStandbys): the game survives the
	// loss of the host with up to Standbys-1 of them at once. Each costs
	// the host a standby stream (docs/MIGRATION.md measures one).
	Standbys int
	// StallTimeout: a host whose own loop was stopped this long (a
	// SIGSTOP, a frozen laptop) was declared lost by its players, who
	// followed a successor; it steps down instead of running a second
	// authority. Default migrate.DefaultTimeout.
	StallTimeout time.Duration
	// streams are the players' peer message streams a promoted standby
	// held (Player); followed, if set, runs (on the server's loop) when
	// a player other than the host's own comes back to a game it adopted.
	streams  map[uint16]*playerStream
	followed func()
	// cold: the game was adopted without a warm standby, and streams
	// holds no copies: the players' numbering is learnt as they return
	cold bool
	// StepDown, if set, runs (on the server's loop) when the host learns
	// it was replaced: its standby or half its players left it with
	// proto.DisconnectHostMigrate, or its loop stalled past StallTimeout.
	// The game.Host has stopped the game by then; the owner closes the
	// server (Server.CloseAll with proto.DisconnectHostMigrate).
	StepDown func(why string)
}

// HostStats count what the host side of host migration did.
type HostStats struct {
	Epoch   uint32 // the host's
	Rosters uint64 // roster frames sent
	// RosterErrors counts roster frames a connection refused (its
	// queue full): the roster goes to it again at the next tick.
	RosterErrors uint64
	Credentials  uint64 // credential rounds minted
	// CredentialErrors counts credential frames a connection refused
	// (its reliable queue full): a round whose key did not reach its
	// successor hands out no token, and a round with any refusal is
	// minted again after CredentialRetry.
	CredentialErrors uint64
	StandbyAcks      uint64
	// StandbyBehind counts the standbys that refused a copy of the
	// streams (their queue full): nothing is released until they have
	// every stream again.
	StandbyBehind uint64
	StandbyTick   uint32           // the newest tick every standby holds
	StandbyLag    uint32           // ticks between the host's and StandbyTick, at the last ack
	Standbys      int              // warm standbys now
	Feed          StandbyFeedStats // of every standby's feed
	SteppedDown   bool
	StepDownWhy   string
	MigrateLeave  uint64 // players that left for a successor (proto.DisconnectHostMigrate)
	// HandOverTick is the last tick of a host that quit and handed the
	// game over (0: it did not); HandOverUnacked the players that had
	// not left it for the successor by HandOverTimeout.
	HandOverTick    uint32
	HandOverUnacked uint64
	// HandOverLeft counts the players' stream messages that reached the
	// host during its hand-over, and SteppedDownLeft those that reached
	// it after it stepped down (before its server closed): left for the
	// successor to run.
	HandOverLeft    uint64
	SteppedDownLeft uint64
	// Stream counts the peer message streams' traffic (the players'
	// messages received, the host's sent).
	Stream StreamStats
}

// hostMigration is a host's side of host migration: the Hooks of a
// game.Host, or of a commits.Relay (a relay's standbys are fed by the
// commands it relays, and hold back the commits: Standbys).
type hostMigration struct {
	h       hosted
	log     *slog.Logger
	handler tickwire.Handler // the game's (game.Config.Handler, commits.Config.Handler)
	cfg     HostConfig
	roster  migrate.Roster
	// the warm standbys, first in the succession first (standbys.go);
	// feedCfg is the feed each gets, feedDone the counts of the feeds of
	// former standbys
	standbys []*warmStandby
	feedCfg  StandbyFeed
	feedDone StandbyFeedStats
	dirty    bool // the roster changed: send it
	// standbyLeft: a standby left since the last roster; nothing is
	// released until the next roster names the standbys
	standbyLeft bool
	// rosterOwed are the connections whose queue refused the last
	// roster: it goes to them again every tick until they take it;
	// endOwed the former standbys not yet told they are fed no more
	rosterOwed, endOwed []*tickwire.Conn
	// credsDue: the roster changed since the last round of credentials
	// (minted then), or a frame of that round was refused (credsRetry)
	credsDue, credsRetry bool
	minted               time.Time
	lastRun              time.Time
	left                 int // players that left with proto.DisconnectHostMigrate
	down                 bool
	handing              *handOver // the host quits (handover.go)
	stats                HostStats
	buf                  []byte
	succ                 []migrate.Member
	// the players' peer message streams (stream.go), by first slot
	streams map[uint16]*playerStream
	scratch []*tickwire.Conn // conns
	// rosterErr is why the last roster was not valid ("" once one was)
	rosterErr string
	// silent are the candidates' connections the roster left out of the
	// succession, interrupted (silent for the server's Config.Interrupt);
	// silentNext the buffer of the next count
	silent, silentNext []*tickwire.Conn
}

// hosted is the host a hostMigration runs for.
type hosted interface {
	// Conns appends the connections playing game gameID.
	Conns(gameID uint64, dst []*tickwire.Conn) []*tickwire.Conn
	// running is the game's tick (committed, in commits mode); ok false
	// before it runs.
	running(gameID uint64) (tick uint32, ok bool)
}

// gameHosted is a game.Host as a hostMigration's host.
type gameHosted struct{ *game.Host }

func (h gameHosted) running(gameID uint64) (uint32, bool) {
	if eng := h.Engine(gameID); eng != nil {
		return eng.Tick(), true
	}
	return 0, false
}

// relayHosted is a commits.Relay as a hostMigration's host.
type relayHosted struct{ *commits.Relay }

func (h relayHosted) running(gameID uint64) (uint32, bool) { return h.CommittedTick(gameID) }

// newHostMigration returns the hooks of a host that runs host migration
// by cfg; its mode (mode.serve) sets the host, the handler of the
// players' stream messages and the codec of its standbys' states.
func newHostMigration(cfg HostConfig, log *slog.Logger) *hostMigration {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = tickwire.DefaultTokenTTL
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = migrate.DefaultTimeout
	}
	if cfg.Epoch == 0 {
		cfg.Epoch = 1
	}
	if cfg.Standbys <= 0 {
		cfg.Standbys = DefaultStandbys
	}
	m := &hostMigration{log: log, handler: noHandler{}, cfg: cfg, streams: map[uint16]*playerStream{}}
	for p, st := range cfg.streams {
		m.streams[p] = st
	}
	m.feedCfg = StandbyFeed{Game: cfg.Game, Epoch: migrate.Epoch(cfg.Epoch)}
	return m
}

// noHandler drops the players' messages of a host given no handler.
type noHandler struct{}

func (noHandler) Connected(*tickwire.Conn)                            {}
func (noHandler) Message(*tickwire.Conn, *tickwire.Message)           {}
func (noHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

// conns are the connections playing the game, in the order they joined.
func (m *hostMigration) conns() []*tickwire.Conn {
	m.scratch = m.h.Conns(m.cfg.Game, m.scratch[:0])
	return m.scratch
}

// tick is the game's engine tick (0 before it runs).
func (m *hostMigration) tick() uint32 {
	tick, _ := m.h.running(m.cfg.Game)
	return tick
}

// carries reports whether c carries player slot p.
func carries(c *tickwire.Conn, p uint16) bool { return slices.Contains(c.Players(), p) }

// Stats returns the host migration counters. Call from the server's
// loop.
func (m *hostMigration) Stats() HostStats {
	st := m.stats
	st.Epoch = m.cfg.Epoch
	st.Feed = m.feedDone
	for _, w := range m.standbys {
		st.Feed = addFeedStats(st.Feed, w.feed.Stats())
	}
	st.Standbys = len(m.standbys)
	return st
}

// Stepped feeds the standby with the step eng just ran (game.Hooks).
func (m *hostMigration) Stepped(gameID uint64, eng *sim.Server) {
	m.flushCopies()
	for _, w := range m.standbys {
		w.feed.Stepped(gameID, eng)
	}
}

// Joined notes a join: the roster goes out again; a player back from a
// migration, or back in its slots on a new session (a rejoin), gets its
// stream (game.Hooks).
func (m *hostMigration) Joined(c *tickwire.Conn, resumed bool) {
	m.dirty = true
	switch {
	case resumed:
		m.resumed(c)
		if m.cfg.followed != nil && !carries(c, m.cfg.Self) {
			m.cfg.followed()
		}
	case c.Rejoined():
		m.rejoined(c)
	}
}

// Left handles a connection that ended with reason r, after the game
// removed it (game.Hooks).
func (m *hostMigration) Left(c *tickwire.Conn, r proto.DisconnectReason) {
	m.dirty = true
	wasStandby := m.standbyOf(c) >= 0
	if wasStandby {
		m.setStandbys(slices.DeleteFunc(m.standbyConns(), func(x *tickwire.Conn) bool { return x == c }))
		// Nothing is released before the next roster names the
		// standbys: the one that left may be taking over (it lost this
		// host: a stall, a cut), and with none left, releasing at once
		// would tell the players what no successor knows.
		m.standbyLeft = true
	}
	if r != proto.DisconnectHostMigrate || m.down || m.handing != nil {
		return
	}
	m.left++
	m.stats.MigrateLeave++
	others := m.left // the players it had, its own excluded
	for _, x := range m.conns() {
		if !carries(x, m.cfg.Self) {
			others++
		}
	}
	switch {
	case wasStandby:
		m.stepDown("a standby followed a successor")
	case 2*m.left >= others:
		m.stepDown("half the players followed a successor")
	}
}

// over reports whether the host's reign is over: it stepped down or
// hands the game over. It runs no player's message and sends nothing
// of the streams any more (its successor would not know of it), until
// its server closes.
func (m *hostMigration) over() bool { return m.down || m.handing != nil }

// stepDown stops the game for good: a successor runs it.
func (m *hostMigration) stepDown(why string) {
	if m.down {
		return
	}
	m.down = true
	m.stats.SteppedDown, m.stats.StepDownWhy = true, why
	m.setStandbys(nil)
	m.log.Warn("host steps down", "game", m.cfg.Game, "epoch", m.cfg.Epoch, "why", why)
	if m.cfg.StepDown != nil {
		m.cfg.StepDown(why)
	}
}

// tick runs before the host's games step: it detects a stall of the
// host's own loop, and sends the roster and credentials when due. It
// reports false once the host stepped down (nothing may step or send).
func (m *hostMigration) Tick(now time.Time) bool {
	if m.down {
		return false
	}
	if m.handing != nil {
		m.handOverDue(now)
		return false // the game stopped at the tick handed over
	}
	if !m.lastRun.IsZero() && now.Sub(m.lastRun) >= m.cfg.StallTimeout {
		m.stepDown("the host's loop stalled for " + now.Sub(m.lastRun).Round(time.Millisecond).String())
		return false
	}
	m.lastRun = now
	if _, ok := m.h.running(m.cfg.Game); !ok {
		return true
	}
	m.flushCopies()
	m.recopy()
	if m.silenceChanged() || m.dirty {
		m.dirty = false
		m.publish(now)
	} else if len(m.rosterOwed) > 0 {
		m.sendRoster(m.rosterOwed)
	}
	if len(m.endOwed) > 0 {
		m.endStandbys()
	}
	if m.credentialsDue(now) {
		m.mintRound(now)
	}
	return true
}

// CredentialSpacing is the least time between two rounds of successor
// credentials for roster changes, and CredentialRetry the time before
// a round some frame of which a connection refused goes out again. A
// burst of joins (every player back after a migration) costs a round or
// two, not one per tick it spans.
const (
	CredentialSpacing = 250 * time.Millisecond
	CredentialRetry   = 100 * time.Millisecond
)

// credentialsDue reports whether a round of credentials is due at now:
// the first, a roster change's, a retry, or the refresh of the tokens.
func (m *hostMigration) credentialsDue(now time.Time) bool {
	if len(m.roster.Members) == 0 {
		return false // no valid roster yet
	}
	since := now.Sub(m.minted)
	return m.minted.IsZero() || since >= m.cfg.TokenTTL/3 ||
		m.credsRetry && since >= CredentialRetry || m.credsDue && since >= CredentialSpacing
}

// publish sends the roster of g's players to all of them, makes the
// first successor the standby, and hands out a fresh round of
// credentials for it.
func (m *hostMigration) publish(now time.Time) {
	r := migrate.Roster{Epoch: migrate.Epoch(m.cfg.Epoch)}
	for _, c := range m.conns() {
		players := c.Players()
		if len(players) == 0 {
			continue
		}
		mem := migrate.Member{Slot: players[0], ClientID: c.ClientID()}
		if addr := m.cfg.Candidates[players[0]]; addr != "" && !slices.Contains(m.silent, c) {
			mem.Candidate, mem.Addr = true, addr
		}
		if mem.Slot == m.cfg.Self {
			r.Host = mem.Slot
		}
		r.Members = append(r.Members, mem)
	}
	slices.SortFunc(r.Members, func(a, b migrate.Member) int { return int(a.Slot) - int(b.Slot) })
	if err := r.Validate(); err != nil {
		// Said once until a roster is valid again. A new host's players,
		// its own included, re-dial its server: until they are back the
		// roster is empty or has no host, which is no fault.
		if msg := err.Error(); msg != m.rosterErr {
			m.rosterErr = msg
			level := slog.LevelWarn
			if len(r.Members) == 0 || errors.Is(err, migrate.ErrRosterHost) {
				level = slog.LevelInfo
			}
			m.log.Log(context.Background(), level, "host migration: no valid roster yet", "game", m.cfg.Game, "err", err)
		}
		return
	}
	m.rosterErr = ""
	m.roster = r
	m.sendRoster(m.conns())
	m.standbyLeft = false // the standbys are named anew
	m.succ = r.Succession(m.succ[:0])
	var next []*tickwire.Conn
	for _, s := range m.succ[:min(len(m.succ), m.cfg.Standbys)] {
		if c := m.connOf(s.Slot); c != nil {
			next = append(next, c)
		}
	}
	if !slices.Equal(next, m.standbyConns()) {
		m.setStandbys(next)
	}
	m.credsDue = true
}

// sendRoster sends the roster to the connections cs; those that refuse
// it (their queue full) are owed it: a player that missed a roster
// would elect from an older one than the others (two successors of one
// epoch, after a burst of joins whose last roster it missed).
func (m *hostMigration) sendRoster(cs []*tickwire.Conn) {
	f := m.roster.Frame()
	b, err := f.Append(m.buf[:0])
	if err != nil {
		return
	}
	m.buf = b
	// Filtered in place: cs may be m.rosterOwed itself, and the owed are
	// never more than the connections before them.
	owed := m.rosterOwed[:0]
	for _, c := range cs {
		if c.Closed() {
			continue
		}
		// Not counted in the input acks' frame count: no game event.
		if c.SendFrame(b) != nil {
			owed = append(owed, c)
			m.stats.RosterErrors++
			continue
		}
		m.stats.Rosters++
	}
	m.rosterOwed = owed
}

// mintRound hands out a round of credentials for the first
// MaxSuccessors successors of the roster.
func (m *hostMigration) mintRound(now time.Time) {
	m.minted, m.credsDue, m.credsRetry = now, false, false
	for _, s := range m.succ[:min(len(m.succ), MaxSuccessors)] {
		if !m.credentials(s, now) {
			m.credsRetry = true
		}
	}
}

// silenceChanged reports whether a candidate went silent (its
// connection interrupted) or was heard again since the roster went out.
// A silent candidate is out of the succession until it is heard: the
// others would elect a player who cannot answer, and, as a warm
// standby, it would hold back every player's stream meanwhile (a
// message goes out once every standby holds it). Its slots stay, and
// its session, for the server's timeout; back on it, or on a rejoin, it
// is a candidate again, and a standby fed anew.
func (m *hostMigration) silenceChanged() bool {
	next := m.silentNext[:0]
	for _, c := range m.conns() {
		if ps := c.Players(); len(ps) > 0 && m.cfg.Candidates[ps[0]] != "" && c.Interrupted() {
			next = append(next, c)
		}
	}
	if slices.Equal(next, m.silent) {
		m.silentNext = next
		return false
	}
	m.silent, m.silentNext = next, m.silent
	return true
}

// connOf is the connection whose first player is slot (nil: none).
func (m *hostMigration) connOf(slot uint16) *tickwire.Conn {
	for _, c := range m.conns() {
		if ps := c.Players(); len(ps) > 0 && ps[0] == slot {
			return c
		}
	}
	return nil
}

// standbyConns are the standbys' connections, in line.
func (m *hostMigration) standbyConns() []*tickwire.Conn {
	cs := make([]*tickwire.Conn, len(m.standbys))
	for i, w := range m.standbys {
		cs[i] = w.c
	}
	return cs
}

// MaxSuccessors bounds the candidates, first in the succession, a host
// hands credentials for in each round (a key to each, a token for each
// to every player): the players can follow only those. A round costs
// the host about 0.5 KB per player and successor.
const MaxSuccessors = 8

// credentials mints a round of credentials for successor s and sends
// them: the key to s, then a token for s's address to every player. A
// token sealed with a key its successor never got is useless (the
// successor denies it: unknown key), so when s's connection refuses the
// key nobody gets a token of the round, and the players keep those of
// the last (the successor keeps several keys). It reports false when a
// connection refused a frame.
func (m *hostMigration) credentials(s migrate.Member, now time.Time) bool {
	players := make([]SuccessorPlayer, 0, len(m.conns()))
	for _, c := range m.conns() {
		if ps := c.Players(); len(ps) > 0 {
			players = append(players, SuccessorPlayer{ClientID: c.ClientID(), Players: ps})
		}
	}
	sc, err := MintSuccessorCredentials(m.cfg.Game, s.Addr, players, m.cfg.TokenTTL, m.cfg.UserData, now)
	if err != nil {
		m.log.Warn("host migration: credentials", "game", m.cfg.Game, "err", err)
		return true
	}
	m.stats.Credentials++
	epoch := m.cfg.Epoch
	kf := sc.KeyFrame(epoch, s.Slot)
	if !m.sendCredential(m.connOf(s.Slot), &kf) {
		return false
	}
	ok := true
	for _, c := range m.conns() {
		if ps := c.Players(); len(ps) > 0 {
			if tf, has := sc.TokenFrame(epoch, s.Slot, ps[0]); has && !m.sendCredential(c, &tf) {
				ok = false
			}
		}
	}
	return ok
}

// sendCredential sends f to c, reporting false (and counting it) when
// c refused it.
func (m *hostMigration) sendCredential(c *tickwire.Conn, f *proto.SuccessorFrame) bool {
	b, err := f.Append(m.buf[:0])
	if err != nil || c == nil {
		return true // cannot happen: the frames are bounded; s is a member
	}
	m.buf = b
	if c.SendFrame(b) != nil {
		m.stats.CredentialErrors++
		return false
	}
	return true
}

// maxStreamBacklog and maxStreamBytes bound the messages a stream keeps
// unacknowledged at either end (a player that acknowledges nothing costs
// its host at most that much); Send fails with ErrQueueFull beyond them.
const (
	maxStreamBacklog = 4096
	maxStreamBytes   = 8 << 20
)

// stream is the stream of player p.
func (m *hostMigration) stream(p uint16) *playerStream {
	st := m.streams[p]
	if st == nil {
		st = newPlayerStream()
		m.streams[p] = st
	}
	return st
}

// send queues a message of the host to gc's player on its stream: it
// goes out once the standby holds its copy.
func (m *hostMigration) send(c *tickwire.Conn, channel uint8, data []byte) error {
	ps := c.Players()
	if len(ps) == 0 {
		return tickwire.ErrNotConnected
	}
	if m.over() {
		return ErrClosed // its successor would not know it
	}
	if len(data) > proto.MaxMessageSize {
		return tickwire.ErrMessageTooLarge
	}
	st := m.stream(ps[0])
	if len(st.out) >= maxStreamBacklog || st.outBytes+len(data) > maxStreamBytes {
		return tickwire.ErrQueueFull // the player acknowledges nothing
	}
	st.outBytes += len(data)
	st.outSeq++
	msg := streamMsg{seq: st.outSeq, channel: channel, data: slices.Clone(data), release: m.tick() + 1}
	st.out = append(st.out, msg)
	if st.outUnknown {
		return nil // numbered, copied and sent once the player's ack came
	}
	m.buf = appendPeerMessage(m.buf[:0], proto.PeerMessageFrame{Player: ps[0], Copy: true, Seq: msg.seq, Channel: channel, Data: data})
	m.toStandby(m.buf)
	m.release()
	return nil
}

// sendStream sends a reliable message on channel to c's player on its
// peer message stream, which delivers it exactly once across migrations;
// to a connection that plays no game here, it is c.Send(Reliable, ...).
// Call it from the server's loop (a Handler method).
func (m *hostMigration) sendStream(c *tickwire.Conn, channel uint8, data []byte) error {
	if !slices.Contains(m.conns(), c) {
		return c.Send(tickwire.Reliable, channel, data)
	}
	return m.send(c, channel, data)
}

// streamOf is the stream of gc's player, if it has one.
func (m *hostMigration) streamOf(c *tickwire.Conn) (player uint16, st *playerStream) {
	if ps := c.Players(); len(ps) > 0 {
		return ps[0], m.streams[ps[0]]
	}
	return 0, nil
}

// sendOut sends message o of player's stream to gc, counting it in n.
func (m *hostMigration) sendOut(c *tickwire.Conn, player uint16, o *streamMsg, n *uint64) {
	m.buf = appendPeerMessage(m.buf[:0], proto.PeerMessageFrame{Player: player, Seq: o.seq, Channel: o.channel, Data: o.data})
	if c.SendFrame(m.buf) == nil {
		o.sent = true
		*n++
	}
}

// ackRun tells gc's player how far its messages ran (durable), if not
// told yet or always.
func (m *hostMigration) ackRun(c *tickwire.Conn, player uint16, st *playerStream, always bool) {
	if st.durable == st.acked && !always {
		return
	}
	m.buf = appendPeerAck(m.buf[:0], player, proto.PeerAckFromPlayer, st.durable)
	if c.SendFrame(m.buf) == nil {
		st.acked = st.durable
	}
}

// release sends what the standby holds now: the host's messages and the
// acknowledgements of the players' messages.
func (m *hostMigration) release() {
	if m.over() {
		// Frozen where the standbys have them: nothing the successor
		// may not know goes out (a standby stopped acknowledging, or
		// none is left).
		return
	}
	for _, c := range m.conns() {
		player, st := m.streamOf(c)
		if st == nil || st.outUnknown {
			continue
		}
		for i := range st.out {
			if o := &st.out[i]; !o.sent && m.held(o.release) {
				m.sendOut(c, player, o, &m.stats.Stream.Sent)
			}
		}
		n := 0
		for n < len(st.pending) && m.held(st.pending[n].tick) {
			st.durable = st.pending[n].through
			n++
		}
		st.pending = st.pending[n:]
		m.ackRun(c, player, st, false)
	}
}

// resumed sends a player back from a migration its stream: every
// message it has not acknowledged, and how far its own ran. A host
// that took over cold learns the stream's numbering from the player
// (playerStream.inUnknown, outUnknown).
func (m *hostMigration) resumed(c *tickwire.Conn) {
	if ps := c.Players(); m.cfg.cold && len(ps) > 0 && m.streams[ps[0]] == nil {
		st := newPlayerStream()
		st.inUnknown, st.outUnknown = true, true
		m.streams[ps[0]] = st
		return
	}
	m.resendStream(c, true)
}

// rejoined sends a player back in its slots on a new session what the
// reliable channel of its old one may have lost: the messages released
// to it that it has not acknowledged, and how far its own ran. Those
// not released yet go out when the standbys hold them, as ever.
func (m *hostMigration) rejoined(c *tickwire.Conn) { m.resendStream(c, false) }

// resendStream sends c's player its stream again: the messages it has
// not acknowledged (all, or only those sent before), and how far its
// own ran.
func (m *hostMigration) resendStream(c *tickwire.Conn, all bool) {
	player, st := m.streamOf(c)
	if st == nil {
		return
	}
	for i := range st.out {
		if o := &st.out[i]; all || o.sent {
			m.sendOut(c, player, o, &m.stats.Stream.Resent)
		}
	}
	m.ackRun(c, player, st, true)
}

// peerMessage runs a player's stream message: a new one goes to the
// game's handler (after its copy of the fact to the standby), one that
// ran already (re-sent after a migration) is dropped.
func (m *hostMigration) peerMessage(c *tickwire.Conn, f *proto.PeerMessageFrame) error {
	if f.Copy || !carries(c, f.Player) || f.Player != c.Players()[0] {
		return errForeignPlayer
	}
	if m.over() {
		// Not run here, where its effects would die with the host: the
		// player sends it again to the successor.
		if m.down {
			m.stats.SteppedDownLeft++
		} else {
			m.stats.HandOverLeft++
		}
		return nil
	}
	st := m.stream(f.Player)
	if st.inUnknown {
		// Taken over cold: the player's oldest unconfirmed message
		// comes first (it may have run on the old host: nobody knows).
		st.inNext, st.durable, st.acked, st.inUnknown = f.Seq, f.Seq-1, f.Seq-1, false
	}
	switch d := int32(f.Seq - st.inNext); {
	case d < 0:
		m.stats.Stream.Duplicates++
		return nil
	case d > 0:
		m.stats.Stream.Gaps++
		return errStreamGap
	}
	st.inNext++
	st.pending = append(st.pending, pendingRun{through: f.Seq, tick: m.tick() + 1})
	m.buf = appendPeerAck(m.buf[:0], f.Player, proto.PeerAckStandbyRun, f.Seq)
	m.toStandby(m.buf)
	m.stats.Stream.Received++
	m.handler.Message(c, &tickwire.Message{Channel: f.Channel, Delivery: tickwire.Reliable, Data: f.Data})
	m.release()
	return nil
}

// frame handles a migration frame from a player: the standby's acks, the
// players' stream messages and acknowledgements.
func (m *hostMigration) Frame(c *tickwire.Conn, t proto.FrameType, f []byte) error {
	switch t {
	case proto.FramePeerMessage:
		pm, _, err := proto.ParsePeerMessageFrame(f)
		if err != nil {
			return err
		}
		return m.peerMessage(c, &pm)
	case proto.FramePeerAck:
		a, _, err := proto.ParsePeerAckFrame(f)
		if err != nil {
			return err
		}
		if a.Kind != proto.PeerAckToPlayer || len(c.Players()) == 0 || a.Player != c.Players()[0] {
			return errForeignPlayer
		}
		if st := m.streams[a.Player]; st != nil && st.outUnknown {
			// Taken over cold: the player received through a.Through.
			st.based(a.Through)
			m.copyStream(a.Player, st)
			m.release()
		} else if st != nil && int32(a.Through-st.outSeq) <= 0 {
			st.received(a.Through)
			m.buf = appendPeerAck(m.buf[:0], a.Player, proto.PeerAckStandbyReceived, a.Through)
			m.toStandby(m.buf)
		}
		return nil
	case proto.FrameStandbyAck:
		if _, relay := m.h.(relayHosted); relay && m.standbyOf(c) < 0 {
			// A commits player acknowledges while it finds itself in
			// line for a standby: a roster change may cross it.
			return nil
		}
	default:
		return errUnexpectedFrame
	}
	a, _, err := proto.ParseStandbyAckFrame(f)
	if err != nil {
		return err
	}
	return m.standbyAck(c, &a)
}

var errNotStandby = errors.New("peerhost: standby ack from a connection that is not the standby, or of another epoch")

var (
	errForeignPlayer   = errors.New("peerhost: frame for a player the connection does not carry")
	errUnexpectedFrame = errors.New("peerhost: unexpected frame type")
)

// Standbys names the relay's warm standbys and the newest committed
// tick all of them acknowledged holding (commits.Hooks): the other
// players hear only of commits up to there. Until the first roster
// names them (the relay's own player is not back yet: a relay just
// promoted), nobody hears of a commit if another player could host: a
// successor must hold whatever a player was told.
func (m *hostMigration) Standbys(_ uint64, dst []*tickwire.Conn) ([]*tickwire.Conn, uint32, bool) {
	if m.roster.Epoch == 0 && len(m.cfg.Candidates) > 1 {
		return dst, 0, false
	}
	for _, w := range m.standbys {
		dst = append(dst, w.c)
	}
	ok := m.ackedTick()
	return dst, m.stats.StandbyTick, ok
}
