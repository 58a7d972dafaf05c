package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// ServerConfig configures the server engine. The zero value of every
// field means its documented default.
type ServerConfig struct {
	// TickRate is the fixed simulation rate in Hz (default 60).
	TickRate int
	// InputBufferTicks is how far ahead of the simulation (in ticks) a
	// player's input may arrive and still be kept (default 64, rounded up
	// to a power of two; at least proto.MaxInputsPerFrame).
	InputBufferTicks int
	// ChecksumInterval: a checksum of the networked state is due every
	// this many ticks (default 60; negative disables; see Checksum).
	ChecksumInterval int
	// History is how long body history is kept for lag compensation
	// (default 1 s).
	History time.Duration
	// MaxRewind bounds lag compensation: how far before an input's
	// arrival the world it rendered may be (default 200 ms). Beyond it
	// (and for views outside History or in the future) Tick.Rewind
	// clamps: it rebuilds the world at arrival - MaxRewind (at the oldest
	// recorded or the newest state if those are nearer) instead of the
	// view the client named, and sets RewindInfo.Clamped. A player whose
	// round trip plus interpolation delay exceeds MaxRewind therefore has
	// to lead its targets by the excess.
	MaxRewind time.Duration
	// MaxCatchUp and MaxBehind configure the TickClock (defaults 4 ticks,
	// 250 ms).
	MaxCatchUp int
	MaxBehind  time.Duration
	// SpawnsPerTick is how many predicted spawns a player may make per
	// tick (default 4; see SpawnIDs). Clients must use the same value.
	SpawnsPerTick int
	// LateMessages is the policy for postmarked messages that arrive late
	// (default RunLate).
	LateMessages LateMessagePolicy
}

// Validate reports the first field of c that is out of range, as a
// *ConfigError; zero fields take their defaults.
func (c ServerConfig) Validate() error { return c.defaults() }

func (c *ServerConfig) defaults() error {
	if c.TickRate == 0 {
		c.TickRate = 60
	}
	if c.TickRate < 1 || c.TickRate > 1000 {
		return &ConfigError{"TickRate", "must be 1..1000"}
	}
	if c.InputBufferTicks == 0 {
		c.InputBufferTicks = 64
	}
	c.InputBufferTicks = max(c.InputBufferTicks, proto.MaxInputsPerFrame)
	if c.ChecksumInterval == 0 {
		c.ChecksumInterval = 60
	}
	if c.History == 0 {
		c.History = time.Second
	}
	if c.MaxRewind == 0 {
		c.MaxRewind = 200 * time.Millisecond
	}
	if c.History < 0 || c.MaxRewind < 0 || c.MaxRewind > c.History {
		return &ConfigError{"MaxRewind", "must be within History"}
	}
	if c.SpawnsPerTick == 0 {
		c.SpawnsPerTick = 4
	}
	return nil
}

// Control is a control frame for one player (To) or for everyone (To 0).
type Control struct {
	To    uint16
	Frame proto.ControlFrame
}

// ServerStats are the server engine's counters.
type ServerStats struct {
	Ticks uint64
	// Inputs stored, and the drops (see InputBuffer).
	InputsReceived, InputsStale, InputsLate, InputsTooEarly uint64
	// InputsMissing counts (player, tick) pairs simulated without input.
	InputsMissing uint64
	// ActionsRejected counts actions ValidateAction rejected;
	// ActionsLate those rejected because their input arrived after their
	// tick was simulated without it.
	ActionsRejected, ActionsLate uint64
	// MessagesLate and MessagesDropped count late postmarked messages.
	MessagesLate, MessagesDropped uint64
	// Reanchors counts schedule re-anchors (see TickClock).
	Reanchors uint64
	// RewindsClamped counts lag compensation requests beyond the policy.
	RewindsClamped uint64
	// SnapshotErrors counts ticks whose own snapshot ReadSnapshot
	// rejected (a game bug: lag compensation used stale bodies).
	SnapshotErrors uint64
	// SpawnCollisions and SpawnsExhausted come from SpawnIDs.
	SpawnCollisions, SpawnsExhausted uint64
}

