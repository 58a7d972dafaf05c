package tickwire

import (
	"errors"
	"slices"
	"time"

	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// MigrationConfig makes a GameHost the host of a peer-hosted game that
// its players can take over when it is lost (host migration,
// docs/MIGRATION.md). The host keeps every player informed of the roster
// (who can host, where, in which order), streams the game to the first
// successor in line (its warm standby: StandbyFeed), hands out the
// credentials the successor's server admits the players with (a fresh
// key to the successor, a token for its address to everyone), and steps
// down when it learns it was replaced. The GameHost then runs one game.
type MigrationConfig struct {
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
	// StallTimeout: a host whose own loop was stopped this long (a
	// SIGSTOP, a frozen laptop) was declared lost by its players, who
	// followed a successor; it steps down instead of running a second
	// authority. Default migrate.DefaultTimeout.
	StallTimeout time.Duration
	// StepDown, if set, runs (on the server's loop) when the host learns
	// it was replaced: its standby or half its players left it with
	// proto.DisconnectHostMigrate, or its loop stalled past StallTimeout.
	// The GameHost has stopped the game by then; the owner closes the
	// server (Server.CloseAll with proto.DisconnectHostMigrate).
	StepDown func(why string)
}

// MigrationStats count what the host side of host migration did.
type MigrationStats struct {
	Epoch        uint32 // the host's
	Rosters      uint64 // roster frames sent
	Credentials  uint64 // credential rounds minted
	StandbyAcks  uint64
	StandbyTick  uint32 // the newest tick the standby holds
	StandbyLag   uint32 // ticks between the host's and the standby's newest, at the last ack
	Feed         StandbyFeedStats
	SteppedDown  bool
	StepDownWhy  string
	MigrateLeave uint64 // players that left for a successor (proto.DisconnectHostMigrate)
}

// hostMigration is a GameHost's side of host migration.
type hostMigration struct {
	h       *GameHost
	cfg     MigrationConfig
	feed    StandbyFeed
	roster  migrate.Roster
	standby *gameConn
	dirty   bool // the roster changed: send it, with fresh credentials
	minted  time.Time
	lastRun time.Time
	left    int // players that left with proto.DisconnectHostMigrate
	down    bool
	stats   MigrationStats
	buf     []byte
	succ    []migrate.Member
}

func newHostMigration(h *GameHost, cfg MigrationConfig) *hostMigration {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = migrate.DefaultTimeout
	}
	if cfg.Epoch == 0 {
		cfg.Epoch = 1
	}
	m := &hostMigration{h: h, cfg: cfg}
	m.feed = StandbyFeed{Game: cfg.Game, Epoch: migrate.Epoch(cfg.Epoch), Codec: h.codec}
	return m
}

// MigrationStats returns the host migration counters (zero without
// GameConfig.Migration). Call from the server's loop.
func (h *GameHost) MigrationStats() MigrationStats {
	if h.mig == nil {
		return MigrationStats{}
	}
	st := h.mig.stats
	st.Epoch = h.mig.cfg.Epoch
	st.Feed = h.mig.feed.Stats()
	return st
}

// stepped feeds the standby with the step eng just ran.
func (m *hostMigration) stepped(gameID uint64, eng *sim.Server) {
	m.feed.Stepped(gameID, eng)
}

// changed notes a join or leave: the roster goes out again.
func (m *hostMigration) changed() { m.dirty = true }

// disconnected handles a connection that ended with reason r (after
// the game removed it).
func (m *hostMigration) disconnected(gc *gameConn, r proto.DisconnectReason) {
	m.dirty = true
	wasStandby := gc == m.standby
	if wasStandby {
		m.standby = nil
		m.feed.SetStandby(nil)
	}
	if r != proto.DisconnectHostMigrate || m.down {
		return
	}
	m.left++
	m.stats.MigrateLeave++
	others := m.left // the players it had, its own excluded
	for _, x := range gc.game.conns {
		if !x.has(m.cfg.Self) {
			others++
		}
	}
	switch {
	case wasStandby:
		m.stepDown("the standby followed a successor")
	case 2*m.left >= others:
		m.stepDown("half the players followed a successor")
	}
}

// stepDown stops the game for good: a successor runs it.
func (m *hostMigration) stepDown(why string) {
	if m.down {
		return
	}
	m.down = true
	m.stats.SteppedDown, m.stats.StepDownWhy = true, why
	m.feed.SetStandby(nil)
	m.h.log.Warn("host steps down", "game", m.cfg.Game, "epoch", m.cfg.Epoch, "why", why)
	if m.cfg.StepDown != nil {
		m.cfg.StepDown(why)
	}
}

