package proto

// Handshake sizes. The connection request is padded so that the server's
// answer to it (a challenge or a denial) is never larger than the request:
// the handshake cannot amplify a spoofed flood.
const (
	KeySize                 = 32 // AES-256-GCM keys: the token keys and the session keys derived from them
	NonceSize               = 12 // AES-GCM nonce
	MaxPlayersPerConnection = 4

	// CookieSize is the size of the opaque, server-sealed challenge cookie.
	// The server chooses its layout; it must fit what the server needs to
	// accept the client later, so it can stay stateless until the cookie
	// comes back.
	CookieSize = 192
	// RandomSize is the size of the challenge's ServerRandom and the
	// response's ClientRandom, the salt of the session key derivation.
	RandomSize = 16

	ConnectionRequestSize = 256
	ChallengeSize         = PrefixSize + CookieSize + RandomSize
	ChallengeResponseSize = PrefixSize + CookieSize + RandomSize + SealOverhead
	DeniedSize            = PrefixSize + 1
	DeniedSealedSize      = DeniedTagOffset + SealOverhead

	// ResponseTagOffset is where a challenge response's tag starts; the
	// bytes before it are the tag's additional data.
	ResponseTagOffset = PrefixSize + CookieSize + RandomSize

	// DeniedTagOffset is where a sealed denial's tag starts; the bytes
	// before it (prefix, reason, counter) are the tag's additional data.
	DeniedTagOffset = PrefixSize + 1 + 8

	offDenReason  = PrefixSize
	offDenCounter = offDenReason + 1
	offHsCookie   = PrefixSize
	offChalRandom = offHsCookie + CookieSize
	offRespRandom = offHsCookie + CookieSize

	offReqKeyID   = PrefixSize
	offReqGameID  = offReqKeyID + 4
	offReqExpires = offReqGameID + 8
	offReqNonce   = offReqExpires + 8
	offReqToken   = offReqNonce + NonceSize
	reqUsed       = offReqToken + TokenSealedSize

	// TokenAdditionalDataSize is the size of TokenAdditionalData's bytes.
	TokenAdditionalDataSize = 3 + 4 + 8 + 8
)

// The amplification guarantee, checked by the compiler: these constants
// underflow (a compile error) if a reply outgrows the packet it answers.
const (
	// A connection request is answered by a challenge or either denial.
	_ = uint(ConnectionRequestSize - ChallengeSize)
	_ = uint(ConnectionRequestSize - DeniedSize)
	_ = uint(ConnectionRequestSize - DeniedSealedSize)
	_ = uint(ConnectionRequestSize - reqUsed)
	// A challenge response is answered by a denial or the sealed accept.
	_ = uint(ChallengeResponseSize - DeniedSize)
	_ = uint(ChallengeResponseSize - DeniedSealedSize)
	_ = uint(ChallengeResponseSize - (HeaderSize + acceptBodyMaxSize + SealOverhead))
)

// ConnectionRequest opens a handshake. Everything but the sealed token is
// public; KeyID, GameID and Expires are bound to the token as additional
// data, so tampering with any of them makes the token fail to open.
type ConnectionRequest struct {
	KeyID       uint32 // which of the server's token keys sealed the token
	GameID      uint64
	Expires     uint64 // unix seconds
	TokenNonce  [NonceSize]byte
	SealedToken [TokenSealedSize]byte
}

// Len is the encoded size, padding included.
func (p *ConnectionRequest) Len() int { return ConnectionRequestSize }

// Append appends the request padded with zeros to ConnectionRequestSize.
func (p *ConnectionRequest) Append(b []byte) ([]byte, error) {
	b = appendPrefix(b, PacketConnectionRequest, false)
	b = le.AppendUint32(b, p.KeyID)
	b = le.AppendUint64(b, p.GameID)
	b = le.AppendUint64(b, p.Expires)
	b = append(b, p.TokenNonce[:]...)
	b = append(b, p.SealedToken[:]...)
	var pad [ConnectionRequestSize - reqUsed]byte
	return append(b, pad[:]...), nil
}

