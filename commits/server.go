package commits

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// commitServer is the server half of commits mode that Host and Relay
// share: per game id, the command buffer (a sim.Lockstep), the clients'
// progress, the order and relay of commands, the commit, the lead, the
// kicks and the mesh's introductions. Where a committed state comes from
// and how the clients' checksums are judged is its mode's: the Host's
// own committed world, or the Relay's clients.
type commitServer struct {
	srv    *tickwire.Server
	log    *slog.Logger
	cfg    Config
	mode   serverMode
	period time.Duration
	games  map[uint64]*commitGame
	conns  map[*tickwire.Conn]*commitConn
	stats  HostStats
	secret [32]byte // the mesh's pair keys derive from it
	// dropping: connections to close after the games' loop (kicked too
	// often)
	dropping []*tickwire.Conn
	// standbyBuf is decide's (Hooks.Standbys)
	standbyBuf []*tickwire.Conn
}

// serverMode is what Host and Relay do differently.
type serverMode interface {
	// lockstep makes a new game's command buffer (g has its id).
	lockstep(g *commitGame) (*sim.Lockstep, error)
	// admit checks a client's command before it is buffered.
	admit(g *commitGame, f *proto.CommandFrame) error
	// sendState gives cc the committed state and every buffered command,
	// at once (host) or once a client uploaded it (relay); reason is 0
	// for a join. cc is counted again once its live world reaches the
	// state's tick (cc.since).
	sendState(cc *commitConn, reason proto.ResyncReason)
	// sums judges the commit sums frame cc.sums.
	sums(cc *commitConn)
	// frame handles the client frames the shared part does not know
	// (errFrameKind for none).
	frame(cc *commitConn, t proto.FrameType, f []byte) error
	// tick runs for each game after its commit.
	tick(g *commitGame, now time.Time)
	// left tells the mode cc is gone (after it left its game's list).
	left(cc *commitConn)
}

// commitGame is one running game.
type commitGame struct {
	id     uint64
	ls     *sim.Lockstep
	conns  []*commitConn
	sysSeq uint32
	lead   int
	// leadLow is when the computed lead first fell 2 below lead (the
	// lead shrinks only after it stayed low for a while); leadMoved when
	// it last moved (a tick at most per leadStep).
	leadLow   time.Time
	leadMoved time.Time
	joined    map[uint16]uint32 // tick each present player joins at
	meshEpoch uint64            // introductions so far: every pair's keys are new
	seqs      map[uint16]uint32 // each player's last command seq, across its connections
	relay     []byte            // a command frame being relayed
	relayed   *relayGame        // the Relay's part of the game (nil under a Host)
	leadSet   []*commitConn     // updateLead's
	// awaiting holds the players whose connection ended without a leave,
	// until the end of their rejoin grace: still in the game (no leave
	// is scheduled), out of the commit, back with a rejoining connection
	awaiting map[uint16]time.Time
	// offset is the game's clock less the server's tick (an adopted
	// game goes on with the clock of the relay it took over from);
	// adopted is set while the game awaits the players of that relay
	// (migration.go)
	offset  uint32
	adopted *adoption
}

// clock is g's tick now.
func (h *commitServer) clock(g *commitGame) uint32 { return h.srv.Tick() + g.offset }

// commitConn is one connection of a game.
type commitConn struct {
	h      *commitServer
	g      *commitGame
	c      *tickwire.Conn
	sent   uint32 // reliable commit-mode frames sent
	recv   uint32 // command frames received
	live   uint32 // the client's live tick, counted (see item)
	active bool   // holds the committed state and plays (kicked: not)
	// counted: waited for by the commit and followed by the lead (on
	// pace since paceSince for keepPace, pace.go)
	counted   bool
	paceSince time.Time
	kicks     []time.Time // within kickWindow
	behind    time.Time   // since when it has lagged the game's front past the kick limit
	since     uint32      // the tick of the last state sent: active once live reaches it
	lastSeq   map[uint16]uint32
	stamp     map[uint16]uint32 // last tick a command of the player was put at
	sums      proto.CommitSumsFrame
	stateAt   time.Time
	tick      uint32
	// waiting: a state is on its way to the client (Relay): it is sent
	// no command and no commit until the state and the commands after
	// it are queued, and is not counted in the commit
	waiting bool
	// left: the client said it leaves (ControlLeave): its players' leaves
	// are scheduled, and nobody waits for it, relays to it or kicks it
	left bool
	// the path as of this tick: half the round trip, and that plus twice
	// the jitter (a one-way delay with room for its variation)
	up, oneway time.Duration
	// the mesh: where the client listens (invalid: not in it),
	// whether it is out of it for now (kicked), and the round trips it
	// reported to its peers (by connection id; 0: unreachable)
	meshAddr netip.AddrPort
	check    *meshCheck // the hello's address, while it is validated
	hellos   int        // hellos taken
	meshOut  bool
	meshRTT  map[uint32]time.Duration
	report   proto.MeshReportFrame
	relayed  relayConn // the Relay's part of the connection
	// decided are the commits decided since the last one announced to
	// the client, and announced the one its commit frames name: a
	// peer-hosted relay tells a player only of commits its warm
	// standbys hold (migration.go); otherwise the newest decided
	decided   []commitDecision
	announced commitDecision
	// resumed: back after a host migration (migration.go), it sends its
	// unconfirmed commands again (those the game has are dropped);
	// anySeq are its players whose last command seq the game does not
	// know (their next is taken as it comes)
	resumed bool
	anySeq  map[uint16]bool
}

