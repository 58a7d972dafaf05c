package game

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// Game is the interface game code implements: a deterministic fixed-step
// world with its rules (see sim.Game for the contract).
type Game = sim.Game

// Factory makes the world of a new game the first time a connect
// token names its id. It may refuse with an error.
type Factory func(gameID uint64) (Game, error)

// Config tunes a Host. The zero value is the default.
type Config struct {
	// Sim configures each game's tick engine (input buffering, checksum
	// interval, lag compensation). Its TickRate is the server's.
	Sim sim.ServerConfig
	// Ring is how many past states each game keeps as delta baselines.
	// Default deltacomp.DefaultRingSize (about 1 s at 60 Hz).
	Ring int
	// Interest configures relevance and priorities per entity kind.
	Interest interest.WorldConfig
	// Scheduler configures each player's packet scheduler (view radius,
	// bandwidth cap).
	Scheduler interest.SchedulerConfig
	// SnapshotInterval is how many ticks apart a connection gets its
	// snapshot deltas: 1 (the default, 0) every tick, 2 every other tick
	// (30 Hz at a 60 Hz tick rate), up to MaxSnapshotInterval. The
	// simulation and the inputs keep the tick rate; what a lower snapshot
	// rate saves is the server's per-connection work (scheduling,
	// encoding, sealing: a quarter to a third of the arena's tick at 2,
	// since each snapshot then carries two ticks' changes) and the bytes
	// down (see Client.SetInputInterval for the way up), at the
	// cost of remote entities shown that much later (the client's
	// interpolation delay follows the snapshot interval). Connections are
	// spread over the ticks by id, so each tick builds an even share. In
	// between, a connection sends only reliable data queued (game events,
	// full snapshots), and the acks it owes wait for its next snapshot.
	SnapshotInterval int
	// View, if set, gives the position a connection's first player views
	// the world from (its avatar), for Scheduler.Radius. Without it, or
	// when it reports !ok, the view stays where it was.
	View func(world Game, player uint16) (pos interest.Vec3, ok bool)
	// FullCodec compresses join and resync snapshots. Default zstd.
	FullCodec deltacomp.FullCodec
	// Handler, if set, also receives the connections' events (messages
	// the engine does not consume: those not postmarked).
	Handler tickwire.Handler
	// SendEffects, if set, networks the effects the server's game
	// produces in its steps (sim.Tick.Effect; spawns excepted): for each,
	// it says to whom — a player slot, 0 for every player of the game —
	// or !ok to keep it on the server. Clients receive them, reliably, as
	// EventEffect game events in tick order.
	SendEffects func(e *sim.Effect) (to uint16, ok bool)
	// Stepped, if set, is called after each step of a game's engine,
	// before anything else touches it (a warm standby's feed records the
	// step there: peerhost.StandbyFeed.Stepped), after Hooks.Stepped.
	Stepped func(gameID uint64, eng *sim.Server)
	// Hooks, if set, is called at the points of the host's life where a
	// layer above acts on its games: host migration (package peerhost)
	// hangs its roster, standby feed and message streams there.
	Hooks Hooks
	// Record, if set, records each game for tickwire-replay: when a
	// game starts, the host asks it for the game's Writer (a
	// replay.Create of a file of its own), records every step there
	// (replay.ServerRecorder) and closes it when the game ends. An
	// error leaves that game unrecorded (logged). A game adopted after
	// a host migration is not recorded.
	Record func(gameID uint64) (*replay.Writer, error)
}

// Host runs games on a Server: one tick engine (package sim) per
// game id, fed by its connections' input frames, replicated to each
// connection as XOR+RLE delta frames chosen by an interest scheduler, with
// join and resync snapshots on the reliable channel. Use it as the
// server's Handler.
type Host struct {
	srv     *tickwire.Server
	log     *slog.Logger
	factory Factory
	cfg     Config
	codec   proto.Codec // of full snapshots
	games   map[uint64]*hostedGame
	conns   map[*tickwire.Conn]*gameConn // the host's own table: Conn.Value is the application's
	codecs  deltacomp.Codecs
	sum     sim.Checksummer
	scratch []byte
	// packets: per build worker (Conn.worker), the memory the schedulers
	// and encoders that worker runs rank, size and write a packet in.
	packets []packetScratch
	stats   HostStats
	hooks   Hooks // nil unless Config.Hooks
	// overflowed counts connections whose backlog overflowed since the
	// last tick; kicks is the tick's list of them.
	overflowed int
	kicks      []*tickwire.Conn
}

