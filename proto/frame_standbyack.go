package proto

// StandbyAckFrame is the warm standby's acknowledgement to its host
// (host migration, docs/MIGRATION.md): it holds the host's state of
// Epoch and every step up to Tick, contiguously. The host releases input
// and message acknowledgements to the players only up to it.
type StandbyAckFrame struct {
	Epoch uint32
	Tick  uint32
}

const standbyAckFrameSize = 1 + 4 + 4

func (f *StandbyAckFrame) Len() int { return standbyAckFrameSize }

func (f *StandbyAckFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameStandbyAck))
	b = le.AppendUint32(b, f.Epoch)
	return le.AppendUint32(b, f.Tick), nil
}

var (
	errSbAckTrunc = truncated("standby ack frame", "")
	errSbAckType  = malformed("standby ack frame", "type")
)

func ParseStandbyAckFrame(b []byte) (StandbyAckFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStandbyAck) {
		return StandbyAckFrame{}, 0, errSbAckType
	}
	f := StandbyAckFrame{Epoch: r.u32(), Tick: r.u32()}
	if err := r.check(errSbAckTrunc, errSbAckTrunc); err != nil {
		return StandbyAckFrame{}, 0, err
	}
	return f, r.off, nil
}
