package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// Commits mode (docs/COMMITS.md) replicates commands instead of
// state. Every peer holds two worlds: the committed world, final, which
// only moves when the server says every peer has reached a tick; and the
// live world, ahead of it, which is what the player sees. Between them
// sits a command buffer indexed by tick. A command received for a tick
// the live world has already simulated throws live away: it is rebuilt
// from the committed world by replaying every buffered command (an
// unconditional rollback, as in the state-sync client's prediction).
//
// Lockstep is that pair of worlds and the buffer between them. It knows
// nothing of networks or clocks: the client engine (commits.Client)
// adds the commands it issues and receives, moves live forward as its
// clock says and commits what the server confirms; the server engine
// (commits.Host) uses the committed half alone, as the authority
// that hands fresh copies to joining and resynchronised peers.

// CommitGame is a World that plays in commits mode: every peer steps
// it from the commands alone, and a joining or resynchronised peer gets
// the committed world as AppendCanonical's bytes, which LoadCanonical
// restores. That, with Clone and CopyFrom of its own type, is all
// commits mode calls (sim.Lockstep, commits.Host and commits.Client):
// no snapshots, no bodies. Its Schema needs only InputSize and
// ActionBytes (make every byte an action byte, so that nothing
// repeats); Tick.Spawn, Emit and Rewind do nothing here.
//
// A type cannot be both a Game and a CommitGame (their Clone methods
// differ): a game that plays in both modes gives each its own small
// type over one world.
type CommitGame interface {
	World

	// Clone returns a new, independent world equal to this one. The
	// engine calls it only at setup (the committed and live worlds, a
	// client's blank world); it may allocate.
	Clone() CommitGame

	// CopyFrom makes the receiver equal to src, a world of the same
	// concrete type, reusing the receiver's buffers: the live world's
	// rollback. It must not allocate in steady state.
	CopyFrom(src CommitGame)

	// LoadCanonical replaces the world with the state b holds (the output
	// of AppendCanonical). b comes from the network (the server, or
	// through a relay another client): it must reject malformed input
	// with an error, never panic, and allocate no more than b's length
	// justifies. CanonicalReader does all three for the fields
	// CanonicalWriter wrote. On error the Lockstep restores the world
	// itself.
	LoadCanonical(b []byte) error
}

// CommandKind says what a buffered command does.
type CommandKind uint8

const (
	// CommandInput is a player's command: its Data is one input
	// (Schema.InputSize bytes) the player's Tick.Inputs entry carries at
	// the command's tick.
	CommandInput CommandKind = 0
	// CommandJoin adds Player before the tick's step (OnPlayerJoin).
	CommandJoin CommandKind = 1
	// CommandLeave removes Player before the tick's step (OnPlayerLeave).
	CommandLeave   CommandKind = 2
	commandKindEnd CommandKind = 3
)

// Command is one entry of the command buffer. Inputs are named by
// (Player, Seq), the player's own numbering; joins and leaves by the
// server's numbering, with Player the slot they add or remove.
type Command struct {
	Kind   CommandKind
	Player uint16
	Tick   uint32
	Seq    uint32
	Data   []byte // CommandInput only; valid during the call that passes it
	// Tentative marks a copy that did not come through the reliable
	// pipeline (a peer's shortcut): it runs in the live world, but the
	// committed world never runs it unless the same command (kind,
	// player, seq) is added again without the mark before its tick is
	// committed. A tentative copy never moves or replaces a confirmed
	// one.
	Tentative bool
}

