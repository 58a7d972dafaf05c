package proto

// Message flags.
const (
	MessageSequenced  = 0x01 // Seq is present: drop anything older than the newest seen
	MessagePostmarked = 0x02 // Tick is present: execute at that tick
	MessagePlayer     = 0x04 // Player is present: the sender's player slot
	messageFlagsKnown = MessageSequenced | MessagePostmarked | MessagePlayer
)

// MessageFrame is an application message. Sent directly in a packet it is
// unreliable (and, when Sequenced, never delivered after a newer one on the
// same channel); sent through the reliable channel it arrives exactly once
// and in order. A postmarked message names the tick it should take effect
// at. Player names which of the connection's players sent it (0, absent
// on the wire: the connection's first player, or nobody in particular);
// a server's game runs a postmarked message as that player's.
type MessageFrame struct {
	Channel    uint8
	Sequenced  bool
	Seq        uint16 // valid when Sequenced
	Postmarked bool
	Tick       uint32 // valid when Postmarked
	Player     uint16 // 0: absent
	Data       []byte
}

func (f *MessageFrame) Len() int {
	n := 3 + VarintLen(uint32(len(f.Data))) + len(f.Data)
	if f.Sequenced {
		n += 2
	}
	if f.Postmarked {
		n += 4
	}
	if f.Player != 0 {
		n += 2
	}
	return n
}

var (
	errMsgTrunc  = truncated("message frame", "")
	errMsgType   = malformed("message frame", "type")
	errMsgFlags  = malformed("message frame", "flags")
	errMsgLen    = malformed("message frame", "length")
	errMsgPlayer = malformed("message frame", "player")
	errMsgBig    = tooLarge("message frame", "length")
)

// MaxMessageSize bounds one message's data (reliable messages are
// fragmented by the reliable channel; unreliable ones must fit a packet).
const MaxMessageSize = 1 << 20

func (f *MessageFrame) Append(b []byte) ([]byte, error) {
	if len(f.Data) > MaxMessageSize {
		return b, errMsgBig
	}
	var flags byte
	if f.Sequenced {
		flags |= MessageSequenced
	}
	if f.Postmarked {
		flags |= MessagePostmarked
	}
	if f.Player != 0 {
		flags |= MessagePlayer
	}
	b = append(b, byte(FrameMessage), flags, f.Channel)
	if f.Sequenced {
		b = le.AppendUint16(b, f.Seq)
	}
	if f.Postmarked {
		b = le.AppendUint32(b, f.Tick)
	}
	if f.Player != 0 {
		b = le.AppendUint16(b, f.Player)
	}
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

func ParseMessageFrame(b []byte) (MessageFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameMessage) {
		return MessageFrame{}, 0, errMsgType
	}
	flags := r.u8()
	if flags&^messageFlagsKnown != 0 {
		return MessageFrame{}, 0, errMsgFlags
	}
	var f MessageFrame
	f.Channel = r.u8()
	if flags&MessageSequenced != 0 {
		f.Sequenced, f.Seq = true, r.u16()
	}
	if flags&MessagePostmarked != 0 {
		f.Postmarked, f.Tick = true, r.u32()
	}
	if flags&MessagePlayer != 0 {
		if f.Player = r.u16(); f.Player == 0 && !r.short {
			return MessageFrame{}, 0, errMsgPlayer // present means a player
		}
	}
	n := r.varint()
	if n > MaxMessageSize {
		return MessageFrame{}, 0, errMsgLen
	}
	f.Data = r.bytes(n)
	if err := r.check(errMsgTrunc, errMsgLen); err != nil {
		return MessageFrame{}, 0, err
	}
	return f, r.off, nil
}
