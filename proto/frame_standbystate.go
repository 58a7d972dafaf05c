package proto

// StandbyStateFrame is the host's state for its warm standby (host
// migration, docs/MIGRATION.md), sent on the reliable channel when the
// standby is chosen and every few seconds: the engine state besides the
// world (tick, revision, the server's spawn counter, the joined players)
// and full snapshots, the first of the state's tick and the rest of the
// ticks before it (ascending), for the standby's lag-compensation
// history. The standby replays standby step frames from it.
type StandbyStateFrame struct {
	Epoch       uint32
	Tick        uint32
	Revision    uint32
	ServerSpawn uint32
	Players     []uint16            // ≤ MaxStandbyPlayers, ascending
	Snapshots   []FullSnapshotFrame // 1..MaxStandbySnapshots
}

// Standby state limits: the decoded size of all the snapshots together
// is at most MaxStandbyStateRaw.
const (
	MaxStandbyPlayers   = 255
	MaxStandbySnapshots = 64
	MaxStandbyStateRaw  = 4 * MaxSnapshotSize
)

const standbyStateFixed = 1 + 4 + 4 + 4 + 4 + 1 + 1

func (f *StandbyStateFrame) Len() int {
	n := standbyStateFixed + 2*len(f.Players)
	for i := range f.Snapshots {
		n += f.Snapshots[i].Len()
	}
	return n
}

var (
	errSbStateTrunc = truncated("standby state frame", "")
	errSbStateType  = malformed("standby state frame", "type")
	errSbStateCount = malformed("standby state frame", "count")
	errSbStateRaw   = tooLarge("standby state frame", "raw length")
)

func (f *StandbyStateFrame) Append(b []byte) ([]byte, error) {
	if len(f.Players) > MaxStandbyPlayers || len(f.Snapshots) == 0 || len(f.Snapshots) > MaxStandbySnapshots {
		return b, errSbStateCount
	}
	raw := 0
	for i := range f.Snapshots {
		raw += int(f.Snapshots[i].RawLen)
	}
	if raw > MaxStandbyStateRaw {
		return b, errSbStateRaw
	}
	start := len(b)
	b = append(b, byte(FrameStandbyState))
	b = le.AppendUint32(b, f.Epoch)
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint32(b, f.Revision)
	b = le.AppendUint32(b, f.ServerSpawn)
	b = append(b, byte(len(f.Players)))
	for _, p := range f.Players {
		b = le.AppendUint16(b, p)
	}
	b = append(b, byte(len(f.Snapshots)))
	for i := range f.Snapshots {
		var err error
		if b, err = f.Snapshots[i].Append(b); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// ParseStandbyStateFrame parses a standby state frame. Players and
// Snapshots are new slices; the snapshots' data alias b.
func ParseStandbyStateFrame(b []byte) (StandbyStateFrame, int, error) {
	n, err := skipStandbyStateFrame(b)
	if err != nil {
		return StandbyStateFrame{}, 0, err
	}
	// Valid: read it without checks.
	r := reader{b: b, off: 1}
	f := StandbyStateFrame{Epoch: r.u32(), Tick: r.u32(), Revision: r.u32(), ServerSpawn: r.u32()}
	if np := int(r.u8()); np > 0 {
		f.Players = make([]uint16, np)
	}
	for i := range f.Players {
		f.Players[i] = r.u16()
	}
	f.Snapshots = make([]FullSnapshotFrame, r.u8())
	for i := range f.Snapshots {
		s, sn, _ := ParseFullSnapshotFrame(b[r.off:])
		f.Snapshots[i] = s
		r.off += sn
	}
	return f, n, nil
}

// skipStandbyStateFrame validates a standby state frame and returns its
// length, keeping nothing.
func skipStandbyStateFrame(b []byte) (int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStandbyState) {
		return 0, errSbStateType
	}
	r.u32()
	r.u32()
	r.u32()
	r.u32()
	np := r.u8()
	r.bytes(2 * uint32(np))
	ns := int(r.u8())
	if err := r.check(errSbStateTrunc, errSbStateTrunc); err != nil {
		return 0, err
	}
	if ns == 0 || ns > MaxStandbySnapshots {
		return 0, errSbStateCount
	}
	raw := 0
	for range ns {
		s, sn, err := ParseFullSnapshotFrame(b[r.off:])
		if err != nil {
			return 0, err
		}
		raw += int(s.RawLen)
		r.off += sn
	}
	if raw > MaxStandbyStateRaw {
		return 0, errSbStateRaw
	}
	return r.off, nil
}