// LockstepConfig tunes a Lockstep.
type LockstepConfig struct {
	// Capacity is how many ticks past the committed tick the buffer
	// holds: commands for later ticks are refused (ErrCommandAhead) and
	// live never runs further ahead. Default 256.
	Capacity int
	// SumHistory, if positive, keeps the checksum of the committed world
	// after each of the last SumHistory committed ticks (CommittedSum).
	SumHistory int
	// Committed, if set, is called for each command the committed world
	// executes, in execution order: the record of what happened, final.
	Committed func(c *Command)
	// Shown, if set, is called the first time a command runs in the live
	// world (or in the committed world, when live had not reached its
	// tick): the moment it first reaches the player's screen.
	Shown func(c *Command)
	// Rejected, if set, is called when the committed world's
	// ValidateAction refuses a command (after Committed reported it),
	// with the command as it was sent and the game's reason. The live
	// world's refusals are not final (a late command may change the
	// world before the tick) and are not reported.
	Rejected func(c *Command, reason error)
	// CommittedTick, if set, is called after each tick the committed
	// world steps, with the world's canonical bytes (AppendCanonical,
	// valid during the call only) and their checksum
	// (Checksummer.WorldSum, the CommittedSum of the tick): what a
	// replay recorder keeps (package replay). The bytes are those the
	// sum is computed from, so with SumHistory it costs no second
	// serialisation.
	CommittedTick func(tick uint32, canonical []byte, sum uint64)
}

// DefaultCapacity is LockstepConfig.Capacity's default.
const DefaultCapacity = 256

// Errors of Lockstep.
var (
	ErrCommandLate     = errors.New("sim: command for a committed tick")
	ErrCommandAhead    = errors.New("sim: command beyond the command buffer")
	ErrCommandKind     = errors.New("sim: unknown command kind")
	ErrCommandSize     = errors.New("sim: command is not one input long")
	ErrCommandConflict = errors.New("sim: the player already has a command at that tick")
	ErrCommitBackwards = errors.New("sim: commit before the committed tick")
	errStateShort      = errors.New("sim: committed state truncated")
	errStatePlayers    = errors.New("sim: committed state player list malformed")
)

// LockstepStats count what a Lockstep did.
type LockstepStats struct {
	Commands  uint64 // commands added (moves excluded)
	Moved     uint64 // commands added again at another tick
	Commits   uint64 // Commit calls that advanced the committed tick
	Committed uint64 // ticks the committed world stepped
	LiveSteps uint64 // ticks the live world stepped forward
	Rollbacks uint64 // rebuilds of live from the committed world
	Replayed  uint64 // ticks re-simulated by those rebuilds
	Rejected  uint64 // actions ValidateAction refused (committed world)
	// Tentative counts tentative copies added; Confirmed those whose
	// confirmed copy arrived after them; Discarded those still
	// unconfirmed when their tick was committed (dropped, never run by
	// the committed world).
	Tentative, Confirmed, Discarded uint64
}

// Lockstep is a committed world, a live world and the command buffer
// between them. It is not safe for concurrent use.
type Lockstep struct {
	cfg    LockstepConfig
	schema Schema

	committed, live CommitGame
	cTick, lTick    uint32
	cPlayers        []uint16 // present in the committed world, ascending
	lPlayers        []uint16 // present in the live world
	dirty           bool     // a command changed at a tick live has simulated
	slots           []tickSlot
	ctx             Tick
	inputs          []PlayerInput
	inbuf           []byte
	sum             Checksummer
	sums            []uint64 // ring of committed sums by tick
	cb              Command  // what the callbacks get (passed)
	stats           LockstepStats
}

// tickSlot holds the commands of one tick, in execution order: joins
// and leaves by seq, then inputs by player.
type tickSlot struct {
	tick uint32
	cmds []slotCmd
	data []byte
}

type slotCmd struct {
	kind      CommandKind
	player    uint16
	seq       uint32
	off       int // into data (inputs)
	shown     bool
	tentative bool
}

// NewLockstep returns a Lockstep whose committed and live worlds are
// copies of g at tick with players present.
func NewLockstep(g CommitGame, tick uint32, players []uint16, cfg LockstepConfig) (*Lockstep, error) {
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.Capacity < 1 || cfg.Capacity > 1<<16 {
		return nil, &ConfigError{Field: "Capacity", Problem: fmt.Sprintf("%d out of 1..65536", cfg.Capacity)}
	}
	if cfg.SumHistory < 0 || cfg.SumHistory > 1<<16 {
		return nil, &ConfigError{Field: "SumHistory", Problem: fmt.Sprintf("%d out of 0..65536", cfg.SumHistory)}
	}
	schema := g.Schema()
	if err := schema.validateInputs(); err != nil {
		return nil, err
	}
	l := &Lockstep{cfg: cfg, schema: schema, committed: g.Clone(), live: g.Clone(),
		slots: make([]tickSlot, cfg.Capacity), sums: make([]uint64, cfg.SumHistory),
		inbuf: make([]byte, 0, 64*schema.InputSize)}
	l.reset(tick, players)
	return l, nil
}