var (
	errReqTrunc = truncated("connection request", "")
	errReqType  = malformed("connection request", "type")
)

// ParseConnectionRequest parses a connection request. Shorter requests are
// rejected so that no reply can exceed what the client sent.
func ParseConnectionRequest(b []byte) (ConnectionRequest, int, error) {
	var p ConnectionRequest
	t, _, err := ParsePrefix(b)
	if err != nil {
		return p, 0, err
	}
	if t != PacketConnectionRequest {
		return p, 0, errReqType
	}
	if len(b) < ConnectionRequestSize {
		return p, 0, errReqTrunc
	}
	p.KeyID = le.Uint32(b[offReqKeyID:])
	p.GameID = le.Uint64(b[offReqGameID:])
	p.Expires = le.Uint64(b[offReqExpires:])
	copy(p.TokenNonce[:], b[offReqNonce:])
	copy(p.SealedToken[:], b[offReqToken:])
	return p, ConnectionRequestSize, nil
}

// TokenAdditionalData appends the TokenAdditionalDataSize bytes a connect
// token is sealed with as additional data: protocol id and version, key
// id, game id and expiry.
func TokenAdditionalData(b []byte, keyID uint32, gameID, expires uint64) []byte {
	b = append(b, Magic0, Magic1, Version)
	b = le.AppendUint32(b, keyID)
	b = le.AppendUint64(b, gameID)
	return le.AppendUint64(b, expires)
}

// Challenge carries the stateless cookie the client must echo and the
// server's half of the randomness the session keys are derived from
// (docs/PROTOCOL.md, "Session keys").
type Challenge struct {
	Cookie       [CookieSize]byte
	ServerRandom [RandomSize]byte
}

func (p *Challenge) Len() int { return ChallengeSize }

func (p *Challenge) Append(b []byte) ([]byte, error) {
	b = appendPrefix(b, PacketChallenge, false)
	b = append(b, p.Cookie[:]...)
	return append(b, p.ServerRandom[:]...), nil
}

var (
	errChalTrunc = truncated("challenge", "")
	errChalType  = malformed("challenge", "type")
)

func ParseChallenge(b []byte) (Challenge, int, error) {
	var p Challenge
	t, _, err := ParsePrefix(b)
	if err != nil {
		return p, 0, err
	}
	if t != PacketChallenge {
		return p, 0, errChalType
	}
	if len(b) < ChallengeSize {
		return p, 0, errChalTrunc
	}
	copy(p.Cookie[:], b[offHsCookie:])
	copy(p.ServerRandom[:], b[offChalRandom:])
	return p, ChallengeSize, nil
}

// ChallengeResponse echoes the cookie, brings the client's half of the
// session keys' randomness, and proves the client holds the token's
// client-to-server key: Tag is the AES-GCM tag of an empty plaintext sealed
// with that key, nonce Nonce() (kind NonceResponse, counter from
// ClientRandom), and the packet's first ResponseTagOffset bytes (every byte
// before the tag) as additional data.
type ChallengeResponse struct {
	Cookie       [CookieSize]byte
	ClientRandom [RandomSize]byte // chosen by the client, fresh per handshake
	Tag          [SealOverhead]byte
}

// Nonce is the nonce of the response's tag: kind NonceResponse, counter the
// first eight bytes of ClientRandom, little-endian.
func (p *ChallengeResponse) Nonce() [NonceSize]byte {
	return Nonce(NonceResponse, le.Uint64(p.ClientRandom[:]))
}

func (p *ChallengeResponse) Len() int { return ChallengeResponseSize }

func (p *ChallengeResponse) Append(b []byte) ([]byte, error) {
	b = appendPrefix(b, PacketChallengeResponse, false)
	b = append(b, p.Cookie[:]...)
	b = append(b, p.ClientRandom[:]...)
	return append(b, p.Tag[:]...), nil
}

var (
	errRespTrunc = truncated("challenge response", "")
	errRespType  = malformed("challenge response", "type")
)

