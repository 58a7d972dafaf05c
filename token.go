package tickwire

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// ConnectToken is what a lobby hands a client so it can join one game: the
// public fields and sealed private part of the token the client presents
// in its connection request, plus the client's own copy of the session
// keys and player slots. Send it to the client over a secure channel
// (HTTPS, an authenticated WebSocket): whoever holds it can connect as
// that client until it expires.
//
// Encode it with String and read it back with ParseConnectToken; the
// layout is in docs/PROTOCOL.md ("Connect token").
type ConnectToken struct {
	KeyID       uint32 // names the server key that sealed it
	GameID      uint64
	Expires     time.Time // whole seconds
	Nonce       [proto.NonceSize]byte
	Sealed      [proto.TokenSealedSize]byte
	ClientID    uint64
	ClientKey   [proto.KeySize]byte // client -> server
	ServerKey   [proto.KeySize]byte // server -> client
	Players     []uint16            // 1..proto.MaxPlayersPerConnection
	UserData    [proto.UserDataSize]byte
	ServerAddrs []string // "host:port", tried in order

	rejoin bool // a rejoin credential (Client.RejoinToken)
}

// TokenParams describes the token a lobby mints.
type TokenParams struct {
	GameID   uint64
	ClientID uint64   // unique per client; one connection per client id
	Players  []uint16 // player slots the connection may use, 1..4
	// ServerAddrs are the game server's UDP addresses, tried in order
	// (1..MaxTokenAddrs, each at most 255 bytes).
	ServerAddrs []string
	// TTL is how long the token stays valid. Zero means DefaultTokenTTL.
	TTL      time.Duration
	UserData [proto.UserDataSize]byte
}

const (
	// DefaultTokenTTL is the validity of a token minted with TTL zero.
	DefaultTokenTTL = 30 * time.Second
	// MaxTokenAddrs bounds ConnectToken.ServerAddrs.
	MaxTokenAddrs = proto.MaxTokenServers
)

// ErrBadToken wraps every reason a token string fails to parse.
var ErrBadToken = errors.New("tickwire: bad connect token")

