package proto

// Commits mode (docs/COMMITS.md) replicates commands, not
// state. Three frames carry it besides ControlCommit (the server's commit,
// in every packet) and FullSnapshotFrame (a committed state for a joining
// or resynchronised client):
//
//   - CommandFrame, on the reliable channel both ways: a player's command
//     for a tick, or a join or leave the server schedules;
//   - CommitItemFrame, in every client packet: how far the client's live
//     state got and how many commands it has sent;
//   - CommitSumsFrame, on the reliable channel: the client's checksums of
//     its committed state, one per tick, for desync detection.

// CommandKind says what a CommandFrame carries (sim.CommandKind on the
// wire).
type CommandKind uint8

const (
	CommandInput   CommandKind = 0 // a player's command (Data is one input)
	CommandJoin    CommandKind = 1 // Player joins at Tick (server only)
	CommandLeave   CommandKind = 2 // Player leaves at Tick (server only)
	commandKindEnd CommandKind = 3
)

var commandKindNames = [...]string{CommandInput: "input", CommandJoin: "join", CommandLeave: "leave"}

func (k CommandKind) String() string {
	if k < commandKindEnd {
		return commandKindNames[k]
	}
	return "unknown"
}

// CommandFrame is one entry of the command buffer. From a client, Player
// is the slot (of the connection's players) issuing it, Seq counts that
// player's commands from 1 and Tick is the tick it executes at; from the
// server it is the same command relayed (with Tick moved forward when it
// arrived too late for its tick), or a join or leave with the server's
// own Seq.
type CommandFrame struct {
	Kind   CommandKind
	Player uint16
	Tick   uint32
	Seq    uint32
	Data   []byte // CommandInput: one input, 1..MaxInputBytes bytes; else empty
}

const commandFixed = 1 + 1 + 2 + 4 + 4

func (f *CommandFrame) Len() int {
	return commandFixed + VarintLen(uint32(len(f.Data))) + len(f.Data)
}

var (
	errCmdTrunc = truncated("command frame", "")
	errCmdType  = malformed("command frame", "type")
	errCmdKind  = malformed("command frame", "kind")
	errCmdLen   = malformed("command frame", "data length")
)

func (f *CommandFrame) check() error {
	switch {
	case f.Kind >= commandKindEnd:
		return errCmdKind
	case f.Kind == CommandInput && (len(f.Data) == 0 || len(f.Data) > MaxInputBytes):
		return errCmdLen
	case f.Kind != CommandInput && len(f.Data) != 0:
		return errCmdLen
	}
	return nil
}

func (f *CommandFrame) Append(b []byte) ([]byte, error) {
	if err := f.check(); err != nil {
		return b, err
	}
	b = append(b, byte(FrameCommand), byte(f.Kind))
	b = le.AppendUint16(b, f.Player)
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint32(b, f.Seq)
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

// ParseCommandFrame parses a command frame; Data aliases b.
func ParseCommandFrame(b []byte) (CommandFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameCommand) {
		return CommandFrame{}, 0, errCmdType
	}
	f := CommandFrame{Kind: CommandKind(r.u8()), Player: r.u16(), Tick: r.u32(), Seq: r.u32()}
	n := r.varint()
	if err := r.check(errCmdTrunc, errCmdLen); err != nil {
		return CommandFrame{}, 0, err
	}
	if n > MaxInputBytes {
		return CommandFrame{}, 0, errCmdLen
	}
	if n > 0 {
		f.Data = r.bytes(n)
	}
	if err := r.check(errCmdTrunc, errCmdLen); err != nil {
		return CommandFrame{}, 0, err
	}
	if err := f.check(); err != nil {
		return CommandFrame{}, 0, err
	}
	return f, r.off, nil
}

// CommitItemFrame is a client's commit item: its live state has simulated
// Live, and it has sent Commands command frames so far. The server counts
// Live only once it has received that many (they travel reliably, this
// frame does not), so a tick is committed only when no command for it
// can still be on its way.
type CommitItemFrame struct {
	Live     uint32
	Commands uint32
}