func (l *Lockstep) reset(tick uint32, players []uint16) {
	l.cTick, l.lTick = tick, tick
	l.cPlayers = append(l.cPlayers[:0], players...)
	slices.Sort(l.cPlayers)
	l.cPlayers = slices.Compact(l.cPlayers)
	l.lPlayers = append(l.lPlayers[:0], l.cPlayers...)
	l.dirty = false
	for i := range l.slots {
		l.slots[i].clear(0)
	}
	clear(l.sums)
	if len(l.sums) > 0 {
		l.sums[tick%uint32(len(l.sums))] = l.sum.WorldSum(l.committed)
	}
}

// CommittedTick is the tick of the committed world.
func (l *Lockstep) CommittedTick() uint32 { return l.cTick }

// LiveTick is the tick of the live world (≥ CommittedTick).
func (l *Lockstep) LiveTick() uint32 { return l.lTick }

// Committed is the committed world. Do not modify it.
func (l *Lockstep) Committed() CommitGame { return l.committed }

// Live is the live world after any pending rebuild. Do not modify it.
func (l *Lockstep) Live() CommitGame {
	l.rebuild()
	return l.live
}

// Players are the players present in the committed world; the slice is
// the Lockstep's.
func (l *Lockstep) Players() []uint16 { return l.cPlayers }

// LivePlayers are the players present in the live world.
func (l *Lockstep) LivePlayers() []uint16 {
	l.rebuild()
	return l.lPlayers
}

// Stats returns the counters.
func (l *Lockstep) Stats() LockstepStats { return l.stats }

// Buffered is how many commands wait in the buffer.
func (l *Lockstep) Buffered() int {
	n := 0
	for i := range l.slots {
		n += len(l.slots[i].cmds)
	}
	return n
}

// CommittedSum is the checksum (Checksummer.WorldSum) of the committed
// world after tick, if it is among the last SumHistory committed ticks.
func (l *Lockstep) CommittedSum(tick uint32) (uint64, bool) {
	n := uint32(len(l.sums))
	if n == 0 || tick > l.cTick || l.cTick-tick >= n {
		return 0, false
	}
	return l.sums[tick%n], true
}

func (l *Lockstep) slot(tick uint32) *tickSlot {
	return &l.slots[tick%uint32(len(l.slots))]
}

// Add puts c into the buffer at c.Tick. A command already buffered with
// the same kind, player and seq is moved there (the server re-stamped a
// late command). If live has already simulated c.Tick, live is rebuilt
// before it is next read or advanced.
func (l *Lockstep) Add(c *Command) error {
	switch {
	case c.Kind >= commandKindEnd:
		return ErrCommandKind
	case c.Kind == CommandInput && len(c.Data) != l.schema.InputSize:
		return ErrCommandSize
	case c.Tick <= l.cTick:
		return ErrCommandLate
	case c.Tick-l.cTick > uint32(l.cfg.Capacity):
		return ErrCommandAhead
	}
	s := l.slot(c.Tick)
	if s.tick != c.Tick {
		s.clear(c.Tick)
	}
	i, found := s.find(c.Kind, c.Player, c.Seq)
	if found {
		if e := &s.cmds[i]; e.tentative && !c.Tentative {
			e.tentative = false
			l.stats.Confirmed++
		}
		return nil // a duplicate
	}
	old, at := l.locate(c.Kind, c.Player, c.Seq)
	if old != nil && c.Tentative {
		return nil // a shortcut never moves a copy already there
	}
	if c.Kind == CommandInput && s.hasInput(c.Player) {
		return ErrCommandConflict
	}
	moved := false
	if old != nil {
		if at <= l.lTick {
			l.dirty = true
		}
		if j, ok := old.find(c.Kind, c.Player, c.Seq); ok && old.cmds[j].tentative {
			l.stats.Confirmed++
		}
		old.remove(c.Kind, c.Player, c.Seq, l.schema.InputSize)
		moved = true
	}
	s.insert(i, slotCmd{kind: c.Kind, player: c.Player, seq: c.Seq, off: len(s.data), tentative: c.Tentative})
	if c.Kind == CommandInput {
		s.data = append(s.data, c.Data...)
	}
	switch {
	case moved:
		l.stats.Moved++
	case c.Tentative:
		l.stats.Tentative++
	default:
		l.stats.Commands++
	}
	if c.Tick <= l.lTick {
		l.dirty = true
	}
	return nil
}