// tick runs before the host's games step: it detects a stall of the
// host's own loop, and sends the roster and credentials when due. It
// reports false once the host stepped down (nothing may step or send).
func (m *hostMigration) tick(now time.Time) bool {
	if m.down {
		return false
	}
	if !m.lastRun.IsZero() && now.Sub(m.lastRun) >= m.cfg.StallTimeout {
		m.stepDown("the host's loop stalled for " + now.Sub(m.lastRun).Round(time.Millisecond).String())
		return false
	}
	m.lastRun = now
	g := m.h.games[m.cfg.Game]
	if g == nil {
		return true
	}
	if m.dirty || now.Sub(m.minted) >= m.cfg.TokenTTL/3 {
		m.dirty = false
		m.publish(g, now)
	}
	return true
}

// publish sends the roster of g's players to all of them, makes the
// first successor the standby, and hands out a fresh round of
// credentials for it.
func (m *hostMigration) publish(g *hostedGame, now time.Time) {
	r := migrate.Roster{Epoch: migrate.Epoch(m.cfg.Epoch)}
	for _, gc := range g.conns {
		players := gc.c.Players()
		if len(players) == 0 {
			continue
		}
		mem := migrate.Member{Slot: players[0], ClientID: gc.c.ClientID()}
		if addr := m.cfg.Candidates[players[0]]; addr != "" {
			mem.Candidate, mem.Addr = true, addr
		}
		if mem.Slot == m.cfg.Self {
			r.Host = mem.Slot
		}
		r.Members = append(r.Members, mem)
	}
	slices.SortFunc(r.Members, func(a, b migrate.Member) int { return int(a.Slot) - int(b.Slot) })
	if err := r.Validate(); err != nil {
		m.h.log.Warn("host migration: no valid roster", "game", m.cfg.Game, "err", err)
		return
	}
	m.roster = r
	f := r.Frame()
	b, err := f.Append(m.buf[:0])
	if err != nil {
		return
	}
	m.buf = b
	for _, gc := range g.conns {
		// Not counted in the input acks' frame count: no game event.
		if gc.c.SendFrame(b) == nil {
			m.stats.Rosters++
		}
	}
	m.succ = r.Succession(m.succ[:0])
	var next *gameConn
	if len(m.succ) > 0 {
		for _, gc := range g.conns {
			if ps := gc.c.Players(); len(ps) > 0 && ps[0] == m.succ[0].Slot {
				next = gc
			}
		}
	}
	if next != m.standby {
		m.standby = next
		if next != nil {
			m.feed.SetStandby(next.c)
		} else {
			m.feed.SetStandby(nil)
		}
	}
	m.minted = now
	if next == nil {
		return
	}
	m.credentials(g, m.succ[0], now)
}

// credentials mints a round of credentials for successor s and sends
// them: the key to s, a token for s's address to every player.
func (m *hostMigration) credentials(g *hostedGame, s migrate.Member, now time.Time) {
	players := make([]SuccessorPlayer, 0, len(g.conns))
	for _, gc := range g.conns {
		if ps := gc.c.Players(); len(ps) > 0 {
			players = append(players, SuccessorPlayer{ClientID: gc.c.ClientID(), Players: ps})
		}
	}
	sc, err := MintSuccessorCredentials(m.cfg.Game, s.Addr, players, m.cfg.TokenTTL, m.cfg.UserData, now)
	if err != nil {
		m.h.log.Warn("host migration: credentials", "game", m.cfg.Game, "err", err)
		return
	}
	m.stats.Credentials++
	epoch := m.cfg.Epoch
	for _, gc := range g.conns {
		ps := gc.c.Players()
		if len(ps) == 0 {
			continue
		}
		if ps[0] == s.Slot {
			kf := sc.KeyFrame(epoch, s.Slot)
			if b, err := kf.Append(m.buf[:0]); err == nil {
				m.buf = b
				gc.c.SendFrame(b)
			}
		}
		if tf, ok := sc.TokenFrame(epoch, s.Slot, ps[0]); ok {
			if b, err := tf.Append(m.buf[:0]); err == nil {
				m.buf = b
				gc.c.SendFrame(b)
			}
		}
	}
}

// frame handles a migration frame from a player: the standby's acks.
func (m *hostMigration) frame(gc *gameConn, t proto.FrameType, f []byte) error {
	if t != proto.FrameStandbyAck {
		return errUnexpectedFrame
	}
	a, _, err := proto.ParseStandbyAckFrame(f)
	if err != nil {
		return err
	}
	if gc != m.standby || a.Epoch != m.cfg.Epoch {
		return errNotStandby
	}
	m.stats.StandbyAcks++
	if int32(a.Tick-m.stats.StandbyTick) > 0 {
		m.stats.StandbyTick = a.Tick
	}
	m.stats.StandbyLag = gc.game.eng.Tick() - m.stats.StandbyTick
	return nil
}

var errNotStandby = errors.New("tickwire: standby ack from a connection that is not the standby, or of another epoch")