// packetScratch is where one build worker's schedulers and encoders
// rank, size and write a packet: shared by the connections the worker
// builds one after the other, it stays in the worker's cache, where each
// connection's own would be cold by its next packet.
type packetScratch struct {
	enc   deltacomp.Scratch
	sched interest.Scratch
}

// HostStats count what a Host did.
type HostStats struct {
	Games        int    // running now
	Joins        uint64 // players joined
	JoinFailures uint64 // joins the game refused
	Leaves       uint64
	// Interruptions counts connections that went silent (each time),
	// Rejoins those that came back into their players' slots after
	// their session ended without a leave.
	Interruptions, Rejoins uint64
	Resyncs                uint64 // full snapshots sent on a client's request
	Desyncs                uint64 // checksum mismatches clients reported
	BadFrames              uint64 // frames from clients that did not parse or named another player
	SnapshotLate           uint64 // joins whose full snapshot did not fit the reliable queue
	// FramesHeld counts game frames (player joins and leaves, effects...)
	// that waited in a connection's backlog because its reliable queue
	// was full; BacklogKicks the connections disconnected because their
	// backlog overflowed (maxBacklog) instead.
	FramesHeld, BacklogKicks uint64
	// FullSnapshots counts full snapshots sent (joins and resyncs);
	// FullEncodes how many were compressed (connections that need the
	// same state in the same tick share one encoding).
	FullSnapshots, FullEncodes uint64
	// ResyncsIgnored counts resync requests that arrived while the
	// connection's last full snapshot was due, in flight or in its
	// cooldown (a client repeats its request while it still needs one).
	ResyncsIgnored uint64
	// StaleResyncs counts full snapshots sent unasked because a
	// connection's delta encoder fell more layout changes behind than
	// the ring keeps (deltacomp.Encoder.Stale): it got no packet for as
	// many ticks with entities coming and going.
	StaleResyncs uint64
	// ResumedMissing counts, in a game adopted after a host migration
	// (Adopt), the inputs the players brought back that its engine ran
	// without: the ticks up to the newest of a returning player's first
	// input frames on this host (which carry every input the old host
	// may have acknowledged), from the tick the game resumed at, that
	// ran before those frames arrived or without their input. Inputs
	// sampled later, late like any on a lossy path, are
	// InputsMissing's only.
	ResumedMissing uint64
	// Effects counts the effects Config.SendEffects networked.
	Effects uint64
	// PatchCodes counts where the run-length codes of the entity
	// patches in the connections' snapshot deltas came from: shared by
	// the connections acknowledged at the same revision (encoded once
	// per entity, baseline and tick), or encoded (deltacomp.CodeStats).
	PatchCodes deltacomp.CodeStats
	// InputsMissing counts the (player, tick) pairs the games simulated
	// without the player's input, ended games included
	// (sim.ServerStats.InputsMissing): inputs that came too late, or
	// not at all.
	InputsMissing uint64
}

// NewHost returns a host that creates games with factory, or an error
// naming what is wrong with cfg. Install it with srv.Handle.
func NewHost(srv *tickwire.Server, factory Factory, cfg Config) (*Host, error) {
	if factory == nil {
		return nil, errors.New("game: NewHost needs a game factory")
	}
	codec, ok := cfg.FullCodec.Codec()
	if !ok {
		return nil, fmt.Errorf("game: Config.FullCodec %d is not a codec", cfg.FullCodec)
	}
	scfg := srv.Config()
	if cfg.Sim.TickRate != 0 && cfg.Sim.TickRate != scfg.TickRate {
		return nil, fmt.Errorf("game: Config.Sim.TickRate %d differs from the server's %d (leave it zero)", cfg.Sim.TickRate, scfg.TickRate)
	}
	cfg.Sim.TickRate = scfg.TickRate
	if err := cfg.Sim.Validate(); err != nil {
		return nil, fmt.Errorf("game: Config.Sim: %w", err)
	}
	if cfg.Ring < 0 {
		return nil, fmt.Errorf("game: Config.Ring %d is negative", cfg.Ring)
	}
	if cfg.SnapshotInterval < 0 || cfg.SnapshotInterval > MaxSnapshotInterval {
		return nil, fmt.Errorf("game: Config.SnapshotInterval %d is outside 0–%d ticks", cfg.SnapshotInterval, MaxSnapshotInterval)
	}
	cfg.SnapshotInterval = max(cfg.SnapshotInterval, 1)
	if cfg.Handler == nil {
		cfg.Handler = noHandler{}
	}
	h := &Host{srv: srv, log: scfg.Logger, factory: factory, cfg: cfg, codec: codec, hooks: cfg.Hooks,
		games: map[uint64]*hostedGame{}, conns: map[*tickwire.Conn]*gameConn{}, packets: make([]packetScratch, scfg.Workers)}
	return h, nil
}

