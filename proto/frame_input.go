package proto

// Input limits.
const (
	// MaxInputsPerFrame bounds the redundant inputs one frame carries.
	MaxInputsPerFrame = 32
	// MaxInputBytes bounds Count*Size, so an input frame always fits a
	// packet.
	MaxInputBytes = 1024
)

// InputFrame carries one player's newest inputs, oldest first, ending with
// the input for Tick. Every input frame repeats the inputs the server has
// not acknowledged yet, so a single lost packet costs nothing. Inputs have
// a fixed size per game.
type InputFrame struct {
	Player uint16
	Tick   uint32 // tick of the newest (last) input
	Count  uint8  // inputs in Data, 1..MaxInputsPerFrame
	Size   uint16 // bytes per input, 1..MaxInputBytes
	Data   []byte // Count*Size bytes
}

// Input returns the i-th input (0 is the oldest, at Tick-Count+1).
func (f *InputFrame) Input(i int) []byte {
	s := int(f.Size)
	return f.Data[i*s : (i+1)*s : (i+1)*s]
}

// FirstTick is the tick of the oldest input in the frame.
func (f *InputFrame) FirstTick() uint32 { return f.Tick - uint32(f.Count) + 1 }

func (f *InputFrame) Len() int {
	return 1 + 2 + 4 + 1 + VarintLen(uint32(f.Size)) + len(f.Data)
}

var (
	errInTrunc = truncated("input frame", "")
	errInType  = malformed("input frame", "type")
	errInCount = malformed("input frame", "count")
	errInSize  = malformed("input frame", "size")
	errInData  = malformed("input frame", "data")
)

func (f *InputFrame) valid() error {
	switch {
	case f.Count == 0 || f.Count > MaxInputsPerFrame:
		return errInCount
	case f.Size == 0 || int(f.Count)*int(f.Size) > MaxInputBytes:
		return errInSize
	case len(f.Data) != int(f.Count)*int(f.Size):
		return errInData
	}
	return nil
}

func (f *InputFrame) Append(b []byte) ([]byte, error) {
	if err := f.valid(); err != nil {
		return b, err
	}
	b = append(b, byte(FrameInput))
	b = le.AppendUint16(b, f.Player)
	b = le.AppendUint32(b, f.Tick)
	b = append(b, f.Count)
	b = AppendVarint(b, uint32(f.Size))
	return append(b, f.Data...), nil
}

func ParseInputFrame(b []byte) (InputFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameInput) {
		return InputFrame{}, 0, errInType
	}
	var f InputFrame
	f.Player = r.u16()
	f.Tick = r.u32()
	f.Count = r.u8()
	size := r.varint()
	if err := r.check(errInTrunc, errInSize); err != nil {
		return InputFrame{}, 0, err
	}
	if f.Count == 0 || f.Count > MaxInputsPerFrame {
		return InputFrame{}, 0, errInCount
	}
	if size == 0 || uint64(f.Count)*uint64(size) > MaxInputBytes {
		return InputFrame{}, 0, errInSize
	}
	f.Size = uint16(size)
	f.Data = r.bytes(uint32(f.Count) * size)
	if err := r.check(errInTrunc, errInSize); err != nil {
		return InputFrame{}, 0, err
	}
	return f, r.off, nil
}
