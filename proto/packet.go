package proto

// Protocol identity. Every tickwire datagram starts with the four-byte
// prefix: the two magic bytes 't' 'w', the version, and the type byte.
const (
	Magic0  = 't'
	Magic1  = 'w'
	Version = 3

	PrefixSize = 4
)

// Packet size limits, in bytes of UDP payload.
const (
	// DefaultMaxPacketSize is the largest datagram tickwire sends unless
	// configured otherwise: it fits the IPv6 minimum MTU (1280) with room
	// for IP/UDP headers and tunnels.
	DefaultMaxPacketSize = 1200
	// MaxPacketSizeLimit is the largest datagram any tickwire peer accepts
	// (a 1500-byte Ethernet MTU minus IPv4 and UDP headers).
	MaxPacketSizeLimit = 1472
	// MaxFramesPerPacket bounds the frames one packet payload may carry.
	MaxFramesPerPacket = 64
)

// PacketType is the low six bits of the type byte.
type PacketType uint8

const (
	PacketConnectionRequest PacketType = 1 // client -> server, plaintext
	PacketChallenge         PacketType = 2 // server -> client, plaintext
	PacketChallengeResponse PacketType = 3 // client -> server, authenticated
	PacketAccept            PacketType = 4 // server -> client, session header
	PacketDenied            PacketType = 5 // server -> client, plaintext or sealed
	PacketData              PacketType = 6 // both ways, session header
	PacketKeepAlive         PacketType = 7 // both ways, session header
	PacketDisconnect        PacketType = 8 // both ways, session header
	PacketMesh              PacketType = 9 // client -> client, session header (commits mode mesh)
	packetTypeEnd           PacketType = 10
)

// Type byte flags.
const (
	typeMask     = 0x3f
	flagReserved = 0x40
	// FlagSealed marks a session packet whose payload is AEAD ciphertext
	// followed by a SealOverhead-byte tag, with the header as additional
	// data. Peers that require encryption drop session packets without it.
	// On a Denied packet it marks the sealed form (Denied.Sealed). It is
	// valid on no other type.
	FlagSealed = 0x80
)

// SealOverhead is the size of the AEAD tag (AES-GCM) after a sealed payload.
const SealOverhead = 16

var packetNames = [...]string{
	PacketConnectionRequest: "connection request",
	PacketChallenge:         "challenge",
	PacketChallengeResponse: "challenge response",
	PacketAccept:            "accept",
	PacketDenied:            "denied",
	PacketData:              "data",
	PacketKeepAlive:         "keep-alive",
	PacketDisconnect:        "disconnect",
	PacketMesh:              "mesh",
}

func (t PacketType) String() string {
	if t > 0 && t < packetTypeEnd {
		return packetNames[t]
	}
	return "unknown"
}

// Valid reports whether t is a packet type this version defines.
func (t PacketType) Valid() bool { return t > 0 && t < packetTypeEnd }

// HasSessionHeader reports whether packets of type t start with the full
// session header (and so carry a connection id, sequence and acks).
func (t PacketType) HasSessionHeader() bool {
	switch t {
	case PacketAccept, PacketData, PacketKeepAlive, PacketDisconnect, PacketMesh:
		return true
	}
	return false
}

// sealable reports whether the sealed flag is valid on type t: the session
// packets and the denial.
func (t PacketType) sealable() bool { return t.HasSessionHeader() || t == PacketDenied }

var (
	errPrefixTrunc   = truncated("packet prefix", "")
	errPrefixMagic   = malformed("packet prefix", "protocol id")
	errPrefixVersion = malformed("packet prefix", "version")
	errPrefixType    = malformed("packet prefix", "type")
	errPrefixFlags   = malformed("packet prefix", "flags")
)

// ParsePrefix checks the protocol id and version and returns the packet type
// and whether the payload is sealed. It is the first thing a receiver calls.
func ParsePrefix(b []byte) (t PacketType, sealed bool, err error) {
	if len(b) < PrefixSize {
		return 0, false, errPrefixTrunc
	}
	if b[0] != Magic0 || b[1] != Magic1 {
		return 0, false, errPrefixMagic
	}
	if b[2] != Version {
		return 0, false, errPrefixVersion
	}
	tb := b[3]
	t = PacketType(tb & typeMask)
	if !t.Valid() {
		return 0, false, errPrefixType
	}
	if tb&flagReserved != 0 || (tb&FlagSealed != 0 && !t.sealable()) {
		return 0, false, errPrefixFlags
	}
	return t, tb&FlagSealed != 0, nil
}

// IsVersionMismatch reports whether err came from a tickwire packet of
// another protocol version (the magic matched, the version did not).
func IsVersionMismatch(err error) bool { return err == errPrefixVersion }

func appendPrefix(b []byte, t PacketType, sealed bool) []byte {
	tb := byte(t)
	if sealed {
		tb |= FlagSealed
	}
	return append(b, Magic0, Magic1, Version, tb)
}