// MaxSnapshotInterval is the longest Config.SnapshotInterval: as many
// ticks as a connection's scheduler may go without an update and still
// learn exactly what changed (interest.MaxSkippedUpdates + 1).
const MaxSnapshotInterval = interest.MaxSkippedUpdates + 1

// Full snapshots cost the server a compression of the whole state, so a
// connection cannot buy them faster than this: at most one in flight,
// the next no sooner than resyncCooldown after the last was sent, and at
// most maxFullsPerTick compressed per tick for the whole host (the rest
// wait for the next tick).
const (
	resyncCooldown  = 500 * time.Millisecond
	maxFullsPerTick = 4
)

// hostedGame is one running game.
type hostedGame struct {
	id     uint64
	eng    *sim.Server
	ring   *deltacomp.Ring
	world  *interest.World
	conns  []*gameConn
	bodies []sim.Body
	// full is the last full snapshot frame encoded (of revision fullRev,
	// with cause fullCause): connections that need the same one share it.
	full      []byte
	fullRev   uint32
	fullCause proto.SnapshotCause
	// pending control frames for everyone, sent reliably after the tick
	broadcast [][]byte
	// players of an adopted game who have not re-dialled yet, until
	// awaitEnd (Adopt)
	awaited   map[uint16]bool
	awaitEnd  time.Time
	migration proto.ControlFrame // sent to each resumed connection
	// the adopted game's tick waits for its players' inputs until holdEnd
	// (zero: not holding), except for the gone
	holdEnd time.Time
	gone    []uint16
	// the players an adopted game resumed, until each brought its inputs
	// back and the game ran past them (checkResumed)
	returning map[uint16]*returning
	rec       sim.StepRecord
	recorder  *replay.ServerRecorder // Config.Record's (nil: not recorded)
	// players whose session ended without a leave, in their rejoin
	// grace (rejoin.go)
	rejoining map[uint16]rejoinWait
}

// gameConn is the replication state of one connection in a game.
type gameConn struct {
	host  *Host
	game  *hostedGame
	c     *tickwire.Conn
	enc   *deltacomp.Encoder
	sched *interest.Scheduler
	now   time.Time
	// phase is the connection's place in the snapshot cadence: its
	// packets are due on the ticks where (tick + phase) mod
	// Config.SnapshotInterval is 0.
	phase uint32
	// full snapshot in flight on the reliable channel: taken as the
	// encoder's baseline once the reliable queue has drained.
	fullRev  uint32
	fullIDs  []proto.NetworkID
	fullSent bool
	fullAt   time.Time           // when the last full snapshot was sent
	fullDue  proto.SnapshotCause // a full snapshot is due (0: none)
	sumDue   bool
	// holding: the connection resumed players of an adopted game, whose
	// tick waits for their first inputs (hostedGame.holds).
	holding bool
	// frames counts the game frames (control frames, full snapshots)
	// queued for the connection on the reliable channel, mod 65536, which
	// every input ack names (proto.InputAckFrame.Frames).
	frames uint16
	// fates holds what became of sent packets since the connection's
	// last packet was built (number<<1, | 1 when lost), in the order
	// the acks told. The encoder and scheduler learn them when the next
	// packet is built, on the build worker that owns the connection,
	// rather than on the loop that received the acks: the same state by
	// then (baselines only grow; a resync forgets the packets sent
	// before it either way), with the work spread over the cores.
	fates []uint64
	// lostIDs holds what a lost packet carried, on its way from the
	// encoder (which records each packet's entities) to the scheduler.
	lostIDs []proto.NetworkID
	// backlog holds game frames the reliable queue had no room for (a
	// burst of joins announced to everyone, say), in order: they go
	// before anything newer, so none is lost or reordered.
	backlog      [][]byte
	backlogBytes int
	overflow     bool // the backlog overflowed: disconnected at the next tick
}

// maxBacklog bounds a connection's backlog; a client that lets more wait
// is not acknowledging what it is sent, and is disconnected.
const maxBacklog = 1 << 20

// maxFates bounds the fates kept for the next build; beyond it they are
// applied at once (a connection that has not been built for a while).
const maxFates = 256