const commitItemFrameSize = 1 + 4 + 4

func (f *CommitItemFrame) Len() int { return commitItemFrameSize }

var (
	errItemTrunc = truncated("commit item frame", "")
	errItemType  = malformed("commit item frame", "type")
)

func (f *CommitItemFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameCommitItem))
	b = le.AppendUint32(b, f.Live)
	return le.AppendUint32(b, f.Commands), nil
}

func ParseCommitItemFrame(b []byte) (CommitItemFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameCommitItem) {
		return CommitItemFrame{}, 0, errItemType
	}
	f := CommitItemFrame{Live: r.u32(), Commands: r.u32()}
	if err := r.check(errItemTrunc, errItemTrunc); err != nil {
		return CommitItemFrame{}, 0, err
	}
	return f, r.off, nil
}

// MaxCommitSums bounds the checksums of one CommitSumsFrame.
const MaxCommitSums = 64

// CommitSumsFrame holds a client's checksums (sim.Checksummer.WorldSum)
// of its committed state after each tick From, From+1, ...: the server
// compares them with its own and resynchronises a client that differs,
// naming the first tick that did.
type CommitSumsFrame struct {
	From uint32
	Sums []uint64 // 1..MaxCommitSums
}

func (f *CommitSumsFrame) Len() int { return 1 + 4 + 1 + 8*len(f.Sums) }

var (
	errSumsTrunc = truncated("commit sums frame", "")
	errSumsType  = malformed("commit sums frame", "type")
	errSumsCount = malformed("commit sums frame", "count")
)

func (f *CommitSumsFrame) Append(b []byte) ([]byte, error) {
	if len(f.Sums) == 0 || len(f.Sums) > MaxCommitSums {
		return b, errSumsCount
	}
	b = append(b, byte(FrameCommitSums))
	b = le.AppendUint32(b, f.From)
	b = append(b, byte(len(f.Sums)))
	for _, s := range f.Sums {
		b = le.AppendUint64(b, s)
	}
	return b, nil
}

// ParseCommitSumsFrame parses a commit sums frame into f, reusing
// f.Sums.
func ParseCommitSumsFrame(b []byte, f *CommitSumsFrame) (int, error) {
	from, n, end, err := scanCommitSums(b)
	if err != nil {
		return 0, err
	}
	f.From = from
	f.Sums = f.Sums[:0]
	for i := range n {
		f.Sums = append(f.Sums, le.Uint64(b[6+8*i:]))
	}
	return end, nil
}

// scanCommitSums validates a commit sums frame and returns its first
// tick, its count and its length.
func scanCommitSums(b []byte) (from uint32, n, end int, err error) {
	r := reader{b: b}
	if !r.frameType(FrameCommitSums) {
		return 0, 0, 0, errSumsType
	}
	from, n = r.u32(), int(r.u8())
	if err := r.check(errSumsTrunc, errSumsTrunc); err != nil {
		return 0, 0, 0, err
	}
	if n == 0 || n > MaxCommitSums {
		return 0, 0, 0, errSumsCount
	}
	if !r.need(8 * n) {
		return 0, 0, 0, errSumsTrunc
	}
	return from, n, r.off + 8*n, nil
}

// CommitArg packs ControlCommit's Arg: the server's stream position (the
// reliable commit-mode frames it had sent the client when it decided the
// commit: the client commits only once it has received as many), how
// many of the client's commands it had received by then (modulo 2^16:
// the client's own commands it has not received yet cannot be at a
// committed tick, the server will move them), and the lead, in ticks,
// commands are scheduled ahead of the present.
func CommitArg(sent uint32, received, lead uint16) uint64 {
	return uint64(lead)<<48 | uint64(received)<<32 | uint64(sent)
}

// SplitCommitArg is the inverse of CommitArg.
func SplitCommitArg(a uint64) (sent uint32, received, lead uint16) {
	return uint32(a), uint16(a >> 32), uint16(a >> 48)
}
