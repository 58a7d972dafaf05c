package proto

// StateChunkFrame is a piece of a committed state's bytes: from a client,
// of the upload its StateSumFrame of the same ID announced; from the
// relay, of the state its StateBeginFrame of the same ID announced. The
// chunks of one state come in order, each starting where the last ended.
type StateChunkFrame struct {
	ID     uint32
	Offset uint32
	Data   []byte // 1..MaxStateChunk bytes, ending at most at MaxStateSize
}

func (f *StateChunkFrame) Len() int {
	return 1 + 4 + 4 + VarintLen(uint32(len(f.Data))) + len(f.Data)
}

var (
	errSchTrunc = truncated("state chunk frame", "")
	errSchType  = malformed("state chunk frame", "type")
	errSchLen   = malformed("state chunk frame", "length")
)

func (f *StateChunkFrame) check(n uint32) error {
	if n == 0 || n > MaxStateChunk || uint64(f.Offset)+uint64(n) > MaxStateSize {
		return errSchLen
	}
	return nil
}

func (f *StateChunkFrame) Append(b []byte) ([]byte, error) {
	if err := f.check(uint32(len(f.Data))); err != nil || len(f.Data) > MaxStateChunk {
		return b, errSchLen
	}
	b = append(b, byte(FrameStateChunk))
	b = le.AppendUint32(b, f.ID)
	b = le.AppendUint32(b, f.Offset)
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

// ParseStateChunkFrame parses a state chunk frame; Data aliases b.
func ParseStateChunkFrame(b []byte) (StateChunkFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStateChunk) {
		return StateChunkFrame{}, 0, errSchType
	}
	f := StateChunkFrame{ID: r.u32(), Offset: r.u32()}
	n := r.varint()
	if err := r.check(errSchTrunc, errSchLen); err != nil {
		return StateChunkFrame{}, 0, err
	}
	if err := f.check(n); err != nil {
		return StateChunkFrame{}, 0, err
	}
	f.Data = r.bytes(n)
	if err := r.check(errSchTrunc, errSchLen); err != nil {
		return StateChunkFrame{}, 0, err
	}
	return f, r.off, nil
}