// Stats returns the host's counters. Call from the server's loop.
func (h *Host) Stats() HostStats {
	st := h.stats
	st.Games = len(h.games)
	for i := range h.packets {
		st.PatchCodes = st.PatchCodes.Add(h.packets[i].enc.CodeStats())
	}
	for _, g := range h.games {
		st.InputsMissing += g.eng.Stats().InputsMissing
	}
	return st
}

// end forgets a game nobody plays any more, keeping its count of missing
// inputs in the host's, and ends its recording.
func (h *Host) end(g *hostedGame) {
	h.stats.InputsMissing += g.eng.Stats().InputsMissing
	delete(h.games, g.id)
	if g.recorder != nil {
		if err := g.recorder.Close(); err != nil {
			h.log.Warn("game recording", "game", g.id, "err", err)
		}
		g.recorder = nil
	}
}

// record starts recording a new game, if Config.Record says so.
func (h *Host) record(g *hostedGame) {
	if h.cfg.Record == nil {
		return
	}
	w, err := h.cfg.Record(g.id)
	if err == nil {
		if g.recorder, err = replay.NewServerRecorder(w, g.id, g.eng); err != nil {
			w.Close()
		}
	}
	if err != nil {
		h.log.Warn("game not recorded", "game", g.id, "err", err)
		return
	}
	h.log.Info("recording game", "game", g.id, "file", w.Path())
}

// Resyncs and Desyncs are for metrics.
func (h *Host) Resyncs() uint64 { return h.stats.Resyncs }

// Desyncs counts checksum mismatches clients reported.
func (h *Host) Desyncs() uint64 { return h.stats.Desyncs }

// InputsMissing is HostStats.InputsMissing, for metrics.
func (h *Host) InputsMissing() uint64 { return h.Stats().InputsMissing }

// PatchCodes is HostStats.PatchCodes, for metrics.
func (h *Host) PatchCodes() deltacomp.CodeStats { return h.Stats().PatchCodes }

// Entities is how many entities a game has now.
func (h *Host) Entities(gameID uint64) int {
	if g := h.games[gameID]; g != nil {
		return g.eng.Snapshot().Len()
	}
	return 0
}

// Engine returns a game's tick engine (nil if the game is not running),
// for inspection from the server's loop.
func (h *Host) Engine(gameID uint64) *sim.Server {
	if g := h.games[gameID]; g != nil {
		return g.eng
	}
	return nil
}

func (h *Host) game(id uint64, now time.Time) (*hostedGame, error) {
	if g := h.games[id]; g != nil {
		return g, nil
	}
	world, err := h.factory(id)
	if err != nil {
		return nil, err
	}
	eng, err := sim.NewServer(world, h.cfg.Sim)
	if err != nil {
		return nil, err
	}
	eng.Start(now, 0)
	g := &hostedGame{
		id:    id,
		eng:   eng,
		ring:  deltacomp.NewRing(deltacomp.RingConfig{Size: h.cfg.Ring, Predictor: world.Schema().Predictor}),
		world: interest.NewWorld(h.cfg.Interest),
	}
	h.games[id] = g
	g.publish()
	h.log.Info("game started", "game", id)
	h.record(g)
	return g, nil
}

// publish pushes the engine's current state into the ring and the
// interest world.
func (g *hostedGame) publish() {
	snap := g.eng.Snapshot()
	if _, err := g.ring.Push(snap); err != nil {
		return
	}
	g.bodies = g.eng.World().AppendBodies(g.bodies[:0])
	kinder, _ := g.eng.World().(sim.EntityKinder)
	owner, _ := g.eng.World().(sim.EntityOwner)
	g.world.Begin(snap.Tick)
	b := 0
	for _, id := range snap.IDs {
		for b < len(g.bodies) && g.bodies[b].ID < id {
			b++
		}
		var pos interest.Vec3
		kind := uint8(0)
		if kinder != nil {
			kind = kinder.EntityKind(id)
		}
		if b < len(g.bodies) && g.bodies[b].ID == id {
			p := g.bodies[b].Pos
			pos = interest.Vec3{X: float32(p.X), Y: float32(p.Y), Z: float32(p.Z)}
		}
		// The entity's owner as the client engine's default own
		// (sim.ClientConfig.Own) counts it: kept fresh for its players'
		// prediction.
		slot := id.Spawner()
		if owner != nil {
			slot = owner.Owner(id)
		}
		g.world.AddOwned(id, pos, kind, slot)
	}
	g.world.End(g.ring.Changed())
}