type serverPlayer struct {
	slot uint16
	buf  *InputBuffer
	cur  Taken
	ack  proto.InputAckFrame
	// rewound is set when the current step rewound for the player, with
	// the view it used (for StepRecord).
	rewound bool
	used    View
}

// Server is the authoritative tick engine: it buffers players' inputs by
// tick, steps the game at a fixed rate, and after every step exposes the
// state snapshot, per-player input acks (with input ages for clock sync),
// the periodic checksum, and control frames (rejected actions, late
// messages). It does no I/O, reads no clock and starts no goroutines;
// one goroutine drives it.
type Server struct {
	cfg     ServerConfig
	schema  Schema
	period  time.Duration
	game    Game
	scratch Game
	clock   TickClock
	started bool
	paused  bool
	tick    uint32

	players  []*serverPlayer
	freeBufs []*InputBuffer
	inputs   []PlayerInput
	ctx      Tick
	spawn    spawnContext
	fx       effectLog
	rw       serverRewinder
	msgs     postmarkQueue
	ran      []Message // the messages the last step ran

	// membership changes since the last step, and those applied before it
	changes, stepChanges []MemberChange
	replay               bool // Replay is stepping: rewinds use the record

	snap         deltacomp.Snapshot
	hist         *BodyHistory
	histFirst    uint32
	sum          Checksummer
	hasSum       bool
	controls     []Control
	lateControls []lateNote
	lateActions  []lateNote // actions whose input arrived late (player, tick)
	text         []byte
	revision     uint32
	stats        ServerStats
	retired      ServerStats // counters of players who left
}

// NewServer returns a server engine for game, whose current state is the
// world the server starts from.
func NewServer(game Game, cfg ServerConfig) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	schema := game.Schema()
	if err := schema.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, schema: schema, game: game, scratch: game.Clone()}
	s.period = time.Second / time.Duration(cfg.TickRate)
	s.clock = TickClock{Period: s.period, MaxCatchUp: cfg.MaxCatchUp, MaxBehind: cfg.MaxBehind}
	s.hist = NewBodyHistory(int(cfg.History/s.period) + 1)
	s.spawn.ids = NewSpawnIDs(cfg.SpawnsPerTick)
	s.rw.s = s
	s.ctx.spawn, s.ctx.effects, s.ctx.rewind = &s.spawn, &s.fx, &s.rw
	return s, nil
}

// Start anchors the tick schedule: the world is the state at tick, and
// tick+1 is due one period after now.
func (s *Server) Start(now time.Time, tick uint32) {
	s.tick = tick
	s.clock.Start(now.Add(s.period), tick+1)
	s.started = true
	s.writeState(tick)
	s.histFirst = tick
}

// Period is the fixed step.
func (s *Server) Period() time.Duration { return s.period }

// Config is the engine's configuration, defaults filled in.
func (s *Server) Config() ServerConfig { return s.cfg }

// Tick is the tick of the current state (the last simulated tick).
func (s *Server) Tick() uint32 { return s.tick }

// Scheduled is the time tick is (or was) due.
func (s *Server) Scheduled(tick uint32) time.Time { return s.clock.TimeOf(tick) }

// Due is how many ticks to run now (call Step that many times, handling
// each step's output in between). It is 0 while a join or leave holds
// the tick loop paused.
func (s *Server) Due(now time.Time) int {
	if s.paused {
		return 0
	}
	return s.clock.Due(now)
}

// World is the authoritative world (read it between steps only).
func (s *Server) World() Game { return s.game }

// Revision counts structural changes (joins and leaves).
func (s *Server) Revision() uint32 { return s.revision }

