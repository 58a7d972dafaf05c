package replay

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// The bodies of the records (docs/DEBUGGING.md, "Records"): an append
// function for the recorders, which write into the Writer's chunk, and
// a parse function for the Reader's users, which may allocate. A parse
// function checks every count against the bytes left, so a corrupt body
// gives an error, never a panic or an allocation it does not justify.

// EventKind says what an Event is.
type EventKind uint8

// The events.
const (
	// EventJoin and EventLeave: Player joined or left the game (a
	// state-sync client's, as the server told it; the servers' and
	// commits mode's joins and leaves are in their steps and commands).
	EventJoin  EventKind = 1
	EventLeave EventKind = 2
	// EventDesync: a state-sync client's replica did not match the
	// server's checksum for the tick.
	EventDesync EventKind = 3
	// EventResync: a full state replaced the client's; Arg says why:
	// in commits mode the proto.ResyncReason it was sent for, in state
	// sync the full snapshot's proto.SnapshotCause.
	EventResync EventKind = 4
	// EventRollback: a commits-mode client rebuilt its live world; Arg
	// is how many ticks it re-simulated.
	EventRollback EventKind = 5
	// EventGap: the Writer's goroutine fell behind and Arg chunks of
	// records before this tick were lost; a full state follows.
	EventGap EventKind = 6
	// EventSession: a client attached to a new session (Text says why:
	// "connected", "rejoined", "resumed").
	EventSession EventKind = 7
	eventKindEnd EventKind = 8
)

var eventNames = [eventKindEnd]string{"", "join", "leave", "desync", "resync", "rollback", "gap", "session"}

func (k EventKind) String() string { return name(eventNames[:], uint8(k), "event") }

// Event is a RecordEvent's content.
type Event struct {
	Kind   EventKind
	Player uint16
	Arg    uint32
	Text   string // at most 255 bytes
}

// StateCause says why a commits-mode committed state was written.
type StateCause uint8

// The causes.
const (
	// StatePeriodic: every Config.KeyEvery ticks.
	StatePeriodic StateCause = 0
	// StateLoaded: the state a join or a resync loaded; Reason is the
	// proto.ResyncReason (0: the join).
	StateLoaded StateCause = 1
	// StateBeforeDesync: a state the client held in memory
	// (Config.DesyncRing) and wrote once the server found its
	// committed state differed: what its own game code computed, tick
	// by tick, up to the desync.
	StateBeforeDesync StateCause = 2
	stateCauseEnd     StateCause = 3
)

var errBody = errors.New("replay: malformed record body")

// appendEntities appends count u32, the ids (u32 each) and the records
// of the entities of s that sel selects (every one if sel is nil).
func appendEntities(b []byte, s *deltacomp.Snapshot, sel func(proto.NetworkID) bool) []byte {
	at := len(b)
	b = le.AppendUint32(b, 0)
	n := 0
	for _, id := range s.IDs {
		if sel == nil || sel(id) {
			b = le.AppendUint32(b, uint32(id))
			n++
		}
	}
	le.PutUint32(b[at:], uint32(n))
	for i, id := range s.IDs {
		if sel == nil || sel(id) {
			b = append(b, s.Record(i)...)
		}
	}
	return b
}

// parseEntities reads appendEntities' encoding into dst (reset to tick
// and recordSize) and returns the bytes after it.
func parseEntities(dst *deltacomp.Snapshot, b []byte, tick uint32, recordSize int) ([]byte, error) {
	if len(b) < 4 {
		return nil, errBody
	}
	n := uint64(le.Uint32(b))
	b = b[4:]
	if n*uint64(4+recordSize) > uint64(len(b)) {
		return nil, errBody
	}
	dst.Reset(tick, recordSize)
	for i := range int(n) {
		id := proto.NetworkID(le.Uint32(b[4*i:]))
		if i > 0 && id <= dst.IDs[i-1] {
			return nil, fmt.Errorf("%w: entity ids not ascending", errBody)
		}
		dst.IDs = append(dst.IDs, id)
	}
	b = b[4*n:]
	dst.Records = append(dst.Records, b[:int(n)*recordSize]...)
	return b[int(n)*recordSize:], nil
}