// Connected joins the connection's players to its game.
func (h *Host) Connected(c *tickwire.Conn) {
	now := h.srv.Now()
	g, err := h.game(c.GameID(), now)
	if err != nil {
		h.log.Warn("game refused", "game", c.GameID(), "err", err)
		h.stats.JoinFailures++
		c.Refuse(0, err.Error())
		return
	}
	gc := &gameConn{
		host:  h,
		game:  g,
		c:     c,
		enc:   deltacomp.NewEncoder(g.ring, deltacomp.EncoderConfig{}),
		sched: interest.NewScheduler(h.cfg.Scheduler),
		now:   now,
		phase: c.ID() % uint32(h.cfg.SnapshotInterval),
	}
	gc.sched.SetPlayers(c.Players())
	rejoined := g.rejoins(c)
	resumed := !rejoined && g.resumes(c.Players())
	for _, p := range c.Players() {
		if resumed || rejoined {
			break // in the engine already
		}
		ctrl, err := g.eng.Join(p)
		if err != nil {
			h.log.Warn("join refused", "game", g.id, "player", p, "err", err)
			h.stats.JoinFailures++
			for _, q := range c.Players() {
				if q == p {
					break
				}
				if ctrl, err := g.eng.Leave(q, "join failed"); err == nil {
					g.queueBroadcast(&ctrl.Frame)
				}
			}
			if len(g.conns) == 0 {
				// Nobody plays it: do not keep it running.
				h.end(g)
			}
			c.Refuse(p, err.Error())
			return
		}
		h.stats.Joins++
		h.log.Info("player joined", "game", g.id, "player", p, "tick", ctrl.Frame.Tick, "conn", c.ID())
		g.queueBroadcast(&ctrl.Frame)
	}
	gc.fullDue = gc.firstFull(resumed)
	if rejoined {
		gc.fullDue = proto.CauseRejoin
		h.stats.Rejoins++
		h.log.Info("players rejoined", "game", g.id, "players", c.Players(), "conn", c.ID())
	}
	gc.holding = resumed
	h.conns[c] = gc
	c.SetFrameHandler(gc)
	g.conns = append(g.conns, gc)
	if h.hooks != nil {
		h.hooks.Joined(c, resumed)
	}
	h.cfg.Handler.Connected(c)
}

// Disconnected removes the connection's players from its game.
func (h *Host) Disconnected(c *tickwire.Conn, r proto.DisconnectReason) {
	if gc := h.conns[c]; gc != nil {
		delete(h.conns, c)
		c.SetFrameHandler(nil)
		g := gc.game
		for i, x := range g.conns {
			if x == gc {
				g.conns = append(g.conns[:i], g.conns[i+1:]...)
				break
			}
		}
		if !h.awaitRejoin(g, c, r) {
			for _, p := range c.Players() {
				if ctrl, err := g.eng.Leave(p, r.String()); err == nil {
					h.stats.Leaves++
					h.log.Info("player left", "game", g.id, "player", p, "tick", ctrl.Frame.Tick, "reason", r, "conn", c.ID())
					g.queueBroadcast(&ctrl.Frame)
				}
			}
		}
		if h.hooks != nil {
			h.hooks.Left(c, r)
		}
		h.endIfEmpty(g)
	}
	h.cfg.Handler.Disconnected(c, r)
}

// Message hands postmarked messages to the engine (they run at their
// tick, as the player the message names — Client.SendPlayerAt — or the
// connection's first player) and everything else to Config.Handler.
// A postmarked message naming a player the connection does not carry is
// dropped and counted (HostStats.BadFrames).
func (h *Host) Message(c *tickwire.Conn, m *tickwire.Message) {
	gc := h.conns[c]
	if gc != nil && m.Postmarked && len(c.Players()) > 0 {
		player := m.Player
		if player == 0 {
			player = c.Players()[0]
		} else if !gc.has(player) {
			h.stats.BadFrames++
			return
		}
		f := proto.MessageFrame{Channel: m.Channel, Postmarked: true, Tick: m.Tick, Data: m.Data}
		if err := gc.game.eng.ReceiveMessage(h.srv.Now(), player, &f); err == nil {
			return
		}
	}
	h.cfg.Handler.Message(c, m)
}

