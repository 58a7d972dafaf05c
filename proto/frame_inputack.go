package proto

// InputAgeMissing in InputAckFrame.Age means the server had no input from
// the player for the header's tick when it simulated it (the last input was
// repeated).
const InputAgeMissing = -1 << 15

// InputAckFrame tells a client, in the update for the header's tick N, the
// newest input tick the server holds for Player and how long that player's
// input for tick N sat in the input buffer before tick N was simulated
// (the input age), in units of 100 µs. A client steers its lead so
// that this age converges to its target.
//
// Frames counts the game frames (control frames and full snapshots) the
// server had queued on the reliable channel for the client's connection
// when it wrote the ack, modulo 65536. A client that has received as
// many knows every join, leave, rejection, late-message notice and full
// snapshot up to tick N; with Newest it tells which of its actions were
// accepted (an action of a tick the server simulated with the input, that
// no rejection names) without a message per input.
type InputAckFrame struct {
	Player uint16
	Newest uint32 // newest input tick received for Player
	Age    int16  // input age for tick N in 100 µs units, or InputAgeMissing
	Frames uint16 // reliable game frames queued for the connection so far, mod 65536
}

const inputAckFrameSize = 1 + 2 + 4 + 2 + 2

func (f *InputAckFrame) Len() int { return inputAckFrameSize }

func (f *InputAckFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameInputAck))
	b = le.AppendUint16(b, f.Player)
	b = le.AppendUint32(b, f.Newest)
	b = le.AppendUint16(b, uint16(f.Age))
	return le.AppendUint16(b, f.Frames), nil
}

var (
	errIAckTrunc = truncated("input ack frame", "")
	errIAckType  = malformed("input ack frame", "type")
)

func ParseInputAckFrame(b []byte) (InputAckFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameInputAck) {
		return InputAckFrame{}, 0, errIAckType
	}
	f := InputAckFrame{Player: r.u16(), Newest: r.u32(), Age: int16(r.u16()), Frames: r.u16()}
	if err := r.check(errIAckTrunc, errIAckTrunc); err != nil {
		return InputAckFrame{}, 0, err
	}
	return f, r.off, nil
}