// appendServerState appends a RecordState body: revision u32, server
// spawn u32, players (u16 count, u16 each), snapshots (u8 count), each
// tick u32 and its entities; snaps[0] is of st.Tick, the others the
// past, ascending.
func appendServerState(b []byte, st *sim.ServerState, snaps []*deltacomp.Snapshot) []byte {
	b = le.AppendUint32(b, st.Revision)
	b = le.AppendUint32(b, st.ServerSpawn)
	b = le.AppendUint16(b, uint16(len(st.Players)))
	for _, p := range st.Players {
		b = le.AppendUint16(b, p)
	}
	b = append(b, byte(len(snaps)))
	for _, s := range snaps {
		b = le.AppendUint32(b, s.Tick)
		b = appendEntities(b, s, nil)
	}
	return b
}

// ServerState is a RecordState's content: the engine state to restore
// (sim.RestoreServer) and the snapshots, the tick's first.
type ServerState struct {
	State     sim.ServerState
	Snapshots []*deltacomp.Snapshot
}

// ParseServerState decodes a RecordState body of tick, whose records
// are recordSize bytes.
func ParseServerState(body []byte, tick uint32, recordSize int) (ServerState, error) {
	if len(body) < 4+4+2 {
		return ServerState{}, errBody
	}
	st := ServerState{State: sim.ServerState{Tick: tick, Revision: le.Uint32(body), ServerSpawn: le.Uint32(body[4:])}}
	n := int(le.Uint16(body[8:]))
	b := body[10:]
	if len(b) < 2*n+1 {
		return ServerState{}, errBody
	}
	st.State.Players = make([]uint16, n)
	for i := range st.State.Players {
		st.State.Players[i] = le.Uint16(b[2*i:])
	}
	ns := int(b[2*n])
	b = b[2*n+1:]
	if ns == 0 {
		return ServerState{}, fmt.Errorf("%w: a state without its snapshot", errBody)
	}
	for i := range ns {
		if len(b) < 4 {
			return ServerState{}, errBody
		}
		s := new(deltacomp.Snapshot)
		var err error
		if b, err = parseEntities(s, b[4:], le.Uint32(b), recordSize); err != nil {
			return ServerState{}, err
		}
		if i == 0 && s.Tick != tick {
			return ServerState{}, fmt.Errorf("%w: the first snapshot is of tick %d, not %d", errBody, s.Tick, tick)
		}
		st.Snapshots = append(st.Snapshots, s)
	}
	if len(b) != 0 {
		return ServerState{}, fmt.Errorf("%w: %d bytes after the snapshots", errBody, len(b))
	}
	return st, nil
}

// Flags of a recorded input.
const (
	stepMissing  = 1 << 0
	stepRejected = 1 << 1
	stepRewound  = 1 << 2
	stepFlags    = stepMissing | stepRejected | stepRewound
)

// appendStep appends a RecordStep body: the changes (u8 count; each
// player u16, join u8, reason u8 length and bytes), the inputs (u16
// count; each player u16, flags u8, the view from u32, to u32, blend
// u16 if rewound, the input), the messages (u16 count; each player u16,
// channel u8, tick u32, late u8, u16 length and data). ok is false for
// a step with more than the counts hold.
func appendStep(b []byte, r *sim.StepRecord) (_ []byte, ok bool) {
	if len(r.Changes) > 0xff || len(r.Inputs) > 0xffff || len(r.Messages) > 0xffff {
		return b, false
	}
	b = append(b, byte(len(r.Changes)))
	for _, c := range r.Changes {
		join := byte(0)
		if c.Join {
			join = 1
		}
		reason := c.Reason[:min(len(c.Reason), 0xff)]
		b = le.AppendUint16(b, c.Player)
		b = append(b, join, byte(len(reason)))
		b = append(b, reason...)
	}
	b = le.AppendUint16(b, uint16(len(r.Inputs)))
	for i := range r.Inputs {
		in := &r.Inputs[i]
		var flags byte
		if in.Missing {
			flags |= stepMissing
		}
		if in.Rejected {
			flags |= stepRejected
		}
		if in.Rewound {
			flags |= stepRewound
		}
		b = le.AppendUint16(b, in.Player)
		b = append(b, flags)
		if in.Rewound {
			b = le.AppendUint32(b, in.View.From)
			b = le.AppendUint32(b, in.View.To)
			b = le.AppendUint16(b, in.View.Blend)
		}
		b = append(b, in.Data...)
	}
	b = le.AppendUint16(b, uint16(len(r.Messages)))
	for i := range r.Messages {
		m := &r.Messages[i]
		if len(m.Data) > 0xffff {
			return b, false
		}
		late := byte(0)
		if m.Late {
			late = 1
		}
		b = le.AppendUint16(b, m.Player)
		b = append(b, m.Channel)
		b = le.AppendUint32(b, m.Tick)
		b = append(b, late)
		b = le.AppendUint16(b, uint16(len(m.Data)))
		b = append(b, m.Data...)
	}
	return b, true
}