// ReceiveInput stores the inputs of an input frame that arrived at now in
// a packet with header h (its Tick and interpolation fields name what the
// client rendered; h may be nil when unknown). The caller must have
// checked that f.Player belongs to the sending connection.
func (s *Server) ReceiveInput(now time.Time, h *proto.Header, f *proto.InputFrame) error {
	p := s.player(f.Player)
	if p == nil {
		return ErrNoPlayer
	}
	if int(f.Size) != s.schema.InputSize || len(f.Data) != int(f.Count)*int(f.Size) {
		return fmt.Errorf("sim: input size %d, want %d", f.Size, s.schema.InputSize)
	}
	first := f.FirstTick()
	ab := s.schema.ActionBytes
	for i := range int(f.Count) {
		t := first + uint32(i)
		var v View
		if h != nil {
			v = ViewFromHeader(h).shift(h.Tick - t)
		}
		in := f.Input(i)
		if p.buf.Put(now, t, s.tick, in, v) && ab > 0 && !allZero(in[len(in)-ab:]) {
			// Its tick ran without it: the action never happened.
			s.stats.ActionsLate++
			s.lateActions = append(s.lateActions, lateNote{player: f.Player, tick: t})
		}
	}
	return nil
}

// errLateAction is the reason of a rejection for an input that arrived
// after its tick was simulated without it.
const errLateAction = "arrived after its tick"

// ReceiveMessage queues a tick-postmarked message from player that
// arrived at now, to run at its tick. A message for a tick already
// simulated follows the LateMessages policy and produces a
// proto.ControlMessageLate for the player in the next step's Controls.
// Messages postmarked further ahead than the input buffer run at that
// horizon. Unpostmarked messages are not the engine's business.
func (s *Server) ReceiveMessage(now time.Time, player uint16, f *proto.MessageFrame) error {
	if s.player(player) == nil {
		return ErrNoPlayer
	}
	m := Message{Player: player, Channel: f.Channel, Tick: f.Tick, Data: f.Data}
	next := s.tick + 1
	if !f.Postmarked {
		m.Tick = next
	}
	d := int32(m.Tick - next)
	switch {
	case d >= 0:
		runAt := m.Tick
		if int(d) > s.cfg.InputBufferTicks {
			runAt = next + uint32(s.cfg.InputBufferTicks)
		}
		s.msgs.add(m, runAt)
	case s.cfg.LateMessages == DropLate:
		s.stats.MessagesDropped++
		s.lateControls = append(s.lateControls, lateNote{player: player, channel: f.Channel, tick: f.Tick})
	default:
		m.Late = true
		s.stats.MessagesLate++
		s.msgs.add(m, next)
		s.lateControls = append(s.lateControls, lateNote{player: player, channel: f.Channel, tick: f.Tick, ranAt: next})
	}
	return nil
}

type lateNote struct {
	player  uint16
	channel uint8
	tick    uint32
	ranAt   uint32
}

// Step simulates the next tick. Afterwards Snapshot, InputAck, Checksum,
// Controls and Effects describe it until the next Step.
func (s *Server) Step() {
	if !s.started || s.paused {
		return
	}
	tick := s.clock.Next()
	sched := s.clock.TimeOf(tick)
	s.controls = s.controls[:0]
	s.text = s.text[:0]
	s.fx.events = s.fx.events[:0]
	for _, n := range s.lateControls {
		s.controls = append(s.controls, Control{To: n.player, Frame: proto.ControlFrame{
			Code: proto.ControlMessageLate, Player: n.player, Tick: n.tick, Arg: proto.MessageLateArg(n.ranAt, n.channel)}})
	}
	s.lateControls = s.lateControls[:0]
	for _, n := range s.lateActions {
		s.rejectText(n.player, n.tick, errLateAction)
	}
	s.lateActions = s.lateActions[:0]
	s.stepChanges = append(s.stepChanges[:0], s.changes...)
	s.changes = s.changes[:0]

	s.inputs = s.inputs[:0]
	ab := s.schema.ActionBytes
	for _, p := range s.players {
		p.cur = p.buf.Take(tick, sched)
		p.rewound = false
		newest, _ := p.buf.Newest()
		p.ack = proto.InputAckFrame{Player: p.slot, Newest: newest, Age: p.cur.Age}
		in := PlayerInput{Player: p.slot, Data: p.cur.Data, Missing: p.cur.Missing}
		if err := rejectAction(s.game, tick, &in, ab); err != nil {
			s.stats.ActionsRejected++
			s.reject(p.slot, tick, err)
		}
		s.inputs = append(s.inputs, in)
	}

	s.ctx.Tick = tick
	s.ctx.Inputs = s.inputs
	s.ctx.Messages = s.msgs.take(tick)
	s.ctx.Predicted = false
	s.spawn.ids.SetLive(s.snap.IDs)
	s.spawn.ids.Begin(tick)
	s.game.Step(&s.ctx)
	s.ran = s.ctx.Messages
	s.ctx.Messages = nil

	s.clock.Ran()
	s.tick = tick
	s.stats.Ticks++
	s.writeState(tick)
}