// commitDecision is a commit as decided: the committed tick, the
// reliable frames sent to the client and its commands received then.
type commitDecision struct{ tick, sent, recv uint32 }

// newCommitServer checks cfg, fills in its defaults and returns the
// shared part of a Host or Relay.
func newCommitServer(srv *tickwire.Server, cfg Config, mode serverMode) (*commitServer, error) {
	if _, ok := cfg.FullCodec.Codec(); !ok {
		return nil, fmt.Errorf("commits: Config.FullCodec %d is not a codec", cfg.FullCodec)
	}
	rate := srv.Config().TickRate
	if cfg.Capacity == 0 {
		cfg.Capacity = 4 * rate
	}
	if cfg.MaxBuffer == 0 {
		cfg.MaxBuffer = time.Second
	}
	if cfg.MinLead == 0 {
		cfg.MinLead = 1
	}
	if cfg.MaxLead == 0 {
		cfg.MaxLead = max(cfg.MinLead, cfg.Capacity/4)
	}
	if cfg.SumEvery == 0 {
		cfg.SumEvery = min(rate, proto.MaxCommitSums)
	}
	period := time.Second / time.Duration(rate)
	switch {
	case cfg.Capacity < 8 || cfg.Capacity > 1<<16:
		return nil, fmt.Errorf("commits: Config.Capacity %d out of 8..65536 ticks", cfg.Capacity)
	case cfg.MaxBuffer < 2*period || cfg.MaxBuffer > time.Duration(cfg.Capacity/2)*period:
		return nil, fmt.Errorf("commits: Config.MaxBuffer %v out of 2 ticks..half the Capacity (%v)", cfg.MaxBuffer, time.Duration(cfg.Capacity/2)*period)
	case cfg.MinLead < 1 || cfg.MaxLead < cfg.MinLead || cfg.MaxLead > cfg.Capacity/2:
		return nil, fmt.Errorf("commits: Config lead %d..%d: want 1 ≤ MinLead ≤ MaxLead ≤ Capacity/2", cfg.MinLead, cfg.MaxLead)
	case cfg.SumEvery < 1 || cfg.SumEvery > proto.MaxCommitSums:
		return nil, fmt.Errorf("commits: Config.SumEvery %d out of 1..%d", cfg.SumEvery, proto.MaxCommitSums)
	}
	if cfg.Handler == nil {
		cfg.Handler = noHandler{}
	}
	h := &commitServer{srv: srv, log: srv.Config().Logger, cfg: cfg, mode: mode, period: period,
		games: map[uint64]*commitGame{}, conns: map[*tickwire.Conn]*commitConn{}}
	rand.Read(h.secret[:])
	return h, nil
}

// Resyncs and Desyncs are Stats' counters (for metrics collectors, on
// the server's loop).
func (h *commitServer) Resyncs() uint64 { return h.stats.Resyncs }
func (h *commitServer) Desyncs() uint64 { return h.stats.Desyncs }

// Connected starts a connection: its players join at a tick a lead
// ahead, and it gets the committed state (the Host's, or one the other
// clients uploaded to the Relay) and every command after it.
func (h *commitServer) Connected(c *tickwire.Conn) { h.connected(c) }

// Message passes application messages on to Config.Handler.
func (h *commitServer) Message(c *tickwire.Conn, m *tickwire.Message) { h.cfg.Handler.Message(c, m) }

// Disconnected schedules the connection's players' leaves.
func (h *commitServer) Disconnected(c *tickwire.Conn, reason proto.DisconnectReason) {
	h.disconnected(c, reason)
}

// Tick commits what every counted client has reached, kicks the clients
// that hold the commit back too long, updates the lead and moves the
// Relay's state transfers on.
func (h *commitServer) Tick(now time.Time, tick uint32) { h.tickGames(now, tick) }

