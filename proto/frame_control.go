package proto

// ControlCode names a lifecycle event carried by a ControlFrame.
type ControlCode uint8

// Control codes and what each uses of ControlFrame's fields.
const (
	// ControlPlayerJoined: Player joined at Tick; Arg is the revision after.
	ControlPlayerJoined ControlCode = 1
	// ControlPlayerLeft: Player left at Tick; Arg is the revision after;
	// Text the reason.
	ControlPlayerLeft ControlCode = 2
	// ControlActionRejected: the server rejected Player's action for Tick
	// (an action is named by its player and tick); Text the reason; Arg
	// is 0.
	ControlActionRejected ControlCode = 3
	// ControlHostMigration: the game moved to a new host and resumes from
	// Tick; Player is the new host's player (0: none), Arg its epoch, Text
	// its address.
	ControlHostMigration ControlCode = 4
	// ControlCommit: every peer reached Tick; commands older are final
	// (lockstep mode).
	ControlCommit ControlCode = 5
	// ControlMessageLate: Player's message postmarked for Tick arrived
	// late; Arg packs the tick it ran at (0: dropped) and its channel
	// (MessageLateArg, SplitMessageLateArg).
	ControlMessageLate ControlCode = 6
	// ControlLeave, client → server (commits mode): the client leaves
	// cleanly; its players' leaves are scheduled like joins, and nobody
	// waits for it from then on. Tick is its live tick; Player and Arg
	// are 0.
	ControlLeave ControlCode = 7
	// ControlPlayerInterrupted: Player's connection went silent at Tick
	// (the server has heard nothing from it for its interrupt time, or
	// its session ended without a leave and its slot waits for it to
	// rejoin). Player, Tick; Arg 0.
	ControlPlayerInterrupted ControlCode = 8
	// ControlPlayerBack: Player is heard again at Tick, on its session or
	// on a new one that rejoined its slot. Player, Tick; Arg 0.
	ControlPlayerBack ControlCode = 9
	// ControlHandOver, peer host → players (host migration): the host
	// quits and hands the game to its successor. Player is the
	// successor's player, Tick the last tick the host ran (the
	// successor resumes from its standby at that tick), Arg the host's
	// epoch, Text the successor's address.
	ControlHandOver ControlCode = 10
	// ControlStandbyEnd, peer host → one player (host migration): the
	// host no longer keeps the player's warm standby (it is no longer
	// first enough in the succession); the player drops it, and hosts
	// cold if it is elected. Tick is the host's tick, Arg its epoch;
	// Player the player.
	ControlStandbyEnd ControlCode = 11
	controlCodeEnd    ControlCode = 12
)

var controlNames = [...]string{
	ControlPlayerJoined:      "player joined",
	ControlPlayerLeft:        "player left",
	ControlActionRejected:    "action rejected",
	ControlHostMigration:     "host migration",
	ControlCommit:            "commit",
	ControlMessageLate:       "message late",
	ControlLeave:             "leave",
	ControlPlayerInterrupted: "player interrupted",
	ControlPlayerBack:        "player back",
	ControlHandOver:          "hand-over",
	ControlStandbyEnd:        "standby end",
}

func (c ControlCode) String() string {
	if c > 0 && c < controlCodeEnd {
		return controlNames[c]
	}
	return "unknown"
}

// MessageLateArg packs a ControlMessageLate's Arg: bits 0–31 the tick
// the message ran at (0 when it was dropped), bits 32–39 its channel.
func MessageLateArg(ranAt uint32, channel uint8) uint64 {
	return uint64(ranAt) | uint64(channel)<<32
}

// SplitMessageLateArg unpacks MessageLateArg.
func SplitMessageLateArg(arg uint64) (ranAt uint32, channel uint8) {
	return uint32(arg), uint8(arg >> 32)
}

// MaxControlText bounds ControlFrame.Text.
const MaxControlText = 255

// ControlFrame is a lifecycle event. All codes share one layout; the
// constants above say what each field means for each code, and unused
// fields are zero.
type ControlFrame struct {
	Code   ControlCode
	Player uint16
	Tick   uint32
	Arg    uint64
	Text   []byte // UTF-8, ≤ MaxControlText bytes
}

func (f *ControlFrame) Len() int {
	return 1 + 1 + 2 + 4 + 8 + VarintLen(uint32(len(f.Text))) + len(f.Text)
}

var (
	errCtlTrunc = truncated("control frame", "")
	errCtlType  = malformed("control frame", "type")
	errCtlCode  = malformed("control frame", "code")
	errCtlLen   = malformed("control frame", "text length")
)

func (f *ControlFrame) Append(b []byte) ([]byte, error) {
	if f.Code == 0 || f.Code >= controlCodeEnd {
		return b, errCtlCode
	}
	if len(f.Text) > MaxControlText {
		return b, errCtlLen
	}
	b = append(b, byte(FrameControl), byte(f.Code))
	b = le.AppendUint16(b, f.Player)
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint64(b, f.Arg)
	b = AppendVarint(b, uint32(len(f.Text)))
	return append(b, f.Text...), nil
}

func ParseControlFrame(b []byte) (ControlFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameControl) {
		return ControlFrame{}, 0, errCtlType
	}
	f := ControlFrame{Code: ControlCode(r.u8()), Player: r.u16(), Tick: r.u32(), Arg: r.u64()}
	n := r.varint()
	if err := r.check(errCtlTrunc, errCtlLen); err != nil {
		return ControlFrame{}, 0, err
	}
	if f.Code == 0 || f.Code >= controlCodeEnd {
		return ControlFrame{}, 0, errCtlCode
	}
	if n > MaxControlText {
		return ControlFrame{}, 0, errCtlLen
	}
	f.Text = r.bytes(n)
	if err := r.check(errCtlTrunc, errCtlLen); err != nil {
		return ControlFrame{}, 0, err
	}
	return f, r.off, nil
}
