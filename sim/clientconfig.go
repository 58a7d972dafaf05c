package sim

import (
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// ClientConfig configures the client engine. The zero value of every
// field except Players means its documented default.
type ClientConfig struct {
	// TickRate is the server's fixed simulation rate in Hz (default 60).
	TickRate int
	// Players are the local player slots this client plays, in any
	// order: NewClient needs one or more, each 1..proto.MaxSpawner, no
	// duplicates. A game.Client takes them from its connect token (1 to
	// proto.MaxPlayersPerConnection) and needs them left empty.
	Players []uint16
	// InputRing is how many ticks of sampled inputs are kept (default
	// 64, rounded up to a power of two, at least
	// proto.MaxInputsPerFrame). It bounds both redundancy and how far
	// prediction may run ahead of the newest authoritative state: ticks
	// older than the ring are re-simulated as missing inputs.
	InputRing int
	// InputInterval is how many ticks apart the client's inputs go out
	// (the transport's cadence: tickwire.GameClient.SetInputInterval;
	// default 1, at most 8). The clock's target age covers the inputs
	// that wait for their packet and, for a lost packet, the next one
	// that many ticks later: the clock leads by (InputInterval−1)·1.5
	// ticks more.
	InputInterval int
	// MaxInterpLag bounds how far the interpolated (rendered) moment may
	// trail the moment the client's input reaches the server (the
	// predicted tick minus the input age the server reports), like the
	// server's ServerConfig.MaxRewind, so that the view a client reports
	// stays within what lag compensation honours (default 200 ms). It
	// never pulls the view closer to the newest snapshot than the
	// interpolation delay: on a longer path remote entities stay smooth
	// and the server clamps the rewind instead.
	MaxInterpLag time.Duration
	// CorrectionHalfLife is how fast a correction of displayed (predicted)
	// positions fades: the remaining offset halves every CorrectionHalfLife
	// (default 100 ms). Negative disables smoothing: corrections snap.
	CorrectionHalfLife time.Duration
	// MaxCorrection: corrections longer than this (in the game's position
	// units, Euclidean) snap instead of fading, for teleports and respawns
	// (default 0: every correction fades).
	MaxCorrection float64
	// SpawnsPerTick must equal the server's ServerConfig.SpawnsPerTick
	// (default 4) so that predicted spawn ids match.
	SpawnsPerTick int
	// Headless runs only the clock and the inputs, for clients that show
	// nothing (bots, load generators): authoritative states are not
	// decoded into worlds, nothing is predicted or interpolated (no
	// rollbacks, corrections, effects or interpolation statistics), and
	// the view reported for lag compensation is the newest state's tick.
	Headless bool
	// SkipState, with Headless, does not even rebuild the server's state
	// (tickwire.GameClient's replica of the snapshot frames): the client
	// only acks them. It cannot then check the server's checksums (it
	// detects no desync) nor ask for a resync. For load generators that
	// verify the state on a few clients and only load the server with
	// the rest.
	SkipState bool
	// Own reports whether an entity is the client's own: shown predicted
	// and counted in the correction statistics. Default: the game's
	// EntityOwner if it implements it, else ids whose spawner
	// (proto.NetworkID.Spawner) is a local player.
	Own func(id proto.NetworkID) bool
	// FirstStep, if set, is called after the first step of each
	// rollback: world is the predicted world at tick, one step from the
	// authoritative state of tick−1 with the local players' inputs
	// (remote players idle). It is the only state a state-sync client's
	// own game code computes from the server's exact state, which is
	// what a replay recording keeps of it (package replay) to compare
	// with the server's. Read world during the call only, and do not
	// change it.
	FirstStep func(tick uint32, world Game)
}

func (c *ClientConfig) defaults() error {
	if c.TickRate == 0 {
		c.TickRate = 60
	}
	if c.TickRate < 1 || c.TickRate > 1000 {
		return &ConfigError{"TickRate", "must be 1..1000"}
	}
	if c.SkipState && !c.Headless {
		return &ConfigError{"SkipState", "needs Headless (a client that shows the game needs its state)"}
	}
	if len(c.Players) == 0 {
		return &ConfigError{"Players", "need at least one local player"}
	}
	c.Players = slices.Clone(c.Players)
	slices.Sort(c.Players)
	for i, p := range c.Players {
		if p == 0 || p > proto.MaxSpawner {
			return &ConfigError{"Players", "slots must be 1..proto.MaxSpawner"}
		}
		if i > 0 && c.Players[i-1] == p {
			return &ConfigError{"Players", "duplicate slot"}
		}
	}
	switch {
	case c.InputRing == 0:
		c.InputRing = 64
	case c.InputRing < 0 || c.InputRing > 1<<12:
		return &ConfigError{"InputRing", "must be 0..4096"}
	}
	n := proto.MaxInputsPerFrame
	for n < c.InputRing {
		n <<= 1
	}
	c.InputRing = n
	switch {
	case c.InputInterval == 0:
		c.InputInterval = 1
	case c.InputInterval < 0 || c.InputInterval > 8:
		return &ConfigError{"InputInterval", "must be 0..8"}
	}
	switch {
	case c.MaxInterpLag == 0:
		c.MaxInterpLag = 200 * time.Millisecond
	case c.MaxInterpLag < 0 || c.MaxInterpLag > 10*time.Second:
		return &ConfigError{"MaxInterpLag", "must be 0..10s"}
	}
	if c.CorrectionHalfLife == 0 {
		c.CorrectionHalfLife = 100 * time.Millisecond
	}
	if !(c.MaxCorrection >= 0) { // also NaN
		return &ConfigError{"MaxCorrection", "must not be negative"}
	}
	switch {
	case c.SpawnsPerTick == 0:
		c.SpawnsPerTick = 4
	case c.SpawnsPerTick < 0:
		return &ConfigError{"SpawnsPerTick", "must not be negative"}
	}
	return nil
}