// writeState snapshots the world at tick, records its bodies (through the
// snapshot round trip, so they are exactly what clients rebuild) and the
// checksum when due.
func (s *Server) writeState(tick uint32) {
	s.snap.Reset(tick, s.schema.RecordSize)
	s.game.WriteSnapshot(&s.snap)
	bodies := s.hist.Put(tick)
	if err := s.scratch.ReadSnapshot(&s.snap); err != nil {
		s.stats.SnapshotErrors++
		bodies = s.game.AppendBodies(bodies)
	} else {
		bodies = s.scratch.AppendBodies(bodies)
	}
	s.hist.Set(tick, bodies)
	s.hasSum = false
	if iv := s.cfg.ChecksumInterval; iv > 0 && tick%uint32(iv) == 0 {
		s.hasSum = true
	}
}

func (s *Server) reject(player uint16, tick uint32, err error) {
	s.rejectText(player, tick, err.Error())
}

func (s *Server) rejectText(player uint16, tick uint32, reason string) {
	start := len(s.text)
	s.text = append(s.text, reason...)
	if len(s.text)-start > proto.MaxControlText {
		s.text = s.text[:start+proto.MaxControlText]
	}
	s.controls = append(s.controls, Control{To: player, Frame: proto.ControlFrame{
		Code: proto.ControlActionRejected, Player: player, Tick: tick,
		Text: s.text[start:len(s.text):len(s.text)]}})
}

// Snapshot is the networked state after the last step (or join/leave
// hook, see Join). The engine reuses it: copy what you keep (the
// deltacomp ring does).
func (s *Server) Snapshot() *deltacomp.Snapshot { return &s.snap }

// InputAck is the InputAckFrame for player in the update for the last
// step's tick: the newest input tick received and how long the input for
// that tick waited (or proto.InputAgeMissing). ok is false for a player
// that is not joined or that no step has covered yet (just joined).
func (s *Server) InputAck(player uint16) (proto.InputAckFrame, bool) {
	p := s.player(player)
	if p == nil || p.ack.Player == 0 {
		return proto.InputAckFrame{}, false
	}
	return p.ack, true
}

// ChecksumDue reports whether a checksum is due at the last step's tick
// (every ChecksumInterval ticks). A host that replicates with interest
// management sends each client Checksummer.EntitiesSum of the entities
// that client's delta carried; Checksum is the sum of the whole state.
func (s *Server) ChecksumDue() bool { return s.hasSum }

// Checksum is the checksum frame of the whole networked state
// (Checksummer.SnapshotSum) at the last step's tick, if one is due then.
// It is computed when asked for.
func (s *Server) Checksum() (proto.ChecksumFrame, bool) {
	if !s.hasSum {
		return proto.ChecksumFrame{}, false
	}
	return proto.ChecksumFrame{Tick: s.tick, Sum: s.sum.SnapshotSum(&s.snap)}, true
}

// Controls are the control frames the last step produced: rejected
// actions (to the player; Tick is the action's tick, which is how a
// client names it), among them those whose input arrived after their tick
// had run without it (Text "arrived after its tick", in the step after
// the input arrived), and late postmarked messages. Text aliases
// engine memory until the next Step.
func (s *Server) Controls() []Control { return s.controls }