// Remove takes a command out of the buffer (the client's own command the
// server has not confirmed, when the tick it was put at is committed
// without it). It reports whether the command was there.
func (l *Lockstep) Remove(k CommandKind, player uint16, seq uint32) bool {
	s, at := l.locate(k, player, seq)
	if s == nil {
		return false
	}
	s.remove(k, player, seq, l.schema.InputSize)
	if at <= l.lTick {
		l.dirty = true
	}
	return true
}

// locate finds a buffered command by identity across the buffer (the
// rare path of a moved command).
func (l *Lockstep) locate(k CommandKind, player uint16, seq uint32) (*tickSlot, uint32) {
	for i := range l.slots {
		s := &l.slots[i]
		if s.tick <= l.cTick || len(s.cmds) == 0 {
			continue
		}
		if _, ok := s.find(k, player, seq); ok {
			return s, s.tick
		}
	}
	return nil, 0
}

// Pending calls f for every buffered command in tick and execution order
// (what a joining peer needs besides the committed state).
func (l *Lockstep) Pending(f func(c *Command)) {
	for t := l.cTick + 1; t-l.cTick <= uint32(l.cfg.Capacity); t++ {
		s := l.slot(t)
		if s.tick != t {
			continue
		}
		for i := range s.cmds {
			c := s.command(i, l.schema.InputSize)
			f(&c)
		}
	}
}

// AdvanceLive rebuilds live if a command changed under it, then steps it
// forward to tick to (at most Capacity past the committed tick). It
// returns how many ticks it stepped forward.
func (l *Lockstep) AdvanceLive(to uint32) int {
	l.rebuild()
	if limit := l.cTick + uint32(l.cfg.Capacity); int32(to-limit) > 0 {
		to = limit
	}
	n := 0
	for int32(to-l.lTick) > 0 {
		l.lTick++
		l.step(l.live, &l.lPlayers, l.lTick, false)
		n++
	}
	l.stats.LiveSteps += uint64(n)
	return n
}

// rebuild throws live away and replays the buffer from the committed
// world, if a command changed at a tick live had simulated.
func (l *Lockstep) rebuild() {
	if !l.dirty {
		return
	}
	l.dirty = false
	l.live.CopyFrom(l.committed)
	l.lPlayers = append(l.lPlayers[:0], l.cPlayers...)
	for t := l.cTick + 1; int32(l.lTick-t) >= 0; t++ {
		l.step(l.live, &l.lPlayers, t, false)
		l.stats.Replayed++
	}
	l.stats.Rollbacks++
}

// Commit steps the committed world to tick to with the buffered
// commands, which are then final and leave the buffer. The caller
// guarantees every command for those ticks is in the buffer. Live is
// kept at or ahead of the committed world.
func (l *Lockstep) Commit(to uint32) error {
	if int32(to-l.cTick) < 0 {
		return ErrCommitBackwards
	}
	if to == l.cTick {
		return nil
	}
	l.rebuild() // commands below live may change: replay against the old base
	for l.cTick != to {
		t := l.cTick + 1
		if l.discardTentative(t) && int32(l.lTick-t) >= 0 {
			l.dirty = true // live ran a copy that never came for real
		}
		l.step(l.committed, &l.cPlayers, t, true)
		l.slot(t).clear(0)
		l.cTick = t
		l.stats.Committed++
		if n := uint32(len(l.sums)); n > 0 || l.cfg.CommittedTick != nil {
			sum := l.sum.WorldSum(l.committed)
			if n > 0 {
				l.sums[t%n] = sum
			}
			if l.cfg.CommittedTick != nil {
				l.cfg.CommittedTick(t, l.sum.buf, sum)
			}
		}
	}
	l.stats.Commits++
	if int32(l.lTick-l.cTick) <= 0 {
		l.live.CopyFrom(l.committed)
		l.lPlayers = append(l.lPlayers[:0], l.cPlayers...)
		l.lTick = l.cTick
	}
	return nil
}