// Tick runs every game's due steps and prepares each connection's frames.
func (h *Host) Tick(now time.Time, tick uint32) {
	if h.hooks != nil && !h.hooks.Tick(now) {
		return // replaced by a successor: no step, no frame
	}
	h.kickOverflowed()
	fulls := 0
	for _, g := range h.games {
		for _, gc := range g.conns {
			if len(gc.backlog) > 0 {
				gc.sendBacklog()
			}
		}
		h.expireAwaited(g, now)
		h.expireRejoins(g, now)
		n := g.eng.Due(now)
		if g.holds(now) {
			g.eng.Resume(now) // the schedule restarts when the hold ends
			n = 0
		}
		// A loop that fell behind steps the game several times in one
		// tick, and publishes only the last state: the packets built
		// next carry the newest state either way, and following one
		// revision costs each connection a fraction of following
		// several, so a late tick does not make the next late too.
		// Each step's effects, controls and checksums still go out.
		stepped := n > 0
		for ; n > 0; n-- {
			g.eng.Step()
			if g.recorder != nil {
				g.recorder.Stepped(g.eng)
			}
			h.checkResumed(g)
			if h.hooks != nil {
				h.hooks.Stepped(g.id, g.eng)
			}
			if h.cfg.Stepped != nil {
				h.cfg.Stepped(g.id, g.eng)
			}
			if h.cfg.SendEffects != nil {
				h.sendEffects(g)
			}
			for _, ctrl := range g.eng.Controls() {
				if ctrl.To == 0 {
					g.queueBroadcast(&ctrl.Frame)
					continue
				}
				for _, gc := range g.conns {
					if gc.has(ctrl.To) {
						gc.sendControl(&ctrl.Frame)
					}
				}
			}
			if g.eng.ChecksumDue() {
				for _, gc := range g.conns {
					gc.sumDue = true
				}
			}
		}
		if stepped {
			g.publish()
		}
		for _, b := range g.broadcast {
			for _, gc := range g.conns {
				gc.sendFrame(b)
			}
		}
		g.broadcast = g.broadcast[:0]
		for _, gc := range g.conns {
			// The view matters when the connection's snapshot is built:
			// on its due ticks only.
			if players := gc.c.Players(); h.cfg.View != nil && len(players) > 0 && gc.Due(tick) {
				if pos, ok := h.cfg.View(g.eng.World(), players[0]); ok {
					gc.sched.SetView(pos)
				}
			}
			if gc.fullSent && gc.c.ReliableQueued() == 0 {
				// Everything queued before (and with) the snapshot was
				// acknowledged: the client holds it.
				gc.fullSent = false
				gc.enc.FullDelivered(gc.fullRev, gc.fullIDs)
			}
			if gc.enc.Stale() && gc.fullDue == 0 && !gc.fullSent {
				h.stats.StaleResyncs++
				gc.fullDue = proto.CauseResync
			}
			if gc.fullDue != 0 && fulls < maxFullsPerTick {
				if gc.sendFull(gc.fullDue, now) {
					fulls++
				}
			}
		}
	}
	if t, ok := h.cfg.Handler.(tickwire.Ticker); ok {
		t.Tick(now, tick)
	}
}

// sendEffects sends the effects of the step g just ran that
// Config.SendEffects networks.
func (h *Host) sendEffects(g *hostedGame) {
	for i := range g.eng.Effects() {
		e := &g.eng.Effects()[i].Effect
		if e.Kind == sim.EffectSpawn {
			continue
		}
		to, ok := h.cfg.SendEffects(e)
		if !ok {
			continue
		}
		f := proto.EffectFrame{Tick: e.Tick, Kind: e.Kind, Player: e.Player, Entity: e.Entity, Data: e.Data}
		b, _ := f.Append(h.scratch[:0])
		h.scratch = b
		for _, gc := range g.conns {
			if to == 0 || gc.has(to) {
				gc.sendFrame(b)
			}
		}
		h.stats.Effects++
	}
}

func (g *hostedGame) queueBroadcast(f *proto.ControlFrame) {
	b, err := f.Append(nil)
	if err == nil {
		g.broadcast = append(g.broadcast, b)
	}
}

func (gc *gameConn) has(player uint16) bool {
	return slices.Contains(gc.c.Players(), player)
}

func (gc *gameConn) sendControl(f *proto.ControlFrame) {
	h := gc.host
	b, err := f.Append(h.scratch[:0])
	if err != nil {
		return
	}
	h.scratch = b
	gc.sendFrame(b)
}

// kickOverflowed disconnects the connections whose backlog overflowed.
func (h *Host) kickOverflowed() {
	if h.overflowed == 0 {
		return
	}
	for _, g := range h.games {
		for _, gc := range g.conns {
			if gc.overflow {
				h.kicks = append(h.kicks, gc.c)
			}
		}
	}
	for _, c := range h.kicks {
		h.log.Warn("game frames not acknowledged: disconnecting", "conn", c.ID())
		c.Close(proto.DisconnectTooSlow)
		h.stats.BacklogKicks++
	}
	clear(h.kicks)
	h.kicks = h.kicks[:0]
	h.overflowed = 0
}

