package proto

// StandbyStepFrame is a host's record of one simulated tick, sent to its
// warm standby on the reliable channel (host migration,
// docs/MIGRATION.md): the players who joined or left before the step,
// every player's input as the step took it, and the postmarked messages
// that ran. Replayed in order from a standby state it gives the host's
// exact world (sim.StepRecord).
type StandbyStepFrame struct {
	Epoch     uint32
	Tick      uint32
	InputSize uint16 // bytes of every input, 1..MaxInputBytes
	Changes   []StandbyChange
	Inputs    []StandbyInput
	Messages  []StandbyMessage
}

// StandbyChange is a join or a leave (with its reason) applied before
// the step.
type StandbyChange struct {
	Player uint16
	Join   bool
	Reason []byte // leaves only, ≤ MaxControlText bytes
}

// StandbyInput is a player's input as the step took it.
type StandbyInput struct {
	Player   uint16
	Missing  bool
	Rejected bool
	// Rewound: the step rewound for the player to the view From, To,
	// Blend (lag compensation).
	Rewound  bool
	From, To uint32
	Blend    uint16
	Data     []byte // InputSize bytes
}

// StandbyMessage is a postmarked message that ran at the step.
type StandbyMessage struct {
	Player  uint16
	Channel uint8
	Tick    uint32 // its postmark
	Late    bool   // it arrived after its tick and ran now
	Data    []byte // ≤ MaxMessageSize
}

// Standby step limits.
const (
	MaxStandbyInputs   = 255
	MaxStandbyChanges  = 255
	MaxStandbyMessages = 1024
)

const (
	standbyStepFixed = 1 + 4 + 4 + 2 + 1 + 1 + 2
	standbyInputFlag = 2 + 1 // + view + data
	standbyViewSize  = 4 + 4 + 2
	standbyChange    = 2 + 1 + 1     // + reason
	standbyMessage   = 2 + 1 + 4 + 1 // + varint length + data

	sbMissing  = 0x01
	sbRejected = 0x02
	sbRewound  = 0x04
	sbInputAll = sbMissing | sbRejected | sbRewound

	sbJoin  = 1
	sbLeave = 2

	sbLate = 0x01
)

func (f *StandbyStepFrame) Len() int {
	n := standbyStepFixed
	for i := range f.Changes {
		n += standbyChange + len(f.Changes[i].Reason)
	}
	for i := range f.Inputs {
		n += standbyInputFlag + int(f.InputSize)
		if f.Inputs[i].Rewound {
			n += standbyViewSize
		}
	}
	for i := range f.Messages {
		d := len(f.Messages[i].Data)
		n += standbyMessage + VarintLen(uint32(d)) + d
	}
	return n
}

var (
	errSbStepTrunc  = truncated("standby step frame", "")
	errSbStepType   = malformed("standby step frame", "type")
	errSbStepSize   = malformed("standby step frame", "input size")
	errSbStepCount  = malformed("standby step frame", "count")
	errSbStepFlags  = malformed("standby step frame", "flags")
	errSbStepChange = malformed("standby step frame", "change kind")
	errSbStepText   = malformed("standby step frame", "reason length")
	errSbStepData   = malformed("standby step frame", "data length")
)

func (f *StandbyStepFrame) Append(b []byte) ([]byte, error) {
	if f.InputSize == 0 || f.InputSize > MaxInputBytes {
		return b, errSbStepSize
	}
	if len(f.Inputs) > MaxStandbyInputs || len(f.Changes) > MaxStandbyChanges || len(f.Messages) > MaxStandbyMessages {
		return b, errSbStepCount
	}
	for i := range f.Changes {
		c := &f.Changes[i]
		if len(c.Reason) > MaxControlText || c.Join && len(c.Reason) > 0 {
			return b, errSbStepText
		}
	}
	for i := range f.Inputs {
		if len(f.Inputs[i].Data) != int(f.InputSize) {
			return b, errSbStepData
		}
	}
	for i := range f.Messages {
		if len(f.Messages[i].Data) > MaxMessageSize {
			return b, errSbStepData
		}
	}
	b = append(b, byte(FrameStandbyStep))
	b = le.AppendUint32(b, f.Epoch)
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint16(b, f.InputSize)
	b = append(b, byte(len(f.Changes)), byte(len(f.Inputs)))
	b = le.AppendUint16(b, uint16(len(f.Messages)))
	for i := range f.Changes {
		c := &f.Changes[i]
		kind := byte(sbLeave)
		if c.Join {
			kind = sbJoin
		}
		b = le.AppendUint16(b, c.Player)
		b = append(b, kind, byte(len(c.Reason)))
		b = append(b, c.Reason...)
	}
	for i := range f.Inputs {
		in := &f.Inputs[i]
		var flags byte
		if in.Missing {
			flags |= sbMissing
		}
		if in.Rejected {
			flags |= sbRejected
		}
		if in.Rewound {
			flags |= sbRewound
		}
		b = le.AppendUint16(b, in.Player)
		b = append(b, flags)
		if in.Rewound {
			b = le.AppendUint32(b, in.From)
			b = le.AppendUint32(b, in.To)
			b = le.AppendUint16(b, in.Blend)
		}
		b = append(b, in.Data...)
	}
	for i := range f.Messages {
		m := &f.Messages[i]
		var flags byte
		if m.Late {
			flags |= sbLate
		}
		b = le.AppendUint16(b, m.Player)
		b = append(b, m.Channel)
		b = le.AppendUint32(b, m.Tick)
		b = append(b, flags)
		b = AppendVarint(b, uint32(len(m.Data)))
		b = append(b, m.Data...)
	}
	return b, nil
}

