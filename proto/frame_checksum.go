package proto

// ChecksumFrame carries the server's checksum (64-bit FNV-1a over the
// canonical serialisation of the confirmed state) at Tick. A client
// compares it with its own confirmed state at that tick and resyncs on a
// mismatch.
type ChecksumFrame struct {
	Tick uint32
	Sum  uint64
}

const checksumFrameSize = 1 + 4 + 8

func (f *ChecksumFrame) Len() int { return checksumFrameSize }

func (f *ChecksumFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameChecksum))
	b = le.AppendUint32(b, f.Tick)
	return le.AppendUint64(b, f.Sum), nil
}

var (
	errSumTrunc = truncated("checksum frame", "")
	errSumType  = malformed("checksum frame", "type")
)

func ParseChecksumFrame(b []byte) (ChecksumFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameChecksum) {
		return ChecksumFrame{}, 0, errSumType
	}
	f := ChecksumFrame{Tick: r.u32(), Sum: r.u64()}
	if err := r.check(errSumTrunc, errSumTrunc); err != nil {
		return ChecksumFrame{}, 0, err
	}
	return f, r.off, nil
}