func ParseChallengeResponse(b []byte) (ChallengeResponse, int, error) {
	var p ChallengeResponse
	t, _, err := ParsePrefix(b)
	if err != nil {
		return p, 0, err
	}
	if t != PacketChallengeResponse {
		return p, 0, errRespType
	}
	if len(b) < ChallengeResponseSize {
		return p, 0, errRespTrunc
	}
	copy(p.Cookie[:], b[offHsCookie:])
	copy(p.ClientRandom[:], b[offRespRandom:])
	copy(p.Tag[:], b[ResponseTagOffset:])
	return p, ChallengeResponseSize, nil
}

// DenyReason says why the server refused a handshake.
type DenyReason uint8

const (
	DenyInvalidToken     DenyReason = 1  // token did not open (forged or tampered)
	DenyExpired          DenyReason = 2  // token or cookie past its expiry
	DenyWrongGame        DenyReason = 3  // token names another game
	DenyServerFull       DenyReason = 4  // no free connection or player slot
	DenyVersion          DenyReason = 5  // client speaks another protocol version
	DenyAlreadyConnected DenyReason = 6  // this client id holds a connection
	DenyBadCookie        DenyReason = 7  // cookie or key proof did not verify
	DenyShuttingDown     DenyReason = 8  // server is stopping
	DenyTokenUsed        DenyReason = 9  // the token already opened a session
	DenyWrongServer      DenyReason = 10 // the token names other servers
	DenyUnknownKey       DenyReason = 11 // no key with the token's key id
	DenyJoinRefused      DenyReason = 12 // the game refused a player (detail: slot and the game's reason)
	DenyRejoin           DenyReason = 13 // a rejoin credential that was replaced, is past its grace, or names other slots
	denyReasonEnd        DenyReason = 14
)

// NumDenyReasons sizes arrays indexed by DenyReason.
const NumDenyReasons = int(denyReasonEnd)

// MaxDenyText bounds the game's reason in a join refusal's detail; the
// detail is the slot (2 bytes) and the text.
const (
	MaxDenyText   = 64
	MaxDenyDetail = 2 + MaxDenyText
)

var denyNames = [...]string{
	DenyInvalidToken:     "invalid token",
	DenyExpired:          "expired",
	DenyWrongGame:        "wrong game",
	DenyServerFull:       "server full",
	DenyVersion:          "version mismatch",
	DenyAlreadyConnected: "already connected",
	DenyBadCookie:        "bad cookie",
	DenyShuttingDown:     "shutting down",
	DenyTokenUsed:        "token used",
	DenyWrongServer:      "wrong server",
	DenyUnknownKey:       "unknown key",
	DenyJoinRefused:      "join refused",
	DenyRejoin:           "rejoin refused",
}

func (r DenyReason) String() string {
	if r > 0 && r < denyReasonEnd {
		return denyNames[r]
	}
	return "unknown"
}

// Denied refuses a handshake. It has two forms, both packet type 5.
//
// The plaintext form (Sealed false, DeniedSize bytes) carries only the
// reason. The server sends it when it could not open the token and so
// holds no key the client trusts; anyone on the path can forge it.
//
// The sealed form (Sealed true, FlagSealed on the type byte,
// DeniedSealedSize bytes plus its detail) adds Counter, random per
// denial, Detail and Tag: Detail‖Tag is the AES-GCM sealing of the
// detail's plaintext (empty but for DenyJoinRefused, whose plaintext is
// the refused slot and the game's reason, at most MaxDenyDetail bytes)
// under the token's server-to-client key, nonce Nonce() (kind
// NonceDenied, counter Counter), with the packet's first DeniedTagOffset
// bytes as additional data. The session layer seals and opens it; Append
// writes Detail and Tag as given.
type Denied struct {
	Reason  DenyReason
	Sealed  bool
	Counter uint64             // sealed form only
	Detail  []byte             // sealed form only: the sealed detail, ≤ MaxDenyDetail bytes
	Tag     [SealOverhead]byte // sealed form only
}

// Nonce is the nonce of a sealed denial's tag.
func (p *Denied) Nonce() [NonceSize]byte { return Nonce(NonceDenied, p.Counter) }

