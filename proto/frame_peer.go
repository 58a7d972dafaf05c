package proto

// PeerMessageFrame is a message of a peer-hosted game's stream (host
// migration, docs/MIGRATION.md): a reliable message between a player and
// whichever peer hosts the game, numbered per player and direction so that
// it is delivered exactly once and in order across host migrations. It
// travels on the reliable channel: from a player (Player is its own slot),
// to a player, and from the host to its warm standby (a copy of what the
// host sent Player, which a successor sends again if Player never
// acknowledged it).
type PeerMessageFrame struct {
	Player uint16
	// Copy marks the host's copy for its warm standby of a message it
	// sent (or will send) Player.
	Copy    bool
	Seq     uint32 // 1, 2, ... per player and direction
	Channel uint8
	Data    []byte // at most MaxMessageSize bytes
}

const peerMsgFixed = 1 + 2 + 1 + 4 + 1

func (f *PeerMessageFrame) Len() int {
	return peerMsgFixed + VarintLen(uint32(len(f.Data))) + len(f.Data)
}

var (
	errPeerMsgTrunc = truncated("peer message frame", "")
	errPeerMsgType  = malformed("peer message frame", "type")
	errPeerMsgSeq   = malformed("peer message frame", "sequence")
	errPeerMsgFlags = malformed("peer message frame", "flags")
	errPeerMsgBig   = tooLarge("peer message frame", "length")
)

func (f *PeerMessageFrame) Append(b []byte) ([]byte, error) {
	if len(f.Data) > MaxMessageSize {
		return b, errPeerMsgBig
	}
	if f.Seq == 0 {
		return b, errPeerMsgSeq
	}
	b = append(b, byte(FramePeerMessage))
	b = le.AppendUint16(b, f.Player)
	var flags byte
	if f.Copy {
		flags = 1
	}
	b = append(b, flags)
	b = le.AppendUint32(b, f.Seq)
	b = append(b, f.Channel)
	b = AppendVarint(b, uint32(len(f.Data)))
	return append(b, f.Data...), nil
}

// ParsePeerMessageFrame parses a peer message frame; Data aliases b.
func ParsePeerMessageFrame(b []byte) (PeerMessageFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FramePeerMessage) {
		return PeerMessageFrame{}, 0, errPeerMsgType
	}
	f := PeerMessageFrame{Player: r.u16()}
	flags := r.u8()
	f.Copy = flags == 1
	f.Seq, f.Channel = r.u32(), r.u8()
	if flags > 1 {
		return PeerMessageFrame{}, 0, errPeerMsgFlags
	}
	n := r.varint()
	if n > MaxMessageSize {
		return PeerMessageFrame{}, 0, errPeerMsgBig
	}
	f.Data = r.bytes(n)
	if err := r.check(errPeerMsgTrunc, errPeerMsgTrunc); err != nil {
		return PeerMessageFrame{}, 0, err
	}
	if f.Seq == 0 {
		return PeerMessageFrame{}, 0, errPeerMsgSeq
	}
	return f, r.off, nil
}

// PeerAckKind says which of a player's two streams a PeerAckFrame
// acknowledges.
type PeerAckKind uint8

const (
	// PeerAckFromPlayer: the host has run Player's messages through
	// Through, and its warm standby holds that (a player forgets them;
	// a standby notes it).
	PeerAckFromPlayer PeerAckKind = 1
	// PeerAckToPlayer: Player has received the host's messages through
	// Through (the host forgets them).
	PeerAckToPlayer PeerAckKind = 2
	// PeerAckStandbyRun, host → standby: the host has run Player's
	// messages through Through.
	PeerAckStandbyRun PeerAckKind = 3
	// PeerAckStandbyReceived, host → standby: Player has received the
	// host's messages through Through (the standby forgets them).
	PeerAckStandbyReceived PeerAckKind = 4
	peerAckKindEnd         PeerAckKind = 5
)

// PeerAckFrame acknowledges a player's stream of peer messages: host →
// player (PeerAckFromPlayer) and player → host (PeerAckToPlayer) in
// packets, host → standby (PeerAckStandbyRun, PeerAckStandbyReceived) on
// the reliable channel, in order with the copies of the messages.
type PeerAckFrame struct {
	Player  uint16
	Kind    PeerAckKind
	Through uint32
}

const peerAckFrameSize = 1 + 2 + 1 + 4

func (f *PeerAckFrame) Len() int { return peerAckFrameSize }

var (
	errPeerAckTrunc = truncated("peer ack frame", "")
	errPeerAckType  = malformed("peer ack frame", "type")
	errPeerAckKind  = malformed("peer ack frame", "kind")
)

func (f *PeerAckFrame) Append(b []byte) ([]byte, error) {
	if f.Kind == 0 || f.Kind >= peerAckKindEnd {
		return b, errPeerAckKind
	}
	b = append(b, byte(FramePeerAck))
	b = le.AppendUint16(b, f.Player)
	b = append(b, byte(f.Kind))
	return le.AppendUint32(b, f.Through), nil
}

func ParsePeerAckFrame(b []byte) (PeerAckFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FramePeerAck) {
		return PeerAckFrame{}, 0, errPeerAckType
	}
	f := PeerAckFrame{Player: r.u16(), Kind: PeerAckKind(r.u8()), Through: r.u32()}
	if err := r.check(errPeerAckTrunc, errPeerAckTrunc); err != nil {
		return PeerAckFrame{}, 0, err
	}
	if f.Kind == 0 || f.Kind >= peerAckKindEnd {
		return PeerAckFrame{}, 0, errPeerAckKind
	}
	return f, r.off, nil
}
