package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// MaxRollback is the largest SyncTestConfig.Rollback.
const MaxRollback = 64

// SyncTestConfig configures SyncTest. The zero value of every field means
// its documented default.
type SyncTestConfig struct {
	// Ticks is how many ticks to run (default 300).
	Ticks int
	// Rollback (K) is how many ticks are rolled back and re-simulated
	// every frame (default 8; 1..MaxRollback). A client re-simulates about
	// its round trip in ticks; pick at least that.
	Rollback int
	// Players are the players present (default {1}). OnPlayerJoin runs
	// for each, in this order, at tick 0, before the first step.
	Players []uint16
	// Inputs returns player's input for tick: Schema.InputSize bytes, or
	// nil for none (the step then gets a Missing input: the previous
	// input repeated with its action bytes zeroed, as on the server, or
	// for a CommitGame all zeros, as in sim.Lockstep). The
	// returned slice is copied. It is called once per tick and player,
	// in tick order.
	//
	// Default: a deterministic pseudo-random input per (tick, player),
	// built from a hash of both: random held bytes every tick, non-zero
	// action bytes on about one tick in four, and no input (Missing) on
	// about one tick in sixteen.
	Inputs func(tick uint32, player uint16) []byte
	// Predicted runs every step as a client's prediction (Tick.Predicted
	// set; Tick.Spawn(0) then refuses, as on a client). Default: as the
	// server's authoritative step. State sync only: a CommitGame's steps
	// are never predictions.
	Predicted bool
}

// SyncTestReport is what SyncTest did.
type SyncTestReport struct {
	// Ticks is the number of ticks simulated: the last tick reached.
	Ticks int
	// Rollbacks counts rollbacks: one per frame (tick), so it equals
	// Ticks on success.
	Rollbacks int
	// Resimulated counts re-simulated ticks, each checked against the
	// checksum of its first simulation: min(t, Rollback) summed over the
	// frames t = 1..Ticks on success.
	Resimulated int
	// Missing counts (player, tick) pairs simulated without input, and
	// Rejected the actions ValidateAction rejected, and Effects the
	// effects Step emitted, spawns included (first simulations only).
	Missing, Rejected, Effects int
	// Checksum is Checksummer.WorldSum of the final world.
	Checksum uint64
}

// DesyncError reports that a re-simulation of a tick from a restored
// state did not reproduce the state (or the effects) the first simulation
// of that tick produced: Step is not a pure function of the world and the
// Tick (map iteration order, the wall clock, global state, uninitialised
// buffers), or CopyFrom/Clone do not copy the whole state, or
// AppendCanonical does not serialise it deterministically.
type DesyncError struct {
	// Tick is the first divergent tick.
	Tick uint32
	// Want is the WorldSum after the first simulation of Tick, Got the
	// one after the re-simulation (or after the restore, see Restored; or
	// the sums of the effects, see Effects).
	Want, Got uint64
	// Rollback is the frame (1-based: the rollback after tick Rollback was
	// first simulated) whose re-simulation diverged. It restored the state
	// of tick From.
	Rollback int
	From     uint32
	// Restored is set when the restored state of Tick (= From) already
	// differed from the state saved there: Clone or CopyFrom do not make
	// an independent, complete copy (or AppendCanonical is not a function
	// of the state).
	Restored bool
	// Effects is set when the re-simulated state matched but the effects
	// the step emitted (Tick.Emit and Tick.Spawn, in order, with their
	// data) did not: a client would cancel and replay them.
	Effects bool
}

func (e *DesyncError) Error() string {
	if e.Effects {
		return fmt.Sprintf("sim: sync test: desync at tick %d: re-simulated from tick %d (rollback %d) it emits other effects (sum %#016x, first %#016x)",
			e.Tick, e.From, e.Rollback, e.Got, e.Want)
	}
	if e.Restored {
		return fmt.Sprintf("sim: sync test: state of tick %d changed by saving and restoring it (rollback %d): checksum %#016x, saved %#016x; CopyFrom or Clone does not copy the whole state",
			e.Tick, e.Rollback, e.Got, e.Want)
	}
	return fmt.Sprintf("sim: sync test: desync at tick %d: re-simulated from tick %d (rollback %d) it has checksum %#016x, first simulated %#016x",
		e.Tick, e.From, e.Rollback, e.Got, e.Want)
}

// syncSlot is one saved state of the ring.
type syncSlot struct {
	world  World
	sum    uint64
	fx     uint64            // the sum of the effects the tick's step emitted
	live   []proto.NetworkID // the world's entity ids (for SpawnIDs)
	server uint32            // the spawn allocator's server counter after the tick
}

