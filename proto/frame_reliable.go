package proto

// ReliableFrame carries the output of the reliable channel's KCP core: one
// or more KCP segments, each with KCP's own 24-byte header.
type ReliableFrame struct {
	Data []byte
}

func (f *ReliableFrame) Len() int { return 1 + VarintLen(uint32(len(f.Data))) + len(f.Data) }

var (
	errRelTrunc = truncated("reliable frame", "")
	errRelType  = malformed("reliable frame", "type")
	errRelLen   = malformed("reliable frame", "length")
	errRelBig   = tooLarge("reliable frame", "length")
)

func (f *ReliableFrame) Append(b []byte) ([]byte, error) {
	if len(f.Data) > MaxPacketSizeLimit {
		return b, errRelBig
	}
	b = append(b, byte(FrameReliable))
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

func ParseReliableFrame(b []byte) (ReliableFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameReliable) {
		return ReliableFrame{}, 0, errRelType
	}
	n := r.varint()
	if n > MaxPacketSizeLimit {
		return ReliableFrame{}, 0, errRelLen
	}
	f := ReliableFrame{Data: r.bytes(n)}
	if err := r.check(errRelTrunc, errRelLen); err != nil {
		return ReliableFrame{}, 0, err
	}
	return f, r.off, nil
}