func (h *commitServer) game(id uint64) (*commitGame, error) {
	if g, ok := h.games[id]; ok {
		return g, nil
	}
	g := &commitGame{id: id, lead: h.cfg.MinLead, joined: map[uint16]uint32{}, seqs: map[uint16]uint32{}}
	ls, err := h.mode.lockstep(g)
	if err != nil {
		return nil, err
	}
	g.ls = ls
	h.games[id] = g
	h.log.Info("commits game started", "game", id, "tick", ls.CommittedTick())
	return g, nil
}

// connected starts a connection: its players join at a tick a lead
// ahead, and it gets the committed state with every buffered command.
func (h *commitServer) connected(c *tickwire.Conn) {
	g, err := h.game(c.GameID())
	if err != nil {
		h.log.Warn("game refused", "game", c.GameID(), "err", err)
		c.Refuse(0, err.Error())
		return
	}
	cc := &commitConn{h: h, g: g, c: c, lastSeq: map[uint16]uint32{}, stamp: map[uint16]uint32{}, tick: h.clock(g)}
	h.conns[c] = cc
	c.SetFrameHandler(cc)
	g.conns = append(g.conns, cc)
	resumed := g.resumes(c)
	if !resumed && h.rejoins(g, c) {
		h.stats.Rejoins++
		h.log.Info("players rejoined", "game", g.id, "players", c.Players(), "conn", c.ID())
	}
	for _, p := range c.Players() {
		// The player's commands are numbered on from the game's count,
		// so a rejoining player's never collide with its old ones.
		cc.lastSeq[p] = g.seqs[p]
		if _, ok := g.joined[p]; ok {
			if !c.Rejoined() && !resumed {
				h.log.Warn("player slot already in the game", "game", g.id, "player", p)
			}
			continue
		}
		at := h.schedule(g)
		g.joined[p] = at
		h.system(g, sim.CommandJoin, p, at, cc)
		h.stats.Joins++
		h.log.Info("player joins", "game", g.id, "player", p, "tick", at, "conn", c.ID())
	}
	if resumed {
		h.resume(cc)
	} else {
		h.mode.sendState(cc, 0)
	}
	if h.cfg.Hooks != nil {
		h.cfg.Hooks.Joined(c, resumed)
	}
	h.cfg.Handler.Connected(c)
}

// schedule is the tick an event decided now runs at: a lead ahead,
// within the buffer (the clock of a game adopted after a host migration
// may run far ahead of its committed tick: the old relay's silence).
func (h *commitServer) schedule(g *commitGame) uint32 {
	c := g.ls.CommittedTick()
	return max(min(h.clock(g)+uint32(g.lead), c+uint32(h.cfg.Capacity)), c+1)
}

// system buffers a join or leave and relays it to every connection but
// skip (which gets it with the state).
func (h *commitServer) system(g *commitGame, k sim.CommandKind, player uint16, at uint32, skip *commitConn) {
	g.sysSeq++
	cmd := sim.Command{Kind: k, Player: player, Tick: at, Seq: g.sysSeq}
	if err := g.ls.Add(&cmd); err != nil {
		h.log.Error("schedule join or leave", "game", g.id, "err", err)
		return
	}
	h.relay(g, &cmd, skip)
}

// relay sends cmd to every connection of g except skip and those
// waiting for a state (which get it after the state).
func (h *commitServer) relay(g *commitGame, cmd *sim.Command, skip *commitConn) {
	if err := g.encode(cmd); err != nil {
		h.log.Error("encode command", "err", err)
		return
	}
	for _, cc := range g.conns {
		if cc != skip && !cc.waiting && !cc.left {
			cc.send(g.relay)
		}
	}
}

// encode puts cmd's command frame in g.relay.
func (g *commitGame) encode(cmd *sim.Command) error {
	f := proto.CommandFrame{Kind: proto.CommandKind(cmd.Kind), Player: cmd.Player, Tick: cmd.Tick, Seq: cmd.Seq, Data: cmd.Data}
	var err error
	g.relay, err = f.Append(g.relay[:0])
	return err
}

// send queues a reliable commit-mode frame; a client whose queue is full
// is too slow to play.
func (cc *commitConn) send(frame []byte) {
	if cc.c.Closed() {
		return
	}
	if err := cc.c.SendFrame(frame); err != nil {
		cc.h.log.Warn("client too slow: reliable queue full", "game", cc.g.id, "conn", cc.c.ID(), "err", err)
		cc.h.stats.TooSlow++
		cc.c.Close(proto.DisconnectTooSlow)
		return
	}
	cc.sent++
}