// ParseStandbyStepFrame parses a standby step frame. The slices are new
// (bounded by the frame's limits); the bytes they hold alias b.
func ParseStandbyStepFrame(b []byte) (StandbyStepFrame, int, error) {
	n, err := skipStandbyStepFrame(b)
	if err != nil {
		return StandbyStepFrame{}, 0, err
	}
	// Valid: read it without checks.
	r := reader{b: b, off: 1}
	f := StandbyStepFrame{Epoch: r.u32(), Tick: r.u32(), InputSize: r.u16()}
	nc, ni, nm := int(r.u8()), int(r.u8()), int(r.u16())
	if nc > 0 {
		f.Changes = make([]StandbyChange, nc)
	}
	for i := range f.Changes {
		c := &f.Changes[i]
		c.Player = r.u16()
		c.Join = r.u8() == sbJoin
		if l := r.u8(); l > 0 {
			c.Reason = r.bytes(uint32(l))
		}
	}
	if ni > 0 {
		f.Inputs = make([]StandbyInput, ni)
	}
	for i := range f.Inputs {
		in := &f.Inputs[i]
		in.Player = r.u16()
		flags := r.u8()
		in.Missing, in.Rejected, in.Rewound = flags&sbMissing != 0, flags&sbRejected != 0, flags&sbRewound != 0
		if in.Rewound {
			in.From, in.To, in.Blend = r.u32(), r.u32(), r.u16()
		}
		in.Data = r.bytes(uint32(f.InputSize))
	}
	if nm > 0 {
		f.Messages = make([]StandbyMessage, nm)
	}
	for i := range f.Messages {
		m := &f.Messages[i]
		m.Player, m.Channel, m.Tick = r.u16(), r.u8(), r.u32()
		m.Late = r.u8()&sbLate != 0
		if l := r.varint(); l > 0 {
			m.Data = r.bytes(l)
		}
	}
	return f, n, nil
}

// skipStandbyStepFrame validates a standby step frame and returns its
// length, keeping nothing.
func skipStandbyStepFrame(b []byte) (int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStandbyStep) {
		return 0, errSbStepType
	}
	r.u32()
	r.u32()
	size := r.u16()
	nc, ni, nm := int(r.u8()), int(r.u8()), int(r.u16())
	if err := r.check(errSbStepTrunc, errSbStepTrunc); err != nil {
		return 0, err
	}
	if size == 0 || size > MaxInputBytes {
		return 0, errSbStepSize
	}
	if nm > MaxStandbyMessages {
		return 0, errSbStepCount
	}
	for range nc {
		r.u16()
		kind, l := r.u8(), r.u8()
		if r.short {
			return 0, errSbStepTrunc
		}
		if kind != sbJoin && kind != sbLeave {
			return 0, errSbStepChange
		}
		if kind == sbJoin && l > 0 {
			return 0, errSbStepText
		}
		r.bytes(uint32(l))
	}
	for range ni {
		r.u16()
		flags := r.u8()
		if flags&^sbInputAll != 0 {
			return 0, errSbStepFlags
		}
		if flags&sbRewound != 0 {
			r.u32()
			r.u32()
			r.u16()
		}
		r.bytes(uint32(size))
		if r.short {
			return 0, errSbStepTrunc
		}
	}
	for range nm {
		r.u16()
		r.u8()
		r.u32()
		if r.u8()&^sbLate != 0 {
			return 0, errSbStepFlags
		}
		l := r.varint()
		if err := r.check(errSbStepTrunc, errSbStepData); err != nil {
			return 0, err
		}
		if l > MaxMessageSize {
			return 0, errSbStepData
		}
		r.bytes(l)
	}
	if err := r.check(errSbStepTrunc, errSbStepData); err != nil {
		return 0, err
	}
	return r.off, nil
}