// sendFrame queues an encoded game frame on the reliable channel and
// counts it, or keeps a copy in the backlog while the queue is full (or
// older frames wait there).
func (gc *gameConn) sendFrame(b []byte) error {
	if len(gc.backlog) == 0 {
		err := gc.queueFrame(b)
		if !errors.Is(err, tickwire.ErrQueueFull) {
			return err
		}
	}
	if gc.overflow || gc.backlogBytes+len(b) > maxBacklog {
		// Closed at the next tick, not here: the caller may be walking
		// the game's connections.
		if !gc.overflow {
			gc.overflow = true
			gc.host.overflowed++
		}
		return tickwire.ErrQueueFull
	}
	gc.backlog = append(gc.backlog, slices.Clone(b))
	gc.backlogBytes += len(b)
	gc.host.stats.FramesHeld++
	return nil
}

// queueFrame queues a game frame on the reliable channel and counts it.
func (gc *gameConn) queueFrame(b []byte) error {
	err := gc.c.SendFrame(b)
	if err == nil {
		gc.frames++
	}
	return err
}

// sendBacklog queues what the backlog holds, as far as the reliable
// queue takes it.
func (gc *gameConn) sendBacklog() {
	k := 0
	for ; k < len(gc.backlog); k++ {
		if gc.queueFrame(gc.backlog[k]) != nil {
			break
		}
		gc.backlogBytes -= len(gc.backlog[k])
	}
	gc.backlog = slices.Delete(gc.backlog, 0, k)
}

// sendFull queues the game's latest state as a compressed full snapshot
// on the reliable channel, and reports whether it compressed one (the
// game's last encoding is reused when it is of the same state and
// cause). A snapshot that does not fit the reliable queue stays due.
func (gc *gameConn) sendFull(cause proto.SnapshotCause, now time.Time) (encoded bool) {
	h := gc.host
	g := gc.game
	if cause == proto.CauseResync {
		// The client may hold anything: forget what it acknowledged,
		// right before the snapshot of the ring's latest state.
		gc.enc.Reset()
		gc.sched.Reset()
	}
	latest := g.ring.Latest()
	rev := g.ring.Revision()
	if g.full == nil || g.fullRev != rev || g.fullCause != cause {
		b, err := h.codecs.AppendFullSnapshot(g.full[:0], latest, cause, rev, h.codec)
		if err != nil {
			h.log.Warn("full snapshot", "game", g.id, "err", err)
			gc.fullDue = 0
			return false
		}
		g.full, g.fullRev, g.fullCause = b, rev, cause
		h.stats.FullEncodes++
		encoded = true
	}
	if len(gc.backlog) > 0 || gc.queueFrame(g.full) != nil {
		h.stats.SnapshotLate++
		return encoded // still due: try again next tick
	}
	h.stats.FullSnapshots++
	gc.fullDue = 0
	gc.fullAt = now
	gc.fullRev = rev
	gc.fullIDs = append(gc.fullIDs[:0], latest.IDs...)
	gc.fullSent = true
	return encoded
}

// Frame handles the game frames of a client packet.
func (gc *gameConn) Frame(t proto.FrameType, f []byte, p *tickwire.PacketInfo) error {
	h := gc.host
	switch t {
	case proto.FrameInput:
		in, _, err := proto.ParseInputFrame(f)
		if err == nil && !gc.has(in.Player) {
			err = errForeignPlayer
		}
		if err == nil {
			err = gc.game.eng.ReceiveInput(p.Time, &p.Header, &in)
		}
		if err == nil {
			gc.holding = false
			gc.host.brought(gc.game, in.Player, in.Tick)
		}
		if err != nil {
			h.stats.BadFrames++
			return err
		}
	case proto.FrameResyncRequest:
		req, _, err := proto.ParseResyncRequestFrame(f)
		if err != nil {
			h.stats.BadFrames++
			return err
		}
		if req.Reason == proto.ResyncChecksum {
			h.stats.Desyncs++
			h.log.Warn("client desynced", "game", gc.game.id, "conn", gc.c.ID(), "tick", req.Tick)
		}
		if gc.fullDue != 0 || gc.fullSent || p.Time.Sub(gc.fullAt) < resyncCooldown {
			// One full snapshot at a time, and no sooner than the
			// cooldown: the client asks again while it still needs one.
			h.stats.ResyncsIgnored++
			return nil
		}
		h.stats.Resyncs++
		gc.fullDue = proto.CauseResync
	default:
		var err error = errUnexpectedFrame
		if h.hooks != nil {
			err = h.hooks.Frame(gc.c, t, f)
		}
		if err != nil {
			h.stats.BadFrames++
		}
		return err
	}
	return nil
}