// sendPending sends cc every buffered command, after its state.
func (cc *commitConn) sendPending() {
	g := cc.g
	g.ls.Pending(func(c *sim.Command) {
		if g.encode(c) == nil {
			cc.send(g.relay)
		}
	})
}

// seqs appends each of the connection's players' last command seq (a
// new connection numbers its commands on from there).
func (cc *commitConn) seqs(out []proto.PlayerSeq) []proto.PlayerSeq {
	for _, p := range cc.c.Players() {
		out = append(out, proto.PlayerSeq{Player: p, Seq: cc.lastSeq[p]})
	}
	return out
}

// stateSent notes a state sent to cc at tick: it counts in the commit
// again once its live world reaches it.
func (cc *commitConn) stateSent(tick uint32, reason proto.ResyncReason) {
	cc.active = false
	cc.since = tick
	cc.stateAt = cc.h.srv.Now()
	if reason != 0 {
		cc.h.stats.Resyncs++
	}
}

// disconnected schedules the connection's players' leaves.
func (h *commitServer) disconnected(c *tickwire.Conn, reason proto.DisconnectReason) {
	cc, ok := h.conns[c]
	if !ok {
		h.cfg.Handler.Disconnected(c, reason)
		return
	}
	delete(h.conns, c)
	g := cc.g
	h.meshLeave(cc)
	// A copy: the caller may be ranging over g.conns (a send that
	// closed a connection too slow, a relay refusing its waiting
	// clients), and deleting in place would clear the slot it reads next.
	g.conns = slices.DeleteFunc(slices.Clone(g.conns), func(x *commitConn) bool { return x == cc })
	if !h.awaitRejoin(cc, reason) {
		h.leave(cc, reason)
	}
	h.mode.left(cc)
	h.endIfEmpty(g)
	if h.cfg.Hooks != nil {
		h.cfg.Hooks.Left(c, reason)
	}
	h.cfg.Handler.Disconnected(c, reason)
}

// awaitRejoin keeps cc's players in the game, out of the commit, until
// the end of their rejoin grace, when cc ended without a leave
// (tickwire.Conn.RejoinUntil). It reports whether it did.
func (h *commitServer) awaitRejoin(cc *commitConn, reason proto.DisconnectReason) bool {
	until, ok := cc.c.RejoinUntil()
	if !ok || cc.left {
		return false
	}
	g := cc.g
	if g.awaiting == nil {
		g.awaiting = map[uint16]time.Time{}
	}
	for _, p := range cc.c.Players() {
		if _, in := g.joined[p]; in {
			g.awaiting[p] = until
		}
	}
	h.log.Info("players await their rejoin", "game", g.id, "players", cc.c.Players(), "reason", reason, "until", until, "conn", cc.c.ID())
	return true
}

// rejoins reports whether c, a rejoining connection, takes back players
// g awaits (and stops awaiting them): they are in the game already, and
// c gets the committed state and counts in the commit again once it
// keeps pace, as a kicked client does.
func (h *commitServer) rejoins(g *commitGame, c *tickwire.Conn) bool {
	if !c.Rejoined() || len(g.awaiting) == 0 {
		return false
	}
	back := false
	for _, p := range c.Players() {
		if _, ok := g.awaiting[p]; ok {
			delete(g.awaiting, p)
			back = true
		}
	}
	return back
}

// expireRejoins schedules the leaves of the awaited players whose grace
// is over.
func (h *commitServer) expireRejoins(g *commitGame, now time.Time) {
	expired := false
	for p, until := range g.awaiting {
		if now.Before(until) {
			continue
		}
		delete(g.awaiting, p)
		h.leavePlayer(g, p, "timeout, not back in its grace", 0)
		expired = true
	}
	if expired {
		h.endIfEmpty(g)
	}
}

// endIfEmpty ends g when no connection plays it and no player is awaited.
func (h *commitServer) endIfEmpty(g *commitGame) {
	if len(g.conns) == 0 && len(g.awaiting) == 0 && h.games[g.id] == g {
		delete(h.games, g.id)
		h.log.Info("commits game ended", "game", g.id, "tick", g.ls.CommittedTick())
	}
}

// leave schedules the leaves of cc's players still in the game, a lead
// ahead like joins: every client runs them at the same tick.
func (h *commitServer) leave(cc *commitConn, reason proto.DisconnectReason) {
	for _, p := range cc.c.Players() {
		h.leavePlayer(cc.g, p, reason.String(), cc.c.ID())
	}
}

