package proto

// SnapshotDeltaFrame carries per-entity patches for the state at Tick,
// encoded by deltacomp (Codec is CodecXORRLE for the default encoder).
// Each entity's patch is against a baseline the client acknowledged; an
// entity the client never acknowledged is sent in full. Revision is the
// server's state revision at Tick; BaseRevision is the oldest revision the
// patches refer to, so a client that no longer holds it asks for a resync.
//
// Delta frames travel only inside packets, never in reliable messages, so
// Count and the data length are fixed 16-bit fields: an encoder can reserve
// the frame header, write entities straight after it until the packet
// budget is full, and fill in the counts at the end (BeginSnapshotDelta /
// EndSnapshotDelta).
type SnapshotDeltaFrame struct {
	Tick         uint32
	Revision     uint32
	BaseRevision uint32
	Codec        Codec
	Count        uint16 // entities in Data
	Data         []byte
}

// SnapshotDeltaHeaderSize is the frame size without Data.
const SnapshotDeltaHeaderSize = 1 + 4 + 4 + 4 + 1 + 2 + 2

const (
	offDeltaCount = 14
	offDeltaLen   = 16
)

func (f *SnapshotDeltaFrame) Len() int { return SnapshotDeltaHeaderSize + len(f.Data) }

var (
	errDeltaTrunc = truncated("snapshot delta frame", "")
	errDeltaType  = malformed("snapshot delta frame", "type")
	errDeltaCodec = malformed("snapshot delta frame", "codec")
	errDeltaBig   = tooLarge("snapshot delta frame", "length")
	errDeltaMark  = malformed("snapshot delta frame", "mark")
)

func (f *SnapshotDeltaFrame) Append(b []byte) ([]byte, error) {
	if len(f.Data) > MaxPacketSizeLimit {
		return b, errDeltaBig
	}
	b, mark, err := BeginSnapshotDelta(b, f.Tick, f.Revision, f.BaseRevision, f.Codec)
	if err != nil {
		return b, err
	}
	b = append(b, f.Data...)
	return EndSnapshotDelta(b, mark, f.Count)
}

// BeginSnapshotDelta appends a snapshot delta frame header with zero
// counts and returns the offset of the frame in b. Append entity data after
// it, then call EndSnapshotDelta.
func BeginSnapshotDelta(b []byte, tick, revision, baseRevision uint32, codec Codec) ([]byte, int, error) {
	if !codec.Valid() {
		return b, 0, errDeltaCodec
	}
	mark := len(b)
	b = append(b, byte(FrameSnapshotDelta))
	b = le.AppendUint32(b, tick)
	b = le.AppendUint32(b, revision)
	b = le.AppendUint32(b, baseRevision)
	b = append(b, byte(codec), 0, 0, 0, 0)
	return b, mark, nil
}

// EndSnapshotDelta fills in the entity count and data length of the frame
// begun at mark.
func EndSnapshotDelta(b []byte, mark int, count uint16) ([]byte, error) {
	if mark < 0 || mark+SnapshotDeltaHeaderSize > len(b) || FrameType(b[mark]) != FrameSnapshotDelta {
		return b, errDeltaMark
	}
	n := len(b) - mark - SnapshotDeltaHeaderSize
	if n > MaxPacketSizeLimit {
		return b, errDeltaBig
	}
	le.PutUint16(b[mark+offDeltaCount:], count)
	le.PutUint16(b[mark+offDeltaLen:], uint16(n))
	return b, nil
}

func ParseSnapshotDeltaFrame(b []byte) (SnapshotDeltaFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameSnapshotDelta) {
		return SnapshotDeltaFrame{}, 0, errDeltaType
	}
	var f SnapshotDeltaFrame
	f.Tick = r.u32()
	f.Revision = r.u32()
	f.BaseRevision = r.u32()
	f.Codec = Codec(r.u8())
	f.Count = r.u16()
	n := r.u16()
	if !f.Codec.Valid() && !r.short {
		return SnapshotDeltaFrame{}, 0, errDeltaCodec
	}
	if n > MaxPacketSizeLimit {
		return SnapshotDeltaFrame{}, 0, errDeltaBig
	}
	f.Data = r.bytes(uint32(n))
	if err := r.check(errDeltaTrunc, errDeltaTrunc); err != nil {
		return SnapshotDeltaFrame{}, 0, err
	}
	return f, r.off, nil
}

