package proto

// StateSumFrame is a client's answer to a StateRequestFrame: Sum is the
// SHA-256 of its committed state's bytes after Tick (sim.Lockstep's
// AppendState), Size bytes long. Size 0 says the client does not hold
// that tick (Sum is zero then). With Packed > 0, Packed bytes of the state
// compressed with Codec follow in StateChunkFrames of the same ID: the
// upload.
type StateSumFrame struct {
	ID     uint32
	Tick   uint32
	Size   uint32 // ≤ MaxStateSize
	Sum    [StateSumSize]byte
	Codec  Codec
	Packed uint32 // ≤ MaxStateSize; 0: the digest alone
}

const stateSumFrameSize = 1 + 4 + 4 + 4 + StateSumSize + 1 + 4

func (f *StateSumFrame) Len() int { return stateSumFrameSize }

var (
	errSsmTrunc  = truncated("state sum frame", "")
	errSsmType   = malformed("state sum frame", "type")
	errSsmSize   = malformed("state sum frame", "size")
	errSsmCodec  = malformed("state sum frame", "codec")
	errSsmPacked = malformed("state sum frame", "packed size")
)

func (f *StateSumFrame) check() error {
	switch {
	case f.Size > MaxStateSize || f.Size == 0 && f.Sum != [StateSumSize]byte{}:
		return errSsmSize
	case !f.Codec.Valid() || f.Codec.Patches() || f.Packed == 0 && f.Codec != CodecNone:
		return errSsmCodec
	case f.Packed > MaxStateSize || f.Size == 0 && f.Packed != 0:
		return errSsmPacked
	}
	return nil
}

func (f *StateSumFrame) Append(b []byte) ([]byte, error) {
	if err := f.check(); err != nil {
		return b, err
	}
	b = append(b, byte(FrameStateSum))
	b = le.AppendUint32(b, f.ID)
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint32(b, f.Size)
	b = append(b, f.Sum[:]...)
	b = append(b, byte(f.Codec))
	return le.AppendUint32(b, f.Packed), nil
}

func ParseStateSumFrame(b []byte) (StateSumFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStateSum) {
		return StateSumFrame{}, 0, errSsmType
	}
	f := StateSumFrame{ID: r.u32(), Tick: r.u32(), Size: r.u32()}
	if sum := r.bytes(StateSumSize); sum != nil {
		f.Sum = [StateSumSize]byte(sum)
	}
	f.Codec = Codec(r.u8())
	f.Packed = r.u32()
	if err := r.check(errSsmTrunc, errSsmTrunc); err != nil {
		return StateSumFrame{}, 0, err
	}
	if err := f.check(); err != nil {
		return StateSumFrame{}, 0, err
	}
	return f, r.off, nil
}