// ParseStep decodes a RecordStep body of tick, whose inputs are
// inputSize bytes, into r (reset first; its inputs' and messages' data
// alias body).
func ParseStep(body []byte, tick uint32, inputSize int, r *sim.StepRecord) error {
	r.Reset()
	r.Tick = tick
	d := decoder{b: body}
	for range int(d.u8()) {
		c := sim.MemberChange{Player: d.u16()}
		c.Join = d.flag()
		c.Reason = string(d.bytes(int(d.u8())))
		r.Changes = append(r.Changes, c)
	}
	n := int(d.u16())
	if n*(3+inputSize) > len(d.b)-d.off {
		return errBody
	}
	for range n {
		in := sim.RecordedInput{Player: d.u16()}
		flags := d.u8()
		if flags&^stepFlags != 0 {
			return fmt.Errorf("%w: input flags %#x", errBody, flags)
		}
		in.Missing, in.Rejected, in.Rewound = flags&stepMissing != 0, flags&stepRejected != 0, flags&stepRewound != 0
		if in.Rewound {
			in.View = sim.View{From: d.u32(), To: d.u32(), Blend: d.u16()}
		}
		in.Data = d.bytes(inputSize)
		if i := len(r.Inputs); i > 0 && r.Inputs[i-1].Player >= in.Player {
			return fmt.Errorf("%w: inputs not in ascending player order", errBody)
		}
		r.Inputs = append(r.Inputs, in)
	}
	n = int(d.u16())
	if n*10 > len(d.b)-d.off {
		return errBody
	}
	for range n {
		m := sim.Message{Player: d.u16(), Channel: d.u8(), Tick: d.u32()}
		m.Late = d.flag()
		m.Data = d.bytes(int(d.u16()))
		r.Messages = append(r.Messages, m)
	}
	if d.bad || d.off != len(d.b) {
		return errBody
	}
	return nil
}

// decoder reads a body's fields; past the end it reads zeros and
// records that it went bad.
type decoder struct {
	b   []byte
	off int
	bad bool
}

func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.b)-d.off {
		d.bad = true
		d.off = len(d.b)
		return nil
	}
	d.off += n
	return d.b[d.off-n : d.off : d.off]
}

func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.take(2); b != nil {
		return le.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return le.Uint32(b)
	}
	return 0
}

func (d *decoder) bytes(n int) []byte { return d.take(n) }

// flag reads a bool byte: 0 or 1, anything else is bad.
func (d *decoder) flag() bool {
	v := d.u8()
	if v > 1 {
		d.bad = true
	}
	return v == 1
}

// ParseChecksum decodes a RecordChecksum body.
func ParseChecksum(body []byte) (uint64, error) {
	if len(body) != 8 {
		return 0, errBody
	}
	return le.Uint64(body), nil
}

// ParseInput decodes a RecordInput body: the player and its input
// (aliasing body).
func ParseInput(body []byte, inputSize int) (uint16, []byte, error) {
	if len(body) != 2+inputSize {
		return 0, nil, errBody
	}
	return le.Uint16(body), body[2:], nil
}

// ParseEntities decodes a RecordPredicted or RecordConfirmed body of
// tick into dst.
func ParseEntities(dst *deltacomp.Snapshot, body []byte, tick uint32, recordSize int) error {
	rest, err := parseEntities(dst, body, tick, recordSize)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes after the entities", errBody, len(rest))
	}
	return err
}