// discardTentative removes the unconfirmed copies at tick t (about to be
// committed) and reports whether there were any.
func (l *Lockstep) discardTentative(t uint32) bool {
	s := l.slot(t)
	if s.tick != t {
		return false
	}
	any := false
	for i := 0; i < len(s.cmds); {
		if c := s.cmds[i]; c.tentative {
			s.remove(c.kind, c.player, c.seq, l.schema.InputSize)
			l.stats.Discarded++
			any = true
			continue
		}
		i++
	}
	return any
}

// Has reports whether a command (kind, player, seq) is in the buffer, and
// whether that copy is tentative.
func (l *Lockstep) Has(k CommandKind, player uint16, seq uint32) (present, tentative bool) {
	s, _ := l.locate(k, player, seq)
	if s == nil {
		return false, false
	}
	i, _ := s.find(k, player, seq)
	return true, s.cmds[i].tentative
}

// step runs tick t on w: the tick's joins and leaves, then Step with the
// inputs of the present players (Missing for those without a command).
// The committed world reports what it executed; either world reports
// commands shown for the first time.
func (l *Lockstep) step(w CommitGame, players *[]uint16, t uint32, committed bool) {
	s := l.slot(t)
	has := s.tick == t
	l.ctx = Tick{Tick: t}
	if has {
		for i := range s.cmds {
			c := &s.cmds[i]
			if c.kind == CommandInput {
				break
			}
			l.report(s, i, committed)
			switch c.kind {
			case CommandJoin:
				if j, found := slices.BinarySearch(*players, c.player); !found {
					l.ctx.Tick = t - 1
					if err := w.OnPlayerJoin(&l.ctx, c.player); err == nil {
						*players = slices.Insert(*players, j, c.player)
					}
					l.ctx.Tick = t
				}
			case CommandLeave:
				if j, found := slices.BinarySearch(*players, c.player); found {
					l.ctx.Tick = t - 1
					w.OnPlayerLeave(&l.ctx, c.player, "left")
					l.ctx.Tick = t
					*players = slices.Delete(*players, j, j+1)
				}
			}
		}
	}
	size, ab := l.schema.InputSize, l.schema.ActionBytes
	need := len(*players) * size
	if cap(l.inbuf) < need {
		l.inbuf = make([]byte, need)
	}
	buf := l.inbuf[:need]
	clear(buf)
	l.inputs = l.inputs[:0]
	k := 0
	for pi, p := range *players {
		in := PlayerInput{Player: p, Data: buf[pi*size : (pi+1)*size : (pi+1)*size], Missing: true}
		if has {
			for k < len(s.cmds) && (s.cmds[k].kind != CommandInput || s.cmds[k].player < p) {
				k++
			}
			if k < len(s.cmds) && s.cmds[k].player == p {
				copy(in.Data, s.data[s.cmds[k].off:s.cmds[k].off+size])
				in.Missing = false
				l.report(s, k, committed)
				if err := rejectAction(w, t, &in, ab); err != nil && committed {
					l.stats.Rejected++
					if l.cfg.Rejected != nil {
						l.cfg.Rejected(l.passed(s, k), err)
					}
				}
			}
		}
		l.inputs = append(l.inputs, in)
	}
	l.ctx.Inputs = l.inputs
	w.Step(&l.ctx)
	l.ctx.Inputs = nil
}

func (l *Lockstep) report(s *tickSlot, i int, committed bool) {
	c := &s.cmds[i]
	if !c.shown {
		c.shown = true
		if l.cfg.Shown != nil {
			l.cfg.Shown(l.passed(s, i))
		}
	}
	if committed && l.cfg.Committed != nil {
		l.cfg.Committed(l.passed(s, i))
	}
}