// SnapshotCause says why a full snapshot was sent.
type SnapshotCause uint8

const (
	CauseJoin      SnapshotCause = 1 // first state for a joining client
	CauseResync    SnapshotCause = 2 // answer to a resync request
	CauseMigration SnapshotCause = 3 // new host's state after host migration
	CauseRejoin    SnapshotCause = 4 // the game as it stands, for a client back in its slots (rejoin)
	causeEnd       SnapshotCause = 5
)

var causeNames = [...]string{CauseJoin: "join", CauseResync: "resync", CauseMigration: "host migration", CauseRejoin: "rejoin"}

func (c SnapshotCause) String() string {
	if c > 0 && c < causeEnd {
		return causeNames[c]
	}
	return "unknown"
}

// FullSnapshotFrame is the whole (relevant) state at Tick, compressed with
// Codec to Data; RawLen is the decoded size. It is the resync response and
// the join snapshot, and is usually sent through the reliable channel.
type FullSnapshotFrame struct {
	Cause    SnapshotCause
	Tick     uint32
	Revision uint32
	Codec    Codec
	RawLen   uint32 // ≤ MaxSnapshotSize
	Data     []byte
}

func (f *FullSnapshotFrame) Len() int {
	return 1 + 1 + 4 + 4 + 1 + VarintLen(f.RawLen) + VarintLen(uint32(len(f.Data))) + len(f.Data)
}

var (
	errFullTrunc = truncated("full snapshot frame", "")
	errFullType  = malformed("full snapshot frame", "type")
	errFullCause = malformed("full snapshot frame", "cause")
	errFullCodec = malformed("full snapshot frame", "codec")
	errFullRaw   = malformed("full snapshot frame", "raw length")
	errFullLen   = malformed("full snapshot frame", "length")
)

func (f *FullSnapshotFrame) Append(b []byte) ([]byte, error) {
	switch {
	case f.Cause == 0 || f.Cause >= causeEnd:
		return b, errFullCause
	case !f.Codec.Valid() || f.Codec == CodecPredictedXORRLE:
		return b, errFullCodec
	case f.RawLen > MaxSnapshotSize:
		return b, errFullRaw
	case len(f.Data) > MaxSnapshotSize:
		return b, errFullLen
	}
	b = append(b, byte(FrameFullSnapshot), byte(f.Cause))
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint32(b, f.Revision)
	b = append(b, byte(f.Codec))
	b = AppendVarint(b, f.RawLen)
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

func ParseFullSnapshotFrame(b []byte) (FullSnapshotFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameFullSnapshot) {
		return FullSnapshotFrame{}, 0, errFullType
	}
	var f FullSnapshotFrame
	f.Cause = SnapshotCause(r.u8())
	f.Tick = r.u32()
	f.Revision = r.u32()
	f.Codec = Codec(r.u8())
	f.RawLen = r.varint()
	n := r.varint()
	if err := r.check(errFullTrunc, errFullLen); err != nil {
		return FullSnapshotFrame{}, 0, err
	}
	switch {
	case f.Cause == 0 || f.Cause >= causeEnd:
		return FullSnapshotFrame{}, 0, errFullCause
	case !f.Codec.Valid() || f.Codec == CodecPredictedXORRLE:
		return FullSnapshotFrame{}, 0, errFullCodec
	case f.RawLen > MaxSnapshotSize:
		return FullSnapshotFrame{}, 0, errFullRaw
	case n > MaxSnapshotSize:
		return FullSnapshotFrame{}, 0, errFullLen
	}
	f.Data = r.bytes(n)
	if err := r.check(errFullTrunc, errFullLen); err != nil {
		return FullSnapshotFrame{}, 0, err
	}
	return f, r.off, nil
}