// syncInput is one player's input for one tick, as delivered before
// validation.
type syncInput struct {
	data    []byte
	missing bool
}

// syncTest is SyncTest's state.
type syncTest struct {
	cfg    SyncTestConfig
	schema Schema
	world  World
	// commits: the game is a CommitGame, stepped as sim.Lockstep steps
	// it (no spawns, effects or rewinds; a missing command is zeros);
	// otherwise a Game, stepped as sim.Server steps it
	commits bool
	copy    func(dst, src World) // the game's CopyFrom
	ring    []syncSlot
	inputs  [][]syncInput // [tick % len(ring)][player index], players sorted
	held    [][]byte      // each player's previous input
	work    [][]byte      // each player's input being validated
	sorted  []uint16
	pins    []PlayerInput
	ctx     Tick
	spawn   spawnContext
	fx      effectLog
	rw      syncRewinder
	snap    deltacomp.Snapshot
	sum     Checksummer
	report  SyncTestReport
}

// SyncTest checks that g's simulation is deterministic under rollback,
// like GGRS's SyncTestSession: it runs Ticks ticks, and after every tick t
// restores the state saved at tick t−K (K = Rollback; the initial state
// while t ≤ K), re-simulates the ticks up to t with the same inputs and
// compares each re-simulated tick's Checksummer.WorldSum with the one the
// first simulation produced, and the effects its step emitted too. Before
// re-simulating it checks that the restored state still has the checksum
// it was saved with (a CopyFrom or Clone that loses or shares state). The
// first mismatch is returned as a *DesyncError naming the first divergent
// tick, with the report so far.
//
// g is the initial world (tick 0), a Game or a CommitGame; it is
// cloned, not modified. Steps get inputs sorted by player and actions
// validated by ValidateAction before every step (zeroed and Rejected on
// error), and no messages. A Game's steps get the rest of what
// sim.Server gives them: Missing inputs repeating the previous one with
// its actions zeroed, working Tick.Spawn and Tick.Emit, and Tick.Rewind
// returning the bodies of the state before the step
// (RewindInfo.Unknown, as for a missing input). A CommitGame's get what
// sim.Lockstep gives them: a Missing input is all zeros, and Spawn,
// Emit and Rewind do nothing.
//
// Every step of a frame runs on preallocated worlds and buffers: a game
// whose own Step and CopyFrom do not allocate runs without allocating
// after setup.
func SyncTest(g World, cfg SyncTestConfig) (SyncTestReport, error) {
	s, err := newSyncTest(g, cfg)
	if err != nil {
		return SyncTestReport{}, err
	}
	err = s.run()
	return s.report, err
}

func (c *SyncTestConfig) defaults() error {
	if c.Ticks == 0 {
		c.Ticks = 300
	}
	if c.Ticks < 0 {
		return &ConfigError{"SyncTestConfig.Ticks", fmt.Sprintf("%d is negative", c.Ticks)}
	}
	if c.Ticks > math.MaxInt32 {
		return &ConfigError{"SyncTestConfig.Ticks", fmt.Sprintf("%d is above %d", c.Ticks, math.MaxInt32)}
	}
	if c.Rollback == 0 {
		c.Rollback = 8
	}
	if c.Rollback < 1 || c.Rollback > MaxRollback {
		return &ConfigError{"SyncTestConfig.Rollback", fmt.Sprintf("%d is out of range 1..%d", c.Rollback, MaxRollback)}
	}
	if len(c.Players) == 0 {
		c.Players = []uint16{1}
	}
	for i, p := range c.Players {
		if p == 0 || p > proto.MaxSpawner {
			return &ConfigError{"SyncTestConfig.Players", fmt.Sprintf("slot %d is not a player slot (1..%d)", p, proto.MaxSpawner)}
		}
		for _, q := range c.Players[:i] {
			if q == p {
				return &ConfigError{"SyncTestConfig.Players", fmt.Sprintf("slot %d is listed twice", p)}
			}
		}
	}
	return nil
}

var (
	errNilGame  = errors.New("sim: sync test: nil game")
	errGameKind = errors.New("sim: sync test: the game is neither a Game nor a CommitGame")
)