// Effects are the effects the last step emitted (status
// EffectAuthoritative), for games that network them.
func (s *Server) Effects() []EffectEvent { return s.fx.events }

// Players lists joined player slots in ascending order (appended to dst).
func (s *Server) Players(dst []uint16) []uint16 {
	for _, p := range s.players {
		dst = append(dst, p.slot)
	}
	return dst
}

// Stats returns the counters.
func (s *Server) Stats() ServerStats {
	st := s.stats
	st.InputsReceived += s.retired.InputsReceived
	st.InputsStale += s.retired.InputsStale
	st.InputsLate += s.retired.InputsLate
	st.InputsTooEarly += s.retired.InputsTooEarly
	st.InputsMissing += s.retired.InputsMissing
	for _, p := range s.players {
		b := p.buf
		st.InputsReceived += b.Received
		st.InputsStale += b.Stale + b.Duplicates
		st.InputsLate += b.Late
		st.InputsTooEarly += b.TooEarly
		st.InputsMissing += b.Missing
	}
	st.Reanchors = s.clock.Reanchors
	st.SpawnCollisions = s.spawn.ids.Collisions
	st.SpawnsExhausted = s.spawn.ids.Exhausted
	return st
}

// PlayerStats returns player's input buffer (its counters), or nil.
func (s *Server) PlayerStats(player uint16) *InputBuffer {
	if p := s.player(player); p != nil {
		return p.buf
	}
	return nil
}

func (s *Server) player(slot uint16) *serverPlayer {
	i, ok := slices.BinarySearchFunc(s.players, slot, func(p *serverPlayer, slot uint16) int {
		return int(p.slot) - int(slot)
	})
	if !ok {
		return nil
	}
	return s.players[i]
}

// Join adds player in a critical section: the tick loop is
// paused (Due reports 0, Step does nothing), the player gets an input
// buffer (its defaults: no input, all zeros), OnPlayerJoin adds its
// entities to the world, and the revision is bumped. The loop always
// resumes, even when the hook fails or panics; then the world and the
// player list are restored to their state before the call and an error
// is returned (ErrJoinPanicked for a panic).
//
// The join takes effect at the next tick: the first snapshot that holds
// the player is the one after the next Step. Send that snapshot in full
// to the joiner (proto.CauseJoin) and the returned control frame
// (ControlPlayerJoined, Tick = that tick, Arg = the new revision) to
// everyone else, whose next delta carries the new entities.
func (s *Server) Join(player uint16) (c Control, err error) {
	if !s.started {
		return c, ErrNotStarted
	}
	if player == 0 || player > proto.MaxSpawner {
		return c, ErrBadPlayer
	}
	if s.player(player) != nil {
		return c, ErrPlayerExists
	}
	s.paused = true
	defer func() { s.paused = false }()
	s.scratch.CopyFrom(s.game)
	s.addPlayer(player)
	ok := false
	defer func() {
		if ok {
			return
		}
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrJoinPanicked, r)
		}
		s.game.CopyFrom(s.scratch)
		s.removePlayer(player, false)
	}()
	s.hookContext()
	if err = s.game.OnPlayerJoin(&s.ctx, player); err != nil {
		return c, err
	}
	ok = true
	s.revision++
	s.changes = append(s.changes, MemberChange{Player: player, Join: true})
	return Control{Frame: proto.ControlFrame{Code: proto.ControlPlayerJoined, Player: player,
		Tick: s.tick + 1, Arg: uint64(s.revision)}}, nil
}

