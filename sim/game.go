package sim

import (
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// World is a game's world state together with its rules: what both
// modes call. A game implements it through one of the two interfaces
// that embed it, Game for state sync (sim.Server and sim.Client, run by
// game.Host and game.Client) and CommitGame for commits mode
// (sim.Lockstep, run by commits.Host and commits.Client), each with the
// Clone and CopyFrom of its own type and what only its mode needs. One
// value is one world: the engine clones the value it is given (Clone,
// at setup) to get the extra worlds it needs and from then on only
// copies between them (CopyFrom).
//
// # Determinism
//
// Step must be a pure function of the world, the tick and the Tick
// context: the state-sync client re-simulates the same ticks again and
// again from rebuilt states, commits-mode peers simulate every tick
// independently and roll their live world back, and lag compensation
// compares results across machines. So game code must:
//
//   - use integer or fixed-point math for everything that is networked or
//     feeds back into the state (floats differ across architectures once
//     the compiler fuses multiply-adds; if you must use float64, wrap
//     every product in an explicit float64() conversion, which forbids
//     fusion, and use only correctly rounded functions like math.Sqrt);
//     package sim/fixed has the integer helpers a game usually needs;
//   - never depend on map iteration order (iterate sorted slices; keep
//     entities sorted by NetworkID, which WriteSnapshot needs anyway);
//   - never read the wall clock, the environment or global mutable state:
//     time is Tick.Tick × the fixed step, randomness is Tick.Rand, seeded
//     from the tick and a caller-chosen salt (an entity id, a player);
//   - treat Tick.Inputs as the only source of player intent.
//
// # Concurrency and buffers
//
// The engine calls a world from one goroutine at a time. Slices passed in
// (inputs, actions, snapshots) are owned by the engine and valid only for
// the duration of the call; copy what you keep. Steady-state calls must
// not allocate: reuse your slices (append to s[:0]) so that a server tick
// and a client rollback stay at zero allocations.
type World interface {
	// Schema returns the fixed sizes of inputs and records. It must return
	// the same value for the life of the game.
	Schema() Schema

	// Step advances the world by one fixed step to tick t.Tick, using the
	// players' inputs for that tick (see Tick).
	Step(t *Tick)

	// ValidateAction is called before Step for each input whose action
	// bytes (the trailing Schema.ActionBytes) are not all zero and which
	// arrived (inputs repeated for a missing tick carry no action). A
	// non-nil error rejects the action: its bytes are zeroed before Step,
	// and err.Error() is the reason the player is told. In state sync
	// the server reports it (proto.ControlActionRejected) so the client
	// drops the action from its prediction, and the client's prediction
	// validates each action on the predicted world the same way; in
	// commits mode every peer validates every command on its own worlds,
	// and the issuing commits.Client reports a refusal by its committed
	// world. Keep it a pure function of the world, the player and the
	// action (Tick.Predicted is not visible here), so every side agrees.
	// Return preallocated errors (errors.New at package level) to stay
	// allocation-free. The world is the state before Step.
	ValidateAction(player uint16, tick uint32, action []byte) error

	// OnPlayerJoin adds the player's entities (in state sync use
	// t.Spawn(0) or a fixed id for server-owned ones). It runs inside
	// the join critical section; on error (or panic) the world is
	// restored to its state before the call and the join fails. t has no
	// inputs.
	OnPlayerJoin(t *Tick, player uint16) error

	// OnPlayerLeave removes or hands over the player's entities.
	OnPlayerLeave(t *Tick, player uint16, reason string)

	// AppendCanonical appends a canonical serialisation of the complete
	// simulation state (fixed field order, fixed byte order, entities in
	// id order; CanonicalWriter writes such fields). Commits-mode peers
	// checksum it with FNV-1a to detect non-determinism and send it to
	// joining peers; tests compare worlds with it.
	AppendCanonical(b []byte) []byte
}

// Game is a World that plays in state sync: the server (sim.Server,
// game.Host) steps it and sends each client snapshots of it, from which
// the client (sim.Client, game.Client) rebuilds its authoritative world
// and predicts its own players. Besides World it clones and copies
// itself as a Game, writes and reads snapshots, and gives its bodies for
// lag compensation. (A commits-mode game implements CommitGame
// instead, and none of these.) The engine clones the value for the
// client's authoritative, scratch and predicted worlds and the server's
// scratch world.
//
// # What must be networked
//
// A client's authoritative world is rebuilt from received records alone
// (ReadSnapshot). Anything Step reads for an entity the client predicts
// must therefore be in that entity's record: position and velocity, but
// also cooldowns, ammo, health, timers, the owning player. State that is
// not networked makes every re-simulation start from a different world
// than the server's and shows up as constant corrections. A quick check:
// ReadSnapshot(WriteSnapshot(w)) followed by Step must equal Step on w.
// (The server rebuilds its lag-compensation history through this round
// trip too, so hits are judged on exactly the quantised state clients
// see.)
type Game interface {
	World

	// Clone returns a new, independent world equal to this one. The engine
	// calls it only at setup; it may allocate.
	Clone() Game

	// CopyFrom makes the receiver equal to src, which is a world of the
	// same concrete type, reusing the receiver's buffers. It is the
	// rollback primitive and must not allocate in steady state.
	CopyFrom(src Game)

	// WriteSnapshot writes the networked state: call s.Append(id, record)
	// for every entity in ascending NetworkID order, each record exactly
	// Schema.RecordSize bytes. The engine has Reset s (to the tick
	// being written and the record size) before the call: append to it,
	// do not reset it again.
	WriteSnapshot(s *deltacomp.Snapshot)

	// ReadSnapshot replaces the world with the state in s (the inverse of
	// WriteSnapshot). It must reject malformed records with an error,
	// never panic, and must not allocate in steady state.
	ReadSnapshot(s *deltacomp.Snapshot) error

	// AppendBodies appends the world's bodies (entity positions and
	// collision shapes) in ascending ID order. The server records them for
	// lag compensation; the client uses them to smooth corrections of
	// displayed positions and to hit-test what it renders. Bodies must be
	// derived from networked state only.
	AppendBodies(dst []Body) []Body
}

// EntityOwner is an optional interface of a Game whose entity ids do not
// all carry their owner in the spawner bits (a player's avatar with a
// fixed server id, say). Owner returns the player slot that owns id, 0
// for none. A client engine without ClientConfig.Own uses it to tell the
// client's own entities, and a game.Host to keep each player's own
// entities relevant and fresh at every tick its client predicts from
// (without it, both go by the spawner bits).
type EntityOwner interface {
	Owner(id proto.NetworkID) uint16
}

// EntityKinder is implemented by a Game whose entities have kinds for
// interest management: a game.Host asks it the kind byte of every
// networked entity each tick and applies game.Config.Interest.Kinds[kind]
// (a scoreboard always relevant, avatars weighted above debris). Without
// it every entity is of kind 0.
type EntityKinder interface {
	EntityKind(id proto.NetworkID) uint8
}

// Schema is the fixed layout of a game's inputs and records.
type Schema struct {
	// InputSize is the size in bytes of one player's input for one tick
	// (1..proto.MaxInputBytes/3, so that at least three redundant inputs
	// fit one input frame).
	InputSize int
	// ActionBytes is how many trailing bytes of each input carry one-shot
	// actions (fire, build, buy). They are validated by ValidateAction and
	// zeroed when a missing input repeats the previous one, so a repeated
	// input never repeats an action. The leading InputSize-ActionBytes
	// bytes are held controls (movement, aim) and do repeat.
	ActionBytes int
	// RecordSize is the size in bytes of one entity's snapshot record
	// (state sync). Commits mode ignores it: leave it 0.
	RecordSize int
	// Predictor, for a game whose records are laid out by a
	// deltacomp.Schema, extrapolates moving entities' records (state
	// sync): a snapshot then patches a moving entity against where its
	// two newest acknowledged records say it would be rather than against
	// the older of them, which is smaller for entities moving steadily
	// (16 % fewer bits on the arena benchmark's records). Server and
	// clients take it from the game, so both compute the same prediction.
	// It must lay out RecordSize bytes. Nil: patches against the baseline.
	Predictor *deltacomp.Predictor
}

// validate checks a state-sync game's schema: its inputs and records.
func (s Schema) validate() error {
	if err := s.validateInputs(); err != nil {
		return err
	}
	if s.RecordSize < 1 {
		return errSchema("RecordSize out of range")
	}
	if s.Predictor != nil && s.Predictor.RecordSize() != s.RecordSize {
		return errSchema("Predictor lays out records of another size than RecordSize")
	}
	return nil
}

// validateInputs checks the inputs' sizes, all a commits-mode game's
// schema has.
func (s Schema) validateInputs() error {
	switch {
	case s.InputSize < 1 || s.InputSize > proto.MaxInputBytes/3:
		return errSchema("InputSize out of range")
	case s.ActionBytes < 0 || s.ActionBytes > s.InputSize:
		return errSchema("ActionBytes out of range")
	}
	return nil
}

// PlayerInput is one player's input for one tick.
type PlayerInput struct {
	Player uint16
	// Data is the input, Schema.InputSize bytes. It aliases engine
	// buffers: read it during Step only.
	Data []byte
	// Missing is set when no input arrived in time for this tick (or, on
	// a client, when the input is not known). Data then repeats the
	// player's previous input with its action bytes zeroed (all zeros
	// before the first input).
	Missing bool
	// Rejected is set when ValidateAction rejected the action bytes (now
	// zeroed).
	Rejected bool
}

// Tick is what Step receives: the tick being simulated, every present
// player's input, and the engine services game code may call during the
// step (spawn ids, effects, lag compensation, randomness). The engine
// reuses one Tick value; do not keep it.
type Tick struct {
	// Tick is the tick being simulated; the world is at Tick-1 before the
	// step.
	Tick uint32
	// Inputs holds one input per player, sorted by player. On the server
	// every joined player is present; on a client only its local players
	// are (the others' inputs are unknown: simulate them as idle).
	Inputs []PlayerInput
	// Messages are the tick-postmarked messages that execute at this tick
	// (server only), in a deterministic order (player, channel, arrival).
	Messages []Message
	// Predicted is set when a client runs the step as prediction or
	// re-simulation rather than as the authority.
	Predicted bool

	spawn   *spawnContext
	effects *effectLog
	rewind  rewinder
}

// Input returns player's input for this tick, or nil if the player has
// none here (not joined, or a remote player on a client).
func (t *Tick) Input(player uint16) *PlayerInput {
	lo, hi := 0, len(t.Inputs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.Inputs[m].Player < player {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(t.Inputs) && t.Inputs[lo].Player == player {
		return &t.Inputs[lo]
	}
	return nil
}

// Spawn returns the NetworkID for a new entity spawned by spawner (the
// player slot whose input caused it, or 0 for the server). A client
// predicting the spawn gets the same id the server will assign, as long
// as it predicts the same spawns in the same order for that player and
// tick (see SpawnIDs). ok is false when the spawner has no id left for
// this tick (more than SpawnsPerTick spawns); do not spawn then.
func (t *Tick) Spawn(spawner uint16) (id proto.NetworkID, ok bool) {
	if t.spawn == nil {
		return 0, false
	}
	return t.spawn.spawn(t.Tick, spawner, t.effects, t.Predicted)
}

// Emit records an effect (a sound, particles, a hit marker) produced by
// this step. On a client, re-simulating the same tick emits it again; the
// engine matches it by (Tick, Kind, Entity, Player) so it is played once,
// and reports it confirmed or cancelled later (see EffectEvent).
func (t *Tick) Emit(kind uint16, entity proto.NetworkID, player uint16, data [4]int32) {
	if t.effects != nil {
		t.effects.emit(Effect{Tick: t.Tick, Kind: kind, Entity: entity, Player: player, Data: data}, t.Predicted)
	}
}

// Rewind returns the bodies exactly as player saw them when it sampled its
// input for this tick (interpolated between the two snapshots named in its
// packet header, at its blend), for hit tests with RayCast. On a client it
// rebuilds the client's own view for that tick. info says which ticks and
// blend were used and whether the rewind was clamped: a view further
// back than ServerConfig.MaxRewind before the input arrived, outside the
// history or in the future is replaced by the nearest moment inside that
// window (see ServerConfig.MaxRewind). A missing input gets the newest
// state (RewindInfo.Unknown). The slice is reused by the next call.
func (t *Tick) Rewind(player uint16) (bodies []Body, info RewindInfo) {
	if t.rewind == nil {
		return nil, RewindInfo{}
	}
	return t.rewind.rewind(t.Tick, player)
}

// Rand returns a deterministic pseudo-random number derived from the tick
// and salt (use an entity id or player slot as salt). The same tick and
// salt always give the same value, on every peer.
func (t *Tick) Rand(salt uint64) uint64 {
	return splitmix64(uint64(t.Tick)*0x9e3779b97f4a7c15 ^ salt)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// rejectAction runs the game's ValidateAction on in's action bytes (the
// last ab) when the input arrived and they are not all zero; a refused
// action is zeroed in place and in marked Rejected. It returns the
// game's reason, nil when the action stands.
func rejectAction(g World, tick uint32, in *PlayerInput, ab int) error {
	if in.Missing || ab == 0 {
		return nil
	}
	action := in.Data[len(in.Data)-ab:]
	if allZero(action) {
		return nil
	}
	err := g.ValidateAction(in.Player, tick, action)
	if err != nil {
		clear(action)
		in.Rejected = true
	}
	return err
}

// Message is a tick-postmarked application message executed at Tick.
type Message struct {
	Player  uint16
	Channel uint8
	Tick    uint32 // the tick it was postmarked for
	Late    bool   // it arrived after Tick was simulated and runs now
	Data    []byte // valid during Step only
}

type rewinder interface {
	rewind(tick uint32, player uint16) ([]Body, RewindInfo)
}