func newSyncTest(g World, cfg SyncTestConfig) (*syncTest, error) {
	if g == nil {
		return nil, errNilGame
	}
	cfg.Players = slices.Clone(cfg.Players)
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	schema := g.Schema()
	s := &syncTest{cfg: cfg, schema: schema}
	var clone func() World
	switch g := g.(type) {
	case Game:
		if err := schema.validate(); err != nil {
			return nil, err
		}
		clone = func() World { return g.Clone() }
		s.copy = func(dst, src World) { dst.(Game).CopyFrom(src.(Game)) }
	case CommitGame:
		if err := schema.validateInputs(); err != nil {
			return nil, err
		}
		clone = func() World { return g.Clone() }
		s.copy = func(dst, src World) { dst.(CommitGame).CopyFrom(src.(CommitGame)) }
		s.commits, s.cfg.Predicted = true, false
	default:
		return nil, errGameKind
	}
	s.world = clone()
	n := cfg.Rollback + 1
	s.ring = make([]syncSlot, n)
	for i := range s.ring {
		s.ring[i].world = clone()
	}
	s.sorted = slices.Clone(cfg.Players)
	slices.Sort(s.sorted)
	np := len(s.sorted)
	s.inputs = make([][]syncInput, n)
	for i := range s.inputs {
		s.inputs[i] = make([]syncInput, np)
		for p := range s.inputs[i] {
			s.inputs[i][p].data = make([]byte, schema.InputSize)
		}
	}
	s.held = make([][]byte, np)
	s.work = make([][]byte, np)
	for p := range np {
		s.held[p] = make([]byte, schema.InputSize)
		s.work[p] = make([]byte, schema.InputSize)
	}
	s.pins = make([]PlayerInput, 0, np)
	s.spawn.ids = NewSpawnIDs(0)
	s.rw.s = s
	if !s.commits {
		s.ctx.spawn, s.ctx.effects, s.ctx.rewind = &s.spawn, &s.fx, &s.rw
	}
	if s.cfg.Inputs == nil {
		s.cfg.Inputs = s.defaultInput
	}
	return s, nil
}

// run joins the players at tick 0 and runs the frames.
func (s *syncTest) run() error {
	s.spawn.ids.SetLive(s.liveIDs(0))
	s.spawn.ids.Begin(0)
	s.ctx.Tick = 0
	s.ctx.Inputs = s.pins[:0]
	s.ctx.Messages = nil
	s.ctx.Predicted = false // joins run on the server only
	for _, p := range s.cfg.Players {
		if err := s.world.OnPlayerJoin(&s.ctx, p); err != nil {
			return fmt.Errorf("sim: sync test: OnPlayerJoin(%d): %w", p, err)
		}
	}
	s.save(0)
	k := uint32(s.cfg.Rollback)
	for t := uint32(1); t <= uint32(s.cfg.Ticks); t++ {
		if err := s.sample(t); err != nil {
			return err
		}
		s.step(t, true)
		s.report.Effects += len(s.fx.events)
		s.save(t)
		s.report.Ticks = int(t)

		from := uint32(0)
		if t > k {
			from = t - k
		}
		s.report.Rollbacks++
		slot := s.slot(from)
		s.copy(s.world, slot.world)
		s.spawn.ids.server = slot.server
		if got := s.sum.WorldSum(s.world); got != slot.sum {
			return &DesyncError{Tick: from, Want: slot.sum, Got: got, Rollback: int(t), From: from, Restored: true}
		}
		for u := from + 1; u <= t; u++ {
			s.step(u, false)
			s.report.Resimulated++
			sl := s.slot(u)
			if got := s.sum.WorldSum(s.world); got != sl.sum {
				return &DesyncError{Tick: u, Want: sl.sum, Got: got, Rollback: int(t), From: from}
			}
			if got := s.effectsSum(); got != sl.fx {
				return &DesyncError{Tick: u, Want: sl.fx, Got: got, Rollback: int(t), From: from, Effects: true}
			}
		}
	}
	s.report.Checksum = s.sum.WorldSum(s.world)
	return nil
}

func (s *syncTest) slot(tick uint32) *syncSlot { return &s.ring[tick%uint32(len(s.ring))] }

// save records the world as the state of tick: a copy, its checksum, its
// entity ids, the spawn allocator's counter and the sum of the effects
// the step emitted.
func (s *syncTest) save(tick uint32) {
	sl := s.slot(tick)
	s.copy(sl.world, s.world)
	sl.sum = s.sum.WorldSum(s.world)
	sl.server = s.spawn.ids.server
	sl.fx = s.effectsSum()
	sl.live = append(sl.live[:0], s.liveIDs(tick)...)
}

