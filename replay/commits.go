package replay

import (
	"errors"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// CommitRecorder records a commits-mode game at either end (the
// server's committed world under commits.Host, or a commits.Client's):
// for every committed tick, the commands its committed world ran and
// the checksum of the world after it; every Config.KeyEvery ticks, and
// whenever a state replaced it (a join, a resync), the committed state.
// A client also keeps its last Config.DesyncRing committed states in
// memory and writes them when the server finds its state differs: what
// its own game code computed, tick by tick, up to the desync.
//
// Hang Command on sim.LockstepConfig.Committed and CommittedTick on
// CommittedTick, and give it the Lockstep (Use) once made. Call
// everything from the goroutine that commits.
type CommitRecorder struct {
	w         *Writer
	role      Role
	rate      int
	inputSize int
	ls        *sim.Lockstep
	cmdAt     int // the open RecordCommands (-1: none)
	cmdTick   uint32
	cmds      int
	key       uint32
	hasKey    bool
	ring      []ringState
	rollbacks uint64
	replayed  uint64
}

// ringState is one committed state kept for a desync.
type ringState struct {
	tick    uint32
	valid   bool
	players []uint16
	canon   []byte
}

// NewCommitRecorder starts recording on w, for role (RoleCommitsServer
// or RoleCommitsClient), the commits-mode game gameID (game is a world
// of it, for the schema), with a client's local players, at tickRate.
func NewCommitRecorder(w *Writer, role Role, gameID uint64, game sim.CommitGame, players []uint16, tickRate int) (*CommitRecorder, error) {
	if !role.Commits() {
		return nil, errors.New("replay: NewCommitRecorder needs a commits-mode role")
	}
	schema := game.Schema()
	h := Header{Role: role, GameID: gameID, TickRate: tickRate, Schema: sim.Schema{InputSize: schema.InputSize, ActionBytes: schema.ActionBytes},
		Players: players}
	if err := w.begin(&h); err != nil {
		return nil, err
	}
	c := &CommitRecorder{w: w, role: role, rate: tickRate, inputSize: schema.InputSize, cmdAt: -1}
	n := w.cfg.DesyncRing
	if n == 0 {
		n = 4 * tickRate
	}
	if role == RoleCommitsClient && n > 0 {
		c.ring = make([]ringState, n)
	}
	return c, nil
}

// Use gives the recorder the Lockstep whose committed world it records
// (it reads the committed players there).
func (c *CommitRecorder) Use(ls *sim.Lockstep) { c.ls = ls }

// Command records a command the committed world executes (the
// sim.LockstepConfig.Committed callback).
func (c *CommitRecorder) Command(cmd *sim.Command) {
	w := c.w
	if c.cmdAt >= 0 && c.cmdTick != cmd.Tick {
		c.endCommands()
	}
	if c.cmdAt < 0 {
		c.cmdAt, c.cmdTick, c.cmds = w.open(RecordCommands, cmd.Tick), cmd.Tick, 0
		w.buf = append(w.buf, 0, 0)
	}
	if c.cmds == 0xffff || cmd.Kind == sim.CommandInput && len(cmd.Data) != c.inputSize {
		w.lost++ // cannot be recorded: a gap, then a state
		return
	}
	w.buf = appendCommand(w.buf, cmd)
	c.cmds++
}

func (c *CommitRecorder) endCommands() {
	le.PutUint16(c.w.buf[c.cmdAt+recordHeader:], uint16(c.cmds))
	c.w.end(c.cmdAt)
	c.cmdAt = -1
}

// CommittedTick records that the committed world stepped tick, whose
// canonical bytes and checksum these are (the
// sim.LockstepConfig.CommittedTick callback), and writes the committed
// state when one is due.
func (c *CommitRecorder) CommittedTick(tick uint32, canonical []byte, sum uint64) {
	w := c.w
	if c.cmdAt >= 0 {
		c.endCommands()
	}
	at := w.open(RecordChecksum, tick)
	w.buf = le.AppendUint64(w.buf, sum)
	w.end(at)
	var players []uint16
	if c.ls != nil {
		players = c.ls.Players()
	}
	if len(c.ring) > 0 {
		r := &c.ring[tick%uint32(len(c.ring))]
		r.tick, r.valid = tick, true
		r.players = append(r.players[:0], players...)
		r.canon = append(r.canon[:0], canonical...)
	}
	if due, _ := w.keyDue(tick, c.key, c.hasKey); due {
		c.writeState(StatePeriodic, 0, tick, players, canonical)
	}
	w.tickDone(tick, c.rate)
}

// writeState records a committed state: the bytes of
// sim.Lockstep.AppendState, built from their parts.
func (c *CommitRecorder) writeState(cause StateCause, reason proto.ResyncReason, tick uint32, players []uint16, canonical []byte) {
	w := c.w
	at := w.open(RecordCommitted, tick)
	w.buf = append(w.buf, byte(cause), byte(reason))
	w.buf = le.AppendUint32(w.buf, tick)
	w.buf = le.AppendUint16(w.buf, uint16(len(players)))
	for _, p := range players {
		w.buf = le.AppendUint16(w.buf, p)
	}
	w.buf = append(w.buf, canonical...)
	w.end(at)
	if cause != StateBeforeDesync {
		c.key, c.hasKey = tick, true
	}
}

// Loaded records the committed state ls holds after a state replaced
// both worlds, sent for reason (0: the join). For a desync
// (proto.ResyncChecksum) the states kept before it are written first.
func (c *CommitRecorder) Loaded(ls *sim.Lockstep, reason proto.ResyncReason) {
	c.ls = ls
	tick := ls.CommittedTick()
	if reason != 0 {
		c.w.event(tick, &Event{Kind: EventResync, Arg: uint32(reason)})
	}
	if reason == proto.ResyncChecksum {
		c.flushRing()
	}
	for i := range c.ring {
		c.ring[i].valid = false
	}
	state := ls.AppendState(nil)
	c.writeState(StateLoaded, reason, tick, ls.Players(), state[6+2*len(ls.Players()):])
	c.w.flush(tick, false)
}

// flushRing writes the states kept, in tick order.
func (c *CommitRecorder) flushRing() {
	first := -1
	for i := range c.ring {
		r := &c.ring[i]
		if r.valid && (first < 0 || int32(r.tick-c.ring[first].tick) < 0) {
			first = i
		}
	}
	if first < 0 {
		return
	}
	for k := range c.ring {
		r := &c.ring[(first+k)%len(c.ring)]
		if r.valid {
			c.writeState(StateBeforeDesync, 0, r.tick, r.players, r.canon)
		}
	}
}

// Frame records the client's rollbacks since the last frame, from its
// Lockstep's counters, at the live tick.
func (c *CommitRecorder) Frame(tick uint32, st sim.LockstepStats) {
	if st.Rollbacks > c.rollbacks {
		c.w.event(tick, &Event{Kind: EventRollback, Arg: uint32(min(st.Replayed-c.replayed, 1<<32-1))})
	}
	c.rollbacks, c.replayed = st.Rollbacks, st.Replayed
}

// Close ends the recording and closes its Writer.
func (c *CommitRecorder) Close() error { return c.w.Close() }
