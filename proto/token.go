package proto

import "crypto/sha256"

// Connect token sizes.
const (
	// TokenPrivateSize is the plaintext size of the sealed part of a
	// connect token.
	TokenPrivateSize = 176
	// TokenSealedSize is the sealed private token: ciphertext + tag.
	TokenSealedSize = TokenPrivateSize + SealOverhead
	// UserDataSize is the opaque lobby data a token carries to the game.
	UserDataSize = 32
	// MaxTokenServers bounds the servers a token names.
	MaxTokenServers = 8
)

// TokenPrivate is the plaintext of a connect token's sealed part. Only the
// lobby (which mints it) and the game server (which opens it) see it; the
// client receives the same keys and slots in the clear from the lobby.
type TokenPrivate struct {
	ClientID          uint64
	ClientToServerKey [KeySize]byte
	ServerToClientKey [KeySize]byte
	PlayerCount       uint8 // 1..MaxPlayersPerConnection
	Players           [MaxPlayersPerConnection]uint16
	UserData          [UserDataSize]byte
	Created           uint64 // unix seconds, when the lobby minted the token
	ServerCount       uint8  // 0..MaxTokenServers
	// Servers names the game servers the token is for: ServerAddrHash of
	// each address the token lists. The first ServerCount are valid; the
	// rest are zero.
	Servers [MaxTokenServers]uint32
}

// Token private data layout (offsets in bytes).
const (
	offTokClientID    = 0
	offTokC2S         = offTokClientID + 8
	offTokS2C         = offTokC2S + KeySize
	offTokCount       = offTokS2C + KeySize
	offTokPlayers     = offTokCount + 1
	offTokReserved1   = offTokPlayers + 2*MaxPlayersPerConnection
	offTokUserData    = 96
	offTokCreated     = offTokUserData + UserDataSize
	offTokServerCount = offTokCreated + 8
	offTokReserved2   = offTokServerCount + 1
	offTokServers     = 140
	offTokReserved3   = offTokServers + 4*MaxTokenServers
)

// The fields and reserved gaps fill TokenPrivateSize: these underflow (a
// compile error) if a field overruns the next offset.
const (
	_ = uint(offTokUserData - offTokReserved1)
	_ = uint(offTokServers - offTokReserved2)
	_ = uint(TokenPrivateSize - offTokReserved3)
)

// ServerAddrHash is how a token names a game server: the first four bytes,
// little-endian, of the SHA-256 of its address exactly as the token lists
// it ("host:port").
func ServerAddrHash(addr string) uint32 {
	h := sha256.Sum256([]byte(addr))
	return le.Uint32(h[:])
}

func (t *TokenPrivate) Len() int { return TokenPrivateSize }

var (
	errTokTrunc       = truncated("connect token", "")
	errTokCount       = malformed("connect token", "player count")
	errTokPad         = malformed("connect token", "reserved")
	errTokServerCount = malformed("connect token", "server count")
	errTokServers     = malformed("connect token", "unused server")
)

// check reports the first field Append cannot encode or Parse would reject.
func (t *TokenPrivate) check() error {
	if t.PlayerCount == 0 || t.PlayerCount > MaxPlayersPerConnection {
		return errTokCount
	}
	if t.ServerCount > MaxTokenServers {
		return errTokServerCount
	}
	for _, h := range t.Servers[t.ServerCount:] {
		if h != 0 {
			return errTokServers
		}
	}
	return nil
}

// Append appends the token plaintext, TokenPrivateSize bytes with zeros in
// the reserved gaps.
func (t *TokenPrivate) Append(b []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return b, err
	}
	var zeros [offTokUserData - offTokReserved1]byte // the longest reserved gap
	b = le.AppendUint64(b, t.ClientID)
	b = append(b, t.ClientToServerKey[:]...)
	b = append(b, t.ServerToClientKey[:]...)
	b = append(b, t.PlayerCount)
	for _, p := range t.Players {
		b = le.AppendUint16(b, p)
	}
	b = append(b, zeros[:]...)
	b = append(b, t.UserData[:]...)
	b = le.AppendUint64(b, t.Created)
	b = append(b, t.ServerCount)
	b = append(b, zeros[:offTokServers-offTokReserved2]...)
	for _, h := range t.Servers {
		b = le.AppendUint32(b, h)
	}
	return append(b, zeros[:TokenPrivateSize-offTokReserved3]...), nil
}

// ParseTokenPrivate parses an opened token. Reserved bytes and the unused
// server slots must be zero.
func ParseTokenPrivate(b []byte) (TokenPrivate, int, error) {
	var t TokenPrivate
	if len(b) < TokenPrivateSize {
		return t, 0, errTokTrunc
	}
	b = b[:TokenPrivateSize]
	if !allZero(b[offTokReserved1:offTokUserData]) || !allZero(b[offTokReserved2:offTokServers]) ||
		!allZero(b[offTokReserved3:]) {
		return t, 0, errTokPad
	}
	t.ClientID = le.Uint64(b[offTokClientID:])
	copy(t.ClientToServerKey[:], b[offTokC2S:])
	copy(t.ServerToClientKey[:], b[offTokS2C:])
	t.PlayerCount = b[offTokCount]
	for i := range t.Players {
		t.Players[i] = le.Uint16(b[offTokPlayers+2*i:])
	}
	copy(t.UserData[:], b[offTokUserData:])
	t.Created = le.Uint64(b[offTokCreated:])
	t.ServerCount = b[offTokServerCount]
	for i := range t.Servers {
		t.Servers[i] = le.Uint32(b[offTokServers+4*i:])
	}
	if err := t.check(); err != nil {
		return TokenPrivate{}, 0, err
	}
	return t, TokenPrivateSize, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
