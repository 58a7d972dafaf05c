package proto

// AckOnlyFrame marks a packet sent only to carry the header's acks: the
// receiver need not acknowledge it promptly. DelayMicros is how long the
// sender held the newest ack (Header.Ack) before sending, so the peer can
// take it out of its RTT sample; it saturates at 65535 µs.
type AckOnlyFrame struct {
	DelayMicros uint16
}

const ackOnlyFrameSize = 3

func (f *AckOnlyFrame) Len() int { return ackOnlyFrameSize }

func (f *AckOnlyFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameAckOnly))
	return le.AppendUint16(b, f.DelayMicros), nil
}

var (
	errAckOnlyTrunc = truncated("ack-only frame", "")
	errAckOnlyType  = malformed("ack-only frame", "type")
)

func ParseAckOnlyFrame(b []byte) (AckOnlyFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameAckOnly) {
		return AckOnlyFrame{}, 0, errAckOnlyType
	}
	f := AckOnlyFrame{DelayMicros: r.u16()}
	if err := r.check(errAckOnlyTrunc, errAckOnlyTrunc); err != nil {
		return AckOnlyFrame{}, 0, err
	}
	return f, r.off, nil
}