// MintToken seals a new connect token for p with the game server's key.
// Session keys and the nonce come from crypto/rand.
func MintToken(key Key, p TokenParams, now time.Time) (*ConnectToken, error) {
	if n := len(p.Players); n == 0 || n > proto.MaxPlayersPerConnection {
		return nil, fmt.Errorf("tickwire: token needs 1 to %d players, got %d", proto.MaxPlayersPerConnection, n)
	}
	if n := len(p.ServerAddrs); n == 0 || n > MaxTokenAddrs {
		return nil, fmt.Errorf("tickwire: token needs 1 to %d server addresses, got %d", MaxTokenAddrs, n)
	}
	for _, a := range p.ServerAddrs {
		if a == "" || len(a) > 255 {
			return nil, fmt.Errorf("tickwire: bad server address %q in token", a)
		}
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < 0 {
		return nil, fmt.Errorf("tickwire: negative token TTL %v", ttl)
	}
	t := &ConnectToken{
		KeyID:       key.ID(),
		GameID:      p.GameID,
		Expires:     time.Unix(now.Add(ttl).Unix(), 0).UTC(),
		ClientID:    p.ClientID,
		Players:     append([]uint16(nil), p.Players...),
		UserData:    p.UserData,
		ServerAddrs: append([]string(nil), p.ServerAddrs...),
	}
	if _, err := rand.Read(t.Nonce[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(t.ClientKey[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(t.ServerKey[:]); err != nil {
		return nil, err
	}
	priv := proto.TokenPrivate{
		ClientID:          t.ClientID,
		ClientToServerKey: t.ClientKey,
		ServerToClientKey: t.ServerKey,
		PlayerCount:       uint8(len(t.Players)),
		UserData:          t.UserData,
		Created:           uint64(now.Unix()),
		ServerCount:       uint8(len(t.ServerAddrs)),
	}
	copy(priv.Players[:], t.Players)
	for i, a := range t.ServerAddrs {
		priv.Servers[i] = proto.ServerAddrHash(a)
	}
	if err := session.SealToken((*[proto.KeySize]byte)(&key), &t.Sealed, &t.Nonce, t.GameID, uint64(t.Expires.Unix()), &priv); err != nil {
		return nil, err
	}
	return t, nil
}

// Request builds the connection request that presents the token.
func (t *ConnectToken) Request() proto.ConnectionRequest {
	return proto.ConnectionRequest{
		KeyID:       t.KeyID,
		GameID:      t.GameID,
		Expires:     uint64(t.Expires.Unix()),
		TokenNonce:  t.Nonce,
		SealedToken: t.Sealed,
	}
}

// Token string layout (before base64url without padding).
const (
	tokenMagic    = 'T'
	tokenFixedLen = 4 + 4 + 8 + 8 + proto.NonceSize + proto.TokenSealedSize + 8 + 2*proto.KeySize + 1 + 2*proto.MaxPlayersPerConnection + proto.UserDataSize + 1
)

// String encodes the token as URL-safe base64 text.
func (t *ConnectToken) String() string {
	b := make([]byte, 0, tokenFixedLen+64)
	b = append(b, proto.Magic0, proto.Magic1, proto.Version, tokenMagic)
	b = binary.LittleEndian.AppendUint32(b, t.KeyID)
	b = binary.LittleEndian.AppendUint64(b, t.GameID)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Expires.Unix()))
	b = append(b, t.Nonce[:]...)
	b = append(b, t.Sealed[:]...)
	b = binary.LittleEndian.AppendUint64(b, t.ClientID)
	b = append(b, t.ClientKey[:]...)
	b = append(b, t.ServerKey[:]...)
	b = append(b, byte(len(t.Players)))
	var players [proto.MaxPlayersPerConnection]uint16
	copy(players[:], t.Players)
	for _, p := range players {
		b = binary.LittleEndian.AppendUint16(b, p)
	}
	b = append(b, t.UserData[:]...)
	b = append(b, byte(len(t.ServerAddrs)))
	for _, a := range t.ServerAddrs {
		b = append(b, byte(len(a)))
		b = append(b, a...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// MarshalText makes tokens JSON-friendly (a string).
func (t *ConnectToken) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a token string.
func (t *ConnectToken) UnmarshalText(b []byte) error {
	p, err := ParseConnectToken(string(b))
	if err != nil {
		return err
	}
	*t = *p
	return nil
}

func badToken(why string) error { return fmt.Errorf("%w: %s", ErrBadToken, why) }

// ParseConnectToken decodes a token written by String. It checks the
// layout, not the seal: only the game server can open the sealed part.
func ParseConnectToken(s string) (*ConnectToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badToken("not base64url")
	}
	if len(b) < tokenFixedLen {
		return nil, badToken("truncated")
	}
	if b[0] != proto.Magic0 || b[1] != proto.Magic1 || b[3] != tokenMagic {
		return nil, badToken("not a tickwire token")
	}
	if b[2] != proto.Version {
		return nil, badToken(fmt.Sprintf("protocol version %d, this build speaks %d", b[2], proto.Version))
	}
	le := binary.LittleEndian
	t := &ConnectToken{}
	off := 4
	t.KeyID = le.Uint32(b[off:])
	off += 4
	t.GameID = le.Uint64(b[off:])
	off += 8
	t.Expires = time.Unix(int64(le.Uint64(b[off:])), 0).UTC()
	off += 8
	off += copy(t.Nonce[:], b[off:])
	off += copy(t.Sealed[:], b[off:])
	t.ClientID = le.Uint64(b[off:])
	off += 8
	off += copy(t.ClientKey[:], b[off:])
	off += copy(t.ServerKey[:], b[off:])
	n := int(b[off])
	off++
	if n == 0 || n > proto.MaxPlayersPerConnection {
		return nil, badToken("bad player count")
	}
	for i := range proto.MaxPlayersPerConnection {
		if i < n {
			t.Players = append(t.Players, le.Uint16(b[off:]))
		}
		off += 2
	}
	off += copy(t.UserData[:], b[off:])
	na := int(b[off])
	off++
	if na == 0 || na > MaxTokenAddrs {
		return nil, badToken("bad server address count")
	}
	for range na {
		if off >= len(b) {
			return nil, badToken("truncated address")
		}
		l := int(b[off])
		off++
		if l == 0 || off+l > len(b) {
			return nil, badToken("truncated address")
		}
		t.ServerAddrs = append(t.ServerAddrs, string(b[off:off+l]))
		off += l
	}
	if off != len(b) {
		return nil, badToken("trailing bytes")
	}
	return t, nil
}