// Len is DeniedSealedSize for the sealed form, DeniedSize otherwise.
func (p *Denied) Len() int {
	if p.Sealed {
		return DeniedSealedSize + len(p.Detail)
	}
	return DeniedSize
}

var (
	errDenTrunc  = truncated("denied", "")
	errDenType   = malformed("denied", "type")
	errDenReason = malformed("denied", "reason")
	errDenDetail = tooLarge("denied", "detail")
)

// Append appends the denial; Counter and Tag only if Sealed.
func (p *Denied) Append(b []byte) ([]byte, error) {
	if p.Reason == 0 || p.Reason >= denyReasonEnd {
		return b, errDenReason
	}
	b = appendPrefix(b, PacketDenied, p.Sealed)
	b = append(b, byte(p.Reason))
	if !p.Sealed {
		return b, nil
	}
	if len(p.Detail) > MaxDenyDetail {
		return b, errDenDetail
	}
	b = le.AppendUint64(b, p.Counter)
	b = append(b, p.Detail...)
	return append(b, p.Tag[:]...), nil
}

// ParseDenied parses either form of a denial. A server answers a request
// of another version with a plaintext denial (DenyVersion) in the version
// it speaks, so the plaintext form is accepted with any version byte; the
// sealed form only with Version.
func ParseDenied(b []byte) (Denied, int, error) {
	if len(b) < DeniedSize {
		return Denied{}, 0, errDenTrunc
	}
	if b[0] != Magic0 || b[1] != Magic1 {
		return Denied{}, 0, errPrefixMagic
	}
	tb := b[3]
	if PacketType(tb&typeMask) != PacketDenied {
		return Denied{}, 0, errDenType
	}
	if tb&flagReserved != 0 {
		return Denied{}, 0, errPrefixFlags
	}
	p := Denied{Reason: DenyReason(b[offDenReason]), Sealed: tb&FlagSealed != 0}
	if p.Reason == 0 || p.Reason >= denyReasonEnd {
		return Denied{}, 0, errDenReason
	}
	if !p.Sealed {
		return p, DeniedSize, nil
	}
	if b[2] != Version {
		return Denied{}, 0, errPrefixVersion
	}
	if len(b) < DeniedSealedSize {
		return Denied{}, 0, errDenTrunc
	}
	n := len(b) - DeniedSealedSize // the datagram is the denial
	if n > MaxDenyDetail {
		return Denied{}, 0, errDenDetail
	}
	p.Counter = le.Uint64(b[offDenCounter:])
	if n > 0 {
		p.Detail = b[DeniedTagOffset : DeniedTagOffset+n : DeniedTagOffset+n]
	}
	copy(p.Tag[:], b[DeniedTagOffset+n:])
	return p, DeniedSealedSize + n, nil
}

// AcceptBody is the sealed payload of an Accept packet: what the client
// needs to run the session. The header's ConnID is the new connection id
// and its Tick the server tick when the connection was accepted.
type AcceptBody struct {
	ClientID    uint64
	TickRate    uint16 // ticks per second
	HeartbeatMs uint16 // send at least one packet this often
	TimeoutMs   uint16 // drop the peer after this long without a packet
	MaxPacket   uint16 // largest datagram either side may send
	PlayerCount uint8
	Players     [MaxPlayersPerConnection]uint16 // first PlayerCount are valid
}

// Accept body sizes: the fixed fields, then 2 bytes per player.
const (
	acceptBodyFixedSize = 8 + 2*4 + 1
	acceptBodyMaxSize   = acceptBodyFixedSize + 2*MaxPlayersPerConnection
)

func (a *AcceptBody) Len() int { return acceptBodyFixedSize + 2*int(a.PlayerCount) }

var (
	errAccTrunc  = truncated("accept", "")
	errAccCount  = malformed("accept", "player count")
	errAccPacket = malformed("accept", "max packet")
)