// leavePlayer schedules player's leave, if it is in g, a lead ahead.
func (h *commitServer) leavePlayer(g *commitGame, p uint16, reason string, conn uint32) {
	j, ok := g.joined[p]
	if !ok {
		return
	}
	delete(g.joined, p)
	at := max(h.schedule(g), j+1)
	h.system(g, sim.CommandLeave, p, at, nil)
	h.stats.Leaves++
	h.log.Info("player leaves", "game", g.id, "player", p, "tick", at, "reason", reason, "conn", conn)
}

// leaving takes a client's clean leave (ControlLeave): its players leave
// at a tick a lead ahead, and from now on the commit, the lead and the
// kicks ignore it, and it is sent nothing more (no command, no state);
// its connection's end follows.
func (h *commitServer) leaving(cc *commitConn) {
	if cc.left {
		return
	}
	cc.left = true
	cc.active = false
	h.meshLeave(cc)
	h.leave(cc, proto.DisconnectClosed)
}

// tickGames commits what every counted client has reached, kicks the
// clients that hold the commit back too long, and updates the lead.
func (h *commitServer) tickGames(now time.Time, srvTick uint32) {
	if t, ok := h.cfg.Handler.(tickwire.Ticker); ok {
		t.Tick(now, srvTick)
	}
	if h.cfg.Hooks != nil && !h.cfg.Hooks.Tick(now) {
		return // replaced by a successor, or handed over
	}
	maxLag := uint32(h.cfg.MaxBuffer / h.period)
	for _, g := range h.games {
		tick := srvTick + g.offset
		h.expireAdoption(g, now)
		h.expireRejoins(g, now)
		for _, cc := range g.conns {
			st := cc.c.Stats()
			cc.up, cc.oneway = st.RTT/2, st.RTT/2+2*st.Jitter
			h.meshChecks(cc, now)
		}
		// The commit waits for the clients that count; if none does (all
		// off pace: the server's own hiccup), for every playing one.
		commit, playing, any := tick, tick, false
		front := g.front(tick)
		for _, cc := range g.conns {
			cc.tick = tick
			lag := int32(tick - cc.live)
			if cc.waiting || cc.left {
				continue
			}
			if !cc.active {
				// Counted again once it holds the state it was sent and
				// keeps up (a kicked client is not kicked again while it
				// still lags).
				if int32(cc.live-cc.since) < 0 || lag > int32(maxLag/2) {
					continue
				}
				cc.active = true
				cc.counted = false
				cc.paceSince = time.Time{}
				if cc.meshOut {
					h.meshJoin(cc)
				}
			}
			// Kick a client whose live world lags so far that the others'
			// commit would wait more than MaxBuffer: the lag the commit
			// sees is its reported tick plus the path up. Only a client
			// that holds others back is kicked: when every client lags
			// alike (a starved machine, not one slow player), kicking
			// them all would help nobody.
			up := uint32(cc.up / h.period)
			limit := int32(maxLag - min(maxLag/2, up+2))
			if lag > limit && int32(front-cc.live) > limit {
				// Lagging the others for kickGrace: clients that all
				// lagged come back a tick or two apart.
				if cc.behind.IsZero() {
					cc.behind = now
				}
				if now.Sub(cc.behind) >= kickGrace {
					cc.behind = time.Time{}
					h.kick(cc, now)
					continue
				}
			} else {
				cc.behind = time.Time{}
			}
			if int32(cc.live-playing) < 0 {
				playing = cc.live
			}
			if h.counts(cc, lag, now) {
				any = true
				if int32(cc.live-commit) < 0 {
					commit = cc.live
				}
			}
		}
		if !any {
			commit = playing
		}
		if g.holds(now) {
			commit = g.ls.CommittedTick()
		}
		h.updateLead(g, now)
		limit := g.ls.CommittedTick() + uint32(h.cfg.Capacity)
		if int32(commit-limit) > 0 {
			commit = limit
		}
		if int32(commit-g.ls.CommittedTick()) > 0 {
			n := commit - g.ls.CommittedTick()
			if err := g.ls.Commit(commit); err != nil {
				h.log.Error("commit", "game", g.id, "err", err)
			}
			h.stats.Commits += uint64(n)
		}
		// The mode's work (states sent, with the commands after them)
		// before the stream position the commit names.
		h.mode.tick(g, now)
		h.decide(g)
	}
	for _, c := range h.dropping {
		c.Close(proto.DisconnectKicked)
	}
	clear(h.dropping)
	h.dropping = h.dropping[:0]
}

// front is the newest live tick an active client of g reports (at most
// tick, the server's clock for g; tick itself if no client is active):
// how far the game could commit but for its slowest clients.
func (g *commitGame) front(tick uint32) uint32 {
	front, any := tick, false
	for _, cc := range g.conns {
		if !cc.active || cc.waiting || cc.left {
			continue
		}
		if !any || int32(cc.live-front) > 0 {
			front, any = cc.live, true
		}
	}
	if !any || int32(front-tick) > 0 {
		return tick
	}
	return front
}

