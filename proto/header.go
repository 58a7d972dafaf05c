package proto

// Session header layout (offsets in bytes, little-endian).
const (
	offConnID     = 4
	offSeq        = 8
	offAck        = 10
	offAckBits    = 12
	offTick       = 16
	offInterpFrom = 20
	offInterpTo   = 22
	offBlend      = 24

	// HeaderSize is the size of the session header. For sealed packets the
	// whole header is the AEAD's additional data.
	HeaderSize = 26

	// MaxInterpLag is how far (in ticks) the interpolated ticks may trail
	// Tick: they travel as 16-bit distances back from Tick.
	MaxInterpLag = 1<<16 - 1

	// BlendOne is the fixed-point value of a blend of exactly 1.
	BlendOne = 1<<16 - 1
)

// Header is the session header every Accept, Data, KeepAlive, Disconnect
// and Peer packet starts with.
//
// Client -> server, Tick is the client's predicted tick and InterpFrom,
// InterpTo and Blend say exactly which interpolated world the client was
// rendering when it sampled the input (lag compensation rebuilds it).
// Server -> client, Tick is the server tick of the newest state in the
// packet and the interpolation fields repeat Tick with Blend 0.
type Header struct {
	Type       PacketType
	Sealed     bool   // payload is AEAD ciphertext + tag (FlagSealed)
	ConnID     uint32 // connection id assigned by the server in Accept
	Seq        uint16 // this packet's sequence number (wraps)
	Ack        uint16 // newest sequence received from the peer
	AckBits    uint32 // bit i set: Ack-1-i was received too
	Tick       uint32
	InterpFrom uint32 // must be in [Tick-MaxInterpLag, Tick]
	InterpTo   uint32 // must be in [Tick-MaxInterpLag, Tick]
	Blend      uint16 // position between InterpFrom and InterpTo, BlendOne = 1
}

// BlendValue returns the blend as a float in [0, 1].
func (h *Header) BlendValue() float64 { return float64(h.Blend) / BlendOne }

// BlendFromFloat converts a value in [0, 1] (clamped) to fixed point.
func BlendFromFloat(f float64) uint16 {
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= 1:
		return BlendOne
	}
	return uint16(f*BlendOne + 0.5)
}

// Len is the encoded size of the header.
func (h *Header) Len() int { return HeaderSize }

var (
	errHeaderTrunc      = truncated("session header", "")
	errHeaderType       = malformed("session header", "type")
	errHeaderInterpFrom = tooLarge("session header", "interp from-tick")
	errHeaderInterpTo   = tooLarge("session header", "interp to-tick")
)

// Append appends the header. It fails if the type has no session header or
// an interpolated tick is outside [Tick-MaxInterpLag, Tick].
func (h *Header) Append(b []byte) ([]byte, error) {
	if !h.Type.HasSessionHeader() {
		return b, errHeaderType
	}
	dFrom, dTo := h.Tick-h.InterpFrom, h.Tick-h.InterpTo
	if dFrom > MaxInterpLag {
		return b, errHeaderInterpFrom
	}
	if dTo > MaxInterpLag {
		return b, errHeaderInterpTo
	}
	b = appendPrefix(b, h.Type, h.Sealed)
	b = le.AppendUint32(b, h.ConnID)
	b = le.AppendUint16(b, h.Seq)
	b = le.AppendUint16(b, h.Ack)
	b = le.AppendUint32(b, h.AckBits)
	b = le.AppendUint32(b, h.Tick)
	b = le.AppendUint16(b, uint16(dFrom))
	b = le.AppendUint16(b, uint16(dTo))
	b = le.AppendUint16(b, h.Blend)
	return b, nil
}

// ParseHeader parses the prefix and session header at the start of b.
// The payload is b[HeaderSize:].
func ParseHeader(b []byte) (Header, int, error) {
	t, sealed, err := ParsePrefix(b)
	if err != nil {
		return Header{}, 0, err
	}
	if !t.HasSessionHeader() {
		return Header{}, 0, errHeaderType
	}
	if len(b) < HeaderSize {
		return Header{}, 0, errHeaderTrunc
	}
	tick := le.Uint32(b[offTick:])
	return Header{
		Type:       t,
		Sealed:     sealed,
		ConnID:     le.Uint32(b[offConnID:]),
		Seq:        le.Uint16(b[offSeq:]),
		Ack:        le.Uint16(b[offAck:]),
		AckBits:    le.Uint32(b[offAckBits:]),
		Tick:       tick,
		InterpFrom: tick - uint32(le.Uint16(b[offInterpFrom:])),
		InterpTo:   tick - uint32(le.Uint16(b[offInterpTo:])),
		Blend:      le.Uint16(b[offBlend:]),
	}, HeaderSize, nil
}

// ConnIDOf returns the connection id of a session packet without parsing
// the rest, for routing a datagram to its connection. ok is false if b is
// too short or not a session packet.
func ConnIDOf(b []byte) (id uint32, ok bool) {
	if len(b) < HeaderSize || !PacketType(b[3]&typeMask).HasSessionHeader() {
		return 0, false
	}
	return le.Uint32(b[offConnID:]), true
}