func (a *AcceptBody) Append(b []byte) ([]byte, error) {
	if a.PlayerCount == 0 || a.PlayerCount > MaxPlayersPerConnection {
		return b, errAccCount
	}
	b = le.AppendUint64(b, a.ClientID)
	b = le.AppendUint16(b, a.TickRate)
	b = le.AppendUint16(b, a.HeartbeatMs)
	b = le.AppendUint16(b, a.TimeoutMs)
	b = le.AppendUint16(b, a.MaxPacket)
	b = append(b, a.PlayerCount)
	for _, p := range a.Players[:a.PlayerCount] {
		b = le.AppendUint16(b, p)
	}
	return b, nil
}

func ParseAcceptBody(b []byte) (AcceptBody, int, error) {
	var a AcceptBody
	if len(b) < acceptBodyFixedSize {
		return a, 0, errAccTrunc
	}
	a.ClientID = le.Uint64(b)
	a.TickRate = le.Uint16(b[8:])
	a.HeartbeatMs = le.Uint16(b[10:])
	a.TimeoutMs = le.Uint16(b[12:])
	a.MaxPacket = le.Uint16(b[14:])
	a.PlayerCount = b[16]
	if a.PlayerCount == 0 || a.PlayerCount > MaxPlayersPerConnection {
		return AcceptBody{}, 0, errAccCount
	}
	if a.MaxPacket < HeaderSize+SealOverhead || a.MaxPacket > MaxPacketSizeLimit {
		return AcceptBody{}, 0, errAccPacket
	}
	n := acceptBodyFixedSize + 2*int(a.PlayerCount)
	if len(b) < n {
		return AcceptBody{}, 0, errAccTrunc
	}
	for i := range int(a.PlayerCount) {
		a.Players[i] = le.Uint16(b[acceptBodyFixedSize+2*i:])
	}
	return a, n, nil
}

// DisconnectReason says why a peer ended a session. It is the one-byte
// payload of a Disconnect packet.
type DisconnectReason uint8

const (
	DisconnectClosed      DisconnectReason = 1 // the application closed it
	DisconnectTimeout     DisconnectReason = 2 // no packet within the timeout
	DisconnectKicked      DisconnectReason = 3 // the server removed the client
	DisconnectShutdown    DisconnectReason = 4 // the server is stopping
	DisconnectProtocol    DisconnectReason = 5 // the peer broke the protocol
	DisconnectTooSlow     DisconnectReason = 6 // fell behind: the command buffer (commits mode), or left its game frames unacknowledged
	DisconnectHostMigrate DisconnectReason = 7 // host handed the game over
	DisconnectNoState     DisconnectReason = 8 // commits relay: no client gave the committed state the client needs
	DisconnectReplaced    DisconnectReason = 9 // the client came back on a new session with its rejoin credential
	disconnectReasonEnd   DisconnectReason = 10
	// NumDisconnectReasons sizes arrays indexed by DisconnectReason.
	NumDisconnectReasons = int(disconnectReasonEnd)
)

var disconnectNames = [...]string{
	DisconnectClosed:      "closed",
	DisconnectTimeout:     "timeout",
	DisconnectKicked:      "kicked",
	DisconnectShutdown:    "server shutdown",
	DisconnectProtocol:    "protocol error",
	DisconnectTooSlow:     "too slow",
	DisconnectHostMigrate: "host migration",
	DisconnectNoState:     "no committed state",
	DisconnectReplaced:    "replaced by a rejoin",
}

func (r DisconnectReason) String() string {
	if r > 0 && r < disconnectReasonEnd {
		return disconnectNames[r]
	}
	return "unknown"
}

var (
	errDiscTrunc  = truncated("disconnect", "")
	errDiscReason = malformed("disconnect", "reason")
)

// ParseDisconnectReason parses a Disconnect packet's (opened) payload.
func ParseDisconnectReason(b []byte) (DisconnectReason, int, error) {
	if len(b) < 1 {
		return 0, 0, errDiscTrunc
	}
	r := DisconnectReason(b[0])
	if r == 0 || r >= disconnectReasonEnd {
		return 0, 0, errDiscReason
	}
	return r, 1, nil
}