// kick takes a lagging client out of the commit and sends it a fresh
// committed copy (or drops it, if even that cannot be queued).
func (h *commitServer) kick(cc *commitConn, now time.Time) {
	h.stats.Kicks++
	cc.active = false
	if h.kicked(cc, now) {
		return
	}
	h.log.Warn("client kicked from the commit: too slow", "game", cc.g.id, "conn", cc.c.ID(),
		"live", cc.live, "tick", cc.tick, "max_buffer", h.cfg.MaxBuffer)
	h.mode.sendState(cc, proto.ResyncSlowClient)
	h.meshLeave(cc)
}

// updateLead sets the game's lead: the longest time a command needs to
// reach every other client — up one client's path and down another's
// through the server, or straight across the mesh when that pair
// reaches each other — plus two ticks (rounding, the server's turn).
// It follows the clients that count (on pace for a while: not one off
// pace, kicked or just joined: one client's stall moves nobody's lead),
// all playing ones while fewer than two do. It moves a tick at most per
// leadStep: up at once, down after staying 2 ticks too high for 2 s.
func (h *commitServer) updateLead(g *commitGame, now time.Time) {
	set := g.leadSet[:0]
	for _, cc := range g.conns {
		if cc.counted {
			set = append(set, cc)
		}
	}
	if len(set) < 2 {
		set = set[:0]
		for _, cc := range g.conns {
			if cc.active && !cc.left && !cc.waiting {
				set = append(set, cc)
			}
		}
	}
	g.leadSet = set
	if len(set) == 0 {
		return
	}
	want := int(slowestPath(set)/h.period) + 2
	want = max(h.cfg.MinLead, min(h.cfg.MaxLead, want))
	step := now.Sub(g.leadMoved) >= leadStep
	switch {
	case want > g.lead:
		g.leadLow = time.Time{}
		if step {
			g.lead++
			g.leadMoved = now
		}
	case want <= g.lead-2:
		if g.leadLow.IsZero() {
			g.leadLow = now
		} else if now.Sub(g.leadLow) > 2*time.Second && step {
			// Lower for 2 s (the first estimates of a new connection's
			// round trip are pessimistic): come down, keeping a tick.
			g.lead--
			g.leadMoved = now
		}
	default:
		g.leadLow = time.Time{}
	}
}

// slowestPath is the longest, over ordered pairs of the clients in set,
// of the quickest way a command goes from one to the other.
// Through the server it is both one-way delays with twice their jitter;
// across the mesh, half the pair's probe round trip with a quarter more
// for its variation (a lost shortcut still comes through the server,
// late).
func slowestPath(set []*commitConn) time.Duration {
	meshed := false
	for _, cc := range set {
		meshed = meshed || len(cc.meshRTT) > 0
	}
	if !meshed {
		// The two slowest one-way paths make the slowest pair.
		var a, b time.Duration
		for _, cc := range set {
			if d := cc.oneway; d > a {
				a, b = d, a
			} else if d > b {
				b = d
			}
		}
		if b == 0 {
			b = a
		}
		return a + b
	}
	var worst time.Duration
	for _, from := range set {
		for _, to := range set {
			if from == to {
				continue
			}
			d := from.oneway + to.oneway
			if rtt := from.meshRTT[to.c.ID()]; rtt > 0 {
				d = min(d, rtt/2+rtt/8)
			}
			worst = max(worst, d)
		}
	}
	return worst
}

// conn is the game's connection with id, if any.
func (g *commitGame) conn(id uint32) *commitConn {
	for _, cc := range g.conns {
		if cc.c.ID() == id {
			return cc
		}
	}
	return nil
}

// meshJoin introduces cc to every other client of its game in the mesh.
func (h *commitServer) meshJoin(cc *commitConn) {
	cc.meshOut = false
	if cc.meshRTT == nil {
		cc.meshRTT = map[uint32]time.Duration{}
	}
	for _, o := range cc.g.conns {
		if o != cc && o.meshAddr.IsValid() && !o.meshOut {
			h.introduce(cc, o)
		}
	}
}

// meshLeave takes cc out of everyone's mesh (and everyone out of its).
func (h *commitServer) meshLeave(cc *commitConn) {
	if !cc.meshAddr.IsValid() || cc.meshOut {
		return
	}
	cc.meshOut = true
	clear(cc.meshRTT)
	for _, o := range cc.g.conns {
		if o == cc || !o.meshAddr.IsValid() || o.meshOut {
			continue
		}
		h.sendIntro(o, &proto.MeshIntroFrame{Op: proto.MeshRemove, Conn: cc.c.ID()})
		h.sendIntro(cc, &proto.MeshIntroFrame{Op: proto.MeshRemove, Conn: o.c.ID()})
		delete(o.meshRTT, cc.c.ID())
		h.stats.MeshRemovals++
	}
}