var (
	errForeignPlayer   = errors.New("game: input for a player the connection does not carry")
	errUnexpectedFrame = errors.New("game: unexpected frame type")
)

// Due paces the connection's packets (Pacer): due on one tick in
// Config.SnapshotInterval, the server's tick.
func (gc *gameConn) Due(tick uint32) bool {
	return (tick+gc.phase)%uint32(gc.host.cfg.SnapshotInterval) == 0
}

// AppendFrames writes this tick's frames for the connection, on its due
// ticks only (Due): input acks of its players, then the snapshot delta in
// the room left, then, when one is due (every
// Config.Sim.ChecksumInterval ticks), the checksum of the entities
// that delta carried (sim.Checksummer.EntitiesSum). A packet that goes
// between due ticks (reliable data queued) carries none of them: the
// client's interpolation clock reads the snapshots' cadence.
func (gc *gameConn) AppendFrames(b []byte, room int, pi *tickwire.PacketInfo) []byte {
	if !gc.Due(gc.host.srv.Tick()) {
		return b
	}
	start := len(b)
	g := gc.game
	pn := pi.Number
	gc.now = pi.Time
	gc.learnFates()
	for _, p := range gc.c.Players() {
		if ack, ok := g.eng.InputAck(p); ok {
			ack.Frames = gc.frames
			if nb, err := ack.Append(b); err == nil && len(nb)-start <= room {
				b = nb
			}
		}
	}
	reserve := 0
	if gc.sumDue {
		reserve = (&proto.ChecksumFrame{}).Len()
	}
	left := room - (len(b) - start) - reserve
	// The packet is ranked, sized and written in the building worker's
	// scratch (there are Config.Workers, and no more workers).
	ps := &gc.host.packets[gc.c.Worker()]
	gc.enc.UseScratch(&ps.enc)
	gc.sched.UseScratch(&ps.sched)
	// Prepared (aligned with the ring) every tick, even with no room for
	// a snapshot delta, so that it never falls far behind.
	gc.enc.Prepare()
	if left < proto.SnapshotDeltaHeaderSize+8 {
		gc.sched.Update(g.world)
		return b
	}
	sel, ok := gc.sched.Schedule(gc.now, g.world, left, gc.enc)
	if !ok {
		return b
	}
	nb, err := gc.enc.AppendFrame(b, uint16(pn), sel)
	if err != nil {
		gc.host.log.Warn("snapshot delta", "game", g.id, "err", err)
		return b
	}
	b = nb
	if gc.sumDue && len(sel) > 0 {
		sum := proto.ChecksumFrame{Tick: g.ring.Latest().Tick, Sum: gc.host.sum.EntitiesSum(g.ring.Latest(), sel)}
		if nb, err := sum.Append(b); err == nil {
			b = nb
			gc.sumDue = false
		}
	}
	return b
}

// Ticks name the game's newest state in the header of this connection's
// packets.
func (gc *gameConn) Ticks() tickwire.Ticks {
	t := gc.game.eng.Tick()
	return tickwire.Ticks{Tick: t, InterpFrom: t, InterpTo: t}
}

// Delivered and Lost promote baselines and re-prioritise what a lost
// packet carried.
func (gc *gameConn) Delivered(pn uint64) { gc.fate(pn << 1) }

func (gc *gameConn) Lost(pn uint64) { gc.fate(pn<<1 | 1) }

func (gc *gameConn) fate(f uint64) {
	if len(gc.fates) == maxFates {
		gc.learnFates()
	}
	gc.fates = append(gc.fates, f)
}

// learnFates tells the encoder what became of the packets sent, and the
// scheduler what the lost ones carried.
func (gc *gameConn) learnFates() {
	for _, f := range gc.fates {
		seq := uint16(f >> 1)
		if f&1 == 0 {
			gc.enc.Delivered(seq)
			continue
		}
		ids, known := gc.enc.Lost(seq, gc.lostIDs[:0])
		if known {
			gc.sched.Lost(ids)
		} else {
			gc.sched.LostUnknown()
		}
		gc.lostIDs = ids[:0]
	}
	gc.fates = gc.fates[:0]
}

// noHandler is the Config.Handler of a host given none.
type noHandler struct{}

func (noHandler) Connected(*tickwire.Conn)                            {}
func (noHandler) Message(*tickwire.Conn, *tickwire.Message)           {}
func (noHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