// Leave removes player in a critical section: OnPlayerLeave removes or
// hands over its entities, its input buffer is dropped, and the revision
// is bumped. The returned frame (ControlPlayerLeft, Tick = the first tick
// without the player, Arg = the new revision, Text = reason) goes to
// everyone. A panicking hook still removes the player; the panic is
// returned as an error.
func (s *Server) Leave(player uint16, reason string) (c Control, err error) {
	if s.player(player) == nil {
		return c, ErrNoPlayer
	}
	s.paused = true
	defer func() { s.paused = false }()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sim: OnPlayerLeave panicked: %v", r)
		}
		s.removePlayer(player, true)
		s.revision++
		s.changes = append(s.changes, MemberChange{Player: player, Reason: reason})
		start := len(s.text)
		s.text = append(s.text, reason[:min(len(reason), proto.MaxControlText)]...)
		c = Control{Frame: proto.ControlFrame{Code: proto.ControlPlayerLeft, Player: player,
			Tick: s.tick + 1, Arg: uint64(s.revision), Text: s.text[start:]}}
	}()
	s.hookContext()
	s.game.OnPlayerLeave(&s.ctx, player, reason)
	return c, nil
}

func (s *Server) hookContext() {
	s.ctx.Tick = s.tick
	s.ctx.Inputs = s.inputs[:0]
	s.ctx.Messages = nil
	s.ctx.Predicted = false
	s.spawn.ids.SetLive(s.snap.IDs)
	s.spawn.ids.Begin(s.tick)
}

func (s *Server) addPlayer(slot uint16) {
	var b *InputBuffer
	if n := len(s.freeBufs); n > 0 {
		b, s.freeBufs = s.freeBufs[n-1], s.freeBufs[:n-1]
		b.Reset()
	} else {
		b = NewInputBuffer(s.cfg.InputBufferTicks, s.schema.InputSize, s.schema.ActionBytes)
	}
	p := &serverPlayer{slot: slot, buf: b}
	i, _ := slices.BinarySearchFunc(s.players, slot, func(p *serverPlayer, slot uint16) int {
		return int(p.slot) - int(slot)
	})
	s.players = slices.Insert(s.players, i, p)
}

func (s *Server) removePlayer(slot uint16, keepStats bool) {
	i, ok := slices.BinarySearchFunc(s.players, slot, func(p *serverPlayer, slot uint16) int {
		return int(p.slot) - int(slot)
	})
	if !ok {
		return
	}
	b := s.players[i].buf
	if keepStats {
		s.retired.InputsReceived += b.Received
		s.retired.InputsStale += b.Stale + b.Duplicates
		s.retired.InputsLate += b.Late
		s.retired.InputsTooEarly += b.TooEarly
		s.retired.InputsMissing += b.Missing
	}
	s.freeBufs = append(s.freeBufs, b)
	s.players = slices.Delete(s.players, i, i+1)
}

// serverRewinder rebuilds a player's view for lag compensation.
type serverRewinder struct {
	s   *Server
	buf []Body
}

func (r *serverRewinder) rewind(tick uint32, player uint16) ([]Body, RewindInfo) {
	s := r.s
	newest := tick - 1
	var info RewindInfo
	p := s.player(player)
	if s.replay {
		info = r.replayRewind(p, tick)
	} else if p == nil || p.cur.Missing || s.ctx.Predicted {
		info.Unknown = true
		info.Used = View{From: newest, To: newest}
	} else {
		oldest := newest - uint32(s.hist.Len()-1)
		if int32(s.histFirst-oldest) > 0 {
			oldest = s.histFirst
		}
		recv := s.clock.TickAt(p.cur.Arrived)
		maxRewind := float64(s.cfg.MaxRewind) / float64(s.period)
		info.Requested = p.cur.View
		info.Used, info.Clamped = clampView(p.cur.View, tick, recv, maxRewind, oldest)
		info.Rewind = time.Duration((recv - viewTime(info.Used)) * float64(s.period))
		if info.Clamped {
			s.stats.RewindsClamped++
		}
	}
	from, ok1 := s.hist.Get(info.Used.From)
	to, ok2 := s.hist.Get(info.Used.To)
	if !ok1 || !ok2 {
		from, _ = s.hist.Get(newest)
		to = from
		info.Used = View{From: newest, To: newest}
	}
	if p != nil && !s.replay && !info.Unknown {
		p.rewound, p.used = true, info.Used
	}
	r.buf = InterpolateBodies(r.buf[:0], from, to, info.Used.Blend)
	return r.buf, info
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