// introduce gives a and b each other's address and a fresh key per
// direction, derived from the host's secret: never a session key.
func (h *commitServer) introduce(a, b *commitConn) {
	g := a.g
	g.meshEpoch++
	ab := h.pairKey(g, a, b)
	ba := h.pairKey(g, b, a)
	h.sendIntro(a, &proto.MeshIntroFrame{Op: proto.MeshAdd, Conn: b.c.ID(), Addr: b.meshAddr, Players: b.c.Players(), SendKey: ab, RecvKey: ba})
	h.sendIntro(b, &proto.MeshIntroFrame{Op: proto.MeshAdd, Conn: a.c.ID(), Addr: a.meshAddr, Players: a.c.Players(), SendKey: ba, RecvKey: ab})
	h.stats.Introductions++
}

// pairKey is the key of the packets from one client to another: HKDF
// over the host's secret, naming the game, the introduction and the
// direction.
func (h *commitServer) pairKey(g *commitGame, from, to *commitConn) [proto.KeySize]byte {
	var info [8 + 8 + 4 + 4]byte
	binary.LittleEndian.PutUint64(info[0:], g.id)
	binary.LittleEndian.PutUint64(info[8:], g.meshEpoch)
	binary.LittleEndian.PutUint32(info[16:], from.c.ID())
	binary.LittleEndian.PutUint32(info[20:], to.c.ID())
	k, err := hkdf.Key(sha256.New, h.secret[:], nil, "tickwire peer key "+string(info[:]), proto.KeySize)
	var key [proto.KeySize]byte
	if err == nil {
		copy(key[:], k)
	}
	return key
}

func (h *commitServer) sendIntro(cc *commitConn, f *proto.MeshIntroFrame) {
	b, err := f.Append(nil)
	if err != nil {
		h.log.Error("encode peer introduction", "err", err)
		return
	}
	if cc.c.Closed() {
		return
	}
	// Not a commit-mode stream frame: the client does not count it.
	if err := cc.c.SendFrame(b); err != nil {
		cc.h.stats.TooSlow++
		cc.c.Close(proto.DisconnectTooSlow)
	}
}

// Frame handles a client's commits-mode frames.
func (cc *commitConn) Frame(t proto.FrameType, f []byte, p *tickwire.PacketInfo) error {
	h := cc.h
	switch t {
	case proto.FrameCommand:
		cmd, _, err := proto.ParseCommandFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		return cc.command(&cmd)
	case proto.FrameCommitItem:
		item, _, err := proto.ParseCommitItemFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		// Count the live tick only once every command sent before it has
		// arrived; never beyond the server's own clock.
		if item.Commands <= cc.recv && int32(item.Live-cc.live) > 0 {
			cc.live = min(item.Live, h.clock(cc.g))
		}
		return nil
	case proto.FrameCommitSums:
		if _, err := proto.ParseCommitSumsFrame(f, &cc.sums); err != nil {
			return cc.bad(err)
		}
		if !cc.left {
			h.mode.sums(cc)
		}
		return nil
	case proto.FrameMeshIntro:
		f, _, err := proto.ParseMeshIntroFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		switch {
		case f.Op == proto.MeshHello && f.Port != 0:
			h.meshHello(cc, f.Port, p.Time)
		case f.Op == proto.MeshProof:
			h.meshProof(cc, f.Proof)
		default:
			return cc.bad(errMeshHello)
		}
		return nil
	case proto.FrameMeshReport:
		if _, err := proto.ParseMeshReportFrame(f, &cc.report); err != nil {
			return cc.bad(err)
		}
		if !cc.meshAddr.IsValid() {
			return nil
		}
		clear(cc.meshRTT)
		for _, r := range cc.report.Links {
			if cc.g.conn(r.Conn) != nil {
				cc.meshRTT[r.Conn] = time.Duration(r.RTTMicros) * time.Microsecond
			}
		}
		return nil
	case proto.FrameControl:
		ctl, _, err := proto.ParseControlFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		if ctl.Code != proto.ControlLeave {
			return cc.bad(errControlCode)
		}
		h.leaving(cc)
		return nil
	case proto.FrameResyncRequest:
		req, _, err := proto.ParseResyncRequestFrame(f)
		if err != nil {
			return cc.bad(err)
		}
		if cc.left || cc.waiting || h.srv.Now().Sub(cc.stateAt) < resyncCooldown {
			return nil
		}
		h.log.Info("client asked for the committed state", "game", cc.g.id, "conn", cc.c.ID(), "reason", req.Reason)
		h.mode.sendState(cc, req.Reason)
		return nil
	}
	err := h.mode.frame(cc, t, f)
	var other errFrameKind
	if errors.As(err, &other) && h.cfg.Hooks != nil {
		err = h.cfg.Hooks.Frame(cc.c, t, f)
	}
	if err != nil {
		return cc.bad(err)
	}
	return nil
}