// liveIDs are the world's entity ids at tick, from its snapshot (a
// Game's; a CommitGame has none and spawns nothing).
func (s *syncTest) liveIDs(tick uint32) []proto.NetworkID {
	if s.commits {
		return nil
	}
	s.snap.Reset(tick, s.schema.RecordSize)
	s.world.(Game).WriteSnapshot(&s.snap)
	return s.snap.IDs
}

// sample asks for every player's input for tick and stores it in the
// ring, applying the missing-input rule.
func (s *syncTest) sample(tick uint32) error {
	row := s.inputs[tick%uint32(len(s.inputs))]
	ab := s.schema.ActionBytes
	for p, player := range s.sorted {
		in := &row[p]
		held := s.held[p]
		b := s.cfg.Inputs(tick, player)
		switch {
		case b == nil:
			in.missing = true
			s.report.Missing++
			if s.commits {
				clear(in.data) // sim.Lockstep's missing command
				continue
			}
			clear(held[len(held)-ab:])
		case len(b) != len(held):
			return fmt.Errorf("sim: sync test: Inputs returned %d bytes for player %d at tick %d, want Schema.InputSize %d or nil",
				len(b), player, tick, len(held))
		default:
			in.missing = false
			copy(held, b)
		}
		copy(in.data, held)
	}
	return nil
}

// step simulates tick on the world with its stored inputs, validating
// actions like the engine.
func (s *syncTest) step(tick uint32, first bool) {
	row := s.inputs[tick%uint32(len(s.inputs))]
	ab := s.schema.ActionBytes
	s.pins = s.pins[:0]
	for p, player := range s.sorted {
		in := &row[p]
		data := s.work[p]
		copy(data, in.data)
		pin := PlayerInput{Player: player, Data: data, Missing: in.missing}
		if rejectAction(s.world, tick, &pin, ab) != nil && first {
			s.report.Rejected++
		}
		s.pins = append(s.pins, pin)
	}
	s.fx.events = s.fx.events[:0]
	s.ctx.Tick = tick
	s.ctx.Inputs = s.pins
	s.ctx.Messages = nil
	s.ctx.Predicted = s.cfg.Predicted
	s.spawn.ids.SetLive(s.slot(tick - 1).live)
	s.spawn.ids.Begin(tick)
	s.world.Step(&s.ctx)
}

// effectsSum is FNV-1a over the effects of the last step, in order.
func (s *syncTest) effectsSum() uint64 {
	h := uint64(fnvOffset)
	for i := range s.fx.events {
		e := &s.fx.events[i].Effect
		var b [28]byte
		binary.LittleEndian.PutUint32(b[0:], e.Tick)
		binary.LittleEndian.PutUint16(b[4:], e.Kind)
		binary.LittleEndian.PutUint16(b[6:], e.Player)
		binary.LittleEndian.PutUint32(b[8:], uint32(e.Entity))
		for j, d := range e.Data {
			binary.LittleEndian.PutUint32(b[12+4*j:], uint32(d))
		}
		h = fnv1a(h, b[:])
	}
	return h
}

// defaultInput is SyncTestConfig.Inputs' default. It returns a buffer
// of the player's that sample copies at once.
func (s *syncTest) defaultInput(tick uint32, player uint16) []byte {
	h := splitmix64(uint64(tick)<<16 ^ uint64(player) ^ 0x5eed_5eed_0000_0000)
	if h&15 == 0 {
		return nil
	}
	withAction := h>>4&3 == 0
	b := s.work[s.index(player)]
	for i := range b {
		if i%8 == 0 {
			h = splitmix64(h)
		}
		b[i] = byte(h >> (8 * (i % 8)))
	}
	if !withAction {
		clear(b[len(b)-s.schema.ActionBytes:])
	}
	return b
}

func (s *syncTest) index(player uint16) int {
	for i, p := range s.sorted {
		if p == player {
			return i
		}
	}
	return -1
}

// syncRewinder answers Tick.Rewind with the bodies of the state before
// the step (the saved state of the previous tick, which the
// re-simulation has just matched), like the server for an input without
// a view.
type syncRewinder struct {
	s   *syncTest
	buf []Body
}

func (r *syncRewinder) rewind(tick uint32, player uint16) ([]Body, RewindInfo) {
	newest := tick - 1
	r.buf = r.s.slot(newest).world.(Game).AppendBodies(r.buf[:0])
	return r.buf, RewindInfo{Unknown: true, Used: View{From: newest, To: newest}}
}