// ParseCheck decodes a RecordCheck body: the server's checksum and
// whether the client's replica matched it.
func ParseCheck(body []byte) (sum uint64, ok bool, err error) {
	if len(body) != 9 || body[8] > 1 {
		return 0, false, errBody
	}
	return le.Uint64(body), body[8] == 1, nil
}

// commandFixed is a command's kind u8, player u16 and seq u32 (an
// input's data follows).
const commandFixed = 1 + 2 + 4

func appendCommand(b []byte, c *sim.Command) []byte {
	b = append(b, byte(c.Kind))
	b = le.AppendUint16(b, c.Player)
	b = le.AppendUint32(b, c.Seq)
	if c.Kind == sim.CommandInput {
		b = append(b, c.Data...)
	}
	return b
}

// ParseCommands decodes a RecordCommands body of tick: u16 count, then
// each command's kind, player, seq and (inputs) data. The commands'
// data alias body.
func ParseCommands(body []byte, tick uint32, inputSize int) ([]sim.Command, error) {
	if len(body) < 2 {
		return nil, errBody
	}
	n := int(le.Uint16(body))
	b := body[2:]
	if n*commandFixed > len(b) {
		return nil, errBody
	}
	cmds := make([]sim.Command, 0, n)
	for range n {
		if len(b) < commandFixed {
			return nil, errBody
		}
		c := sim.Command{Kind: sim.CommandKind(b[0]), Player: le.Uint16(b[1:]), Seq: le.Uint32(b[3:]), Tick: tick}
		b = b[commandFixed:]
		switch c.Kind {
		case sim.CommandInput:
			if len(b) < inputSize {
				return nil, errBody
			}
			c.Data, b = b[:inputSize:inputSize], b[inputSize:]
		case sim.CommandJoin, sim.CommandLeave:
		default:
			return nil, fmt.Errorf("%w: command kind %d", errBody, c.Kind)
		}
		cmds = append(cmds, c)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the commands", errBody, len(b))
	}
	return cmds, nil
}

// Committed is a RecordCommitted's content.
type Committed struct {
	Cause  StateCause
	Reason proto.ResyncReason // StateLoaded: why it was sent (0: the join)
	// State is the sim.Lockstep.AppendState bytes: tick u32, players
	// (u16 count, u16 each), the game's canonical state.
	State []byte
}

// Canonical is the game's canonical state within State (nil if State
// is malformed).
func (c *Committed) Canonical() []byte {
	if len(c.State) < 6 {
		return nil
	}
	n := 6 + 2*int(le.Uint16(c.State[4:]))
	if len(c.State) < n {
		return nil
	}
	return c.State[n:]
}

// ParseCommitted decodes a RecordCommitted body of tick (State aliases
// body).
func ParseCommitted(body []byte, tick uint32) (Committed, error) {
	if len(body) < 2+6 || StateCause(body[0]) >= stateCauseEnd {
		return Committed{}, errBody
	}
	c := Committed{Cause: StateCause(body[0]), Reason: proto.ResyncReason(body[1]), State: body[2:]}
	if le.Uint32(c.State) != tick || c.Canonical() == nil {
		return Committed{}, fmt.Errorf("%w: committed state of another tick or truncated", errBody)
	}
	return c, nil
}

// appendEvent appends a RecordEvent body: kind u8, player u16, arg u32,
// text (u8 length, bytes).
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, byte(e.Kind))
	b = le.AppendUint16(b, e.Player)
	b = le.AppendUint32(b, e.Arg)
	text := e.Text[:min(len(e.Text), 255)]
	b = append(b, byte(len(text)))
	return append(b, text...)
}

// ParseEvent decodes a RecordEvent body.
func ParseEvent(body []byte) (Event, error) {
	if len(body) < 8 || len(body) != 8+int(body[7]) || body[0] == 0 || EventKind(body[0]) >= eventKindEnd {
		return Event{}, errBody
	}
	return Event{Kind: EventKind(body[0]), Player: le.Uint16(body[1:]), Arg: le.Uint32(body[3:]), Text: string(body[8:])}, nil
}