// passed is command i of s in the Command the callbacks are passed
// (one, reused: a callback's *Command would otherwise escape and
// allocate for every command).
func (l *Lockstep) passed(s *tickSlot, i int) *Command {
	l.cb = s.command(i, l.schema.InputSize)
	return &l.cb
}

func (s *tickSlot) clear(tick uint32) {
	s.tick = tick
	s.cmds = s.cmds[:0]
	s.data = s.data[:0]
}

// order is the execution order of commands within a tick.
func order(k CommandKind, player uint16, seq uint32) uint64 {
	if k != CommandInput {
		return uint64(seq) // joins and leaves first, by the server's seq
	}
	return 1<<48 | uint64(player)<<32 | uint64(seq)
}

func (s *tickSlot) find(k CommandKind, player uint16, seq uint32) (int, bool) {
	key := order(k, player, seq)
	i, found := slices.BinarySearchFunc(s.cmds, key, func(c slotCmd, key uint64) int {
		o := order(c.kind, c.player, c.seq)
		switch {
		case o < key:
			return -1
		case o > key:
			return 1
		}
		return 0
	})
	if found && s.cmds[i].kind != k {
		found = false
	}
	return i, found
}

// hasInput reports whether player has an input in the slot.
func (s *tickSlot) hasInput(player uint16) bool {
	for i := range s.cmds {
		if s.cmds[i].kind == CommandInput && s.cmds[i].player == player {
			return true
		}
	}
	return false
}

func (s *tickSlot) insert(i int, c slotCmd) { s.cmds = slices.Insert(s.cmds, i, c) }

// remove deletes a command; an input's data, size bytes like every
// input's, leaves the slot's data and the inputs stored after it move
// down.
func (s *tickSlot) remove(k CommandKind, player uint16, seq uint32, size int) {
	i, ok := s.find(k, player, seq)
	if !ok {
		return
	}
	c := s.cmds[i]
	s.cmds = slices.Delete(s.cmds, i, i+1)
	if k != CommandInput {
		return
	}
	s.data = slices.Delete(s.data, c.off, c.off+size)
	for j := range s.cmds {
		if s.cmds[j].kind == CommandInput && s.cmds[j].off > c.off {
			s.cmds[j].off -= size
		}
	}
}

func (s *tickSlot) command(i, size int) Command {
	c := &s.cmds[i]
	cmd := Command{Kind: c.kind, Player: c.player, Tick: s.tick, Seq: c.seq}
	if c.kind == CommandInput {
		cmd.Data = s.data[c.off : c.off+size : c.off+size]
	}
	return cmd
}

// AppendState appends the committed state: the tick, the present
// players and the game's canonical bytes. LoadState restores it.
//
//	tick     uint32 LE
//	players  uint16 LE count, then each slot uint16 LE, ascending
//	game     the rest: CommitGame.AppendCanonical
func (l *Lockstep) AppendState(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, l.cTick)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(l.cPlayers)))
	for _, p := range l.cPlayers {
		b = binary.LittleEndian.AppendUint16(b, p)
	}
	return l.committed.AppendCanonical(b)
}

// LoadState replaces both worlds with the committed state b holds and
// empties the buffer. On error the Lockstep is unchanged.
func (l *Lockstep) LoadState(b []byte) error {
	if len(b) < 6 {
		return errStateShort
	}
	tick := binary.LittleEndian.Uint32(b)
	n := int(binary.LittleEndian.Uint16(b[4:]))
	if len(b) < 6+2*n {
		return errStateShort
	}
	players := make([]uint16, n)
	for i := range players {
		players[i] = binary.LittleEndian.Uint16(b[6+2*i:])
		if players[i] == 0 || players[i] > proto.MaxSpawner || (i > 0 && players[i] <= players[i-1]) {
			return errStatePlayers
		}
	}
	// Load into live first: a malformed state leaves committed intact.
	if err := l.live.LoadCanonical(b[6+2*n:]); err != nil {
		l.live.CopyFrom(l.committed)
		l.dirty = true
		return err
	}
	l.committed.CopyFrom(l.live)
	l.reset(tick, players)
	return nil
}