func (cc *commitConn) bad(err error) error {
	cc.h.stats.BadFrames++
	return err
}

var (
	errMeshHello     = errors.New("commits: a client may only say hello to the mesh, with its port, and prove its address")
	errControlCode   = errors.New("commits: a client's only control frame is its leave")
	errCommandKind   = errors.New("commits: a client may only send input commands")
	errCommandPlayer = errors.New("commits: command for a player of another connection")
	errCommandSeq    = errors.New("commits: command out of sequence")
)

// errFrameKind is a mode's answer to a frame it does not take.
type errFrameKind proto.FrameType

func (e errFrameKind) Error() string {
	return fmt.Sprintf("commits: %v frame in commits mode", proto.FrameType(e))
}

// command buffers a client's command and relays it. A command for a
// tick already committed is moved to the first open tick (and its sender
// told); one scheduled beyond the buffer is refused.
func (cc *commitConn) command(f *proto.CommandFrame) error {
	h, g := cc.h, cc.g
	cc.recv++
	if f.Kind != proto.CommandInput {
		return cc.bad(errCommandKind)
	}
	if !slices.Contains(cc.c.Players(), f.Player) {
		return cc.bad(errCommandPlayer)
	}
	switch {
	case cc.resumed && int32(f.Seq-cc.lastSeq[f.Player]) <= 0:
		// Sent again after a host migration, and the game has it.
		h.stats.Duplicates++
		return nil
	case cc.anySeq[f.Player] && int32(f.Seq-cc.lastSeq[f.Player]) > 0:
		delete(cc.anySeq, f.Player) // the first the game knows of
	case f.Seq != cc.lastSeq[f.Player]+1:
		return cc.bad(errCommandSeq)
	}
	if err := h.mode.admit(g, f); err != nil {
		return cc.bad(err)
	}
	cc.lastSeq[f.Player] = f.Seq
	if _, present := g.joined[f.Player]; !present {
		return nil
	}
	// The Lockstep refuses a tick beyond its buffer (sim.ErrCommandAhead).
	at := max(f.Tick, g.ls.CommittedTick()+1, cc.stamp[f.Player]+1)
	cmd := sim.Command{Kind: sim.CommandInput, Player: f.Player, Tick: at, Seq: f.Seq, Data: f.Data}
	if err := g.ls.Add(&cmd); err != nil {
		return cc.bad(err)
	}
	g.seqs[f.Player] = f.Seq
	cc.stamp[f.Player] = at
	h.stats.Commands++
	h.relay(g, &cmd, cc)
	if at != f.Tick && !cc.waiting {
		// Too late for its tick: the sender moves its copy where
		// everyone else has it.
		h.stats.Late++
		cc.send(g.relay)
	}
	return nil
}

// AppendFrames adds the commit: the committed tick, the stream position
// the client must have reached to apply it, and the lead. A client
// waiting for a state gets none.
func (cc *commitConn) AppendFrames(b []byte, room int, p *tickwire.PacketInfo) []byte {
	if cc.waiting {
		return b
	}
	a := cc.announced
	f := proto.ControlFrame{Code: proto.ControlCommit, Tick: a.tick,
		Arg: proto.CommitArg(a.sent, uint16(a.recv), uint16(cc.g.lead))}
	if f.Len() > room {
		return b
	}
	out, err := f.Append(b)
	if err != nil {
		return b
	}
	return out
}

// Ticks names the server's tick in every packet: the clients' clock.
func (cc *commitConn) Ticks() tickwire.Ticks {
	return tickwire.Ticks{Tick: cc.tick, InterpFrom: cc.tick, InterpTo: cc.tick}
}

// resyncCooldown is the shortest time between two committed states sent
// to one connection: a client cannot buy the compression of the whole
// world faster than that.
const resyncCooldown = 500 * time.Millisecond

// noHandler is the Config.Handler of a host given none.
type noHandler struct{}

func (noHandler) Connected(*tickwire.Conn)                            {}
func (noHandler) Message(*tickwire.Conn, *tickwire.Message)           {}
func (noHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
