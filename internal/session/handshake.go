package session

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// HandshakeStats counts what the server's stateless handshake did.
type HandshakeStats struct {
	Requests   uint64 // connection requests received
	Challenges uint64 // challenges sent
	Responses  uint64 // challenge responses received
	Denied     [proto.NumDenyReasons]uint64
	BytesIn    uint64 // handshake bytes received (requests and responses)
	BytesOut   uint64 // handshake bytes sent (challenges, denials, accepts)
	Malformed  uint64 // requests and responses that did not parse (dropped unanswered)
}

// DenySilently is what an admit function returns to have a request
// dropped without an answer (the server answered it another way).
const DenySilently proto.DenyReason = 255

// ResponderConfig describes a server's handshake.
type ResponderConfig struct {
	// Keys open tokens: the current key first, then up to three earlier
	// ones during a rotation. Tokens name their key by KeyID.
	Keys []*[proto.KeySize]byte
	// CookieLifetime bounds how long a challenge may be answered.
	CookieLifetime time.Duration
	// ServerAddrs are the addresses ("host:port", as tokens name them)
	// this server answers to: a token that names none of them is denied.
	// Empty: not checked.
	ServerAddrs []string
	// RejoinKey, if set, opens rejoin credentials: tokens the server
	// sealed itself for a client to come back into its slots. A token it
	// opens is marked (Admission.Rejoin, Handshake.Rejoin), so that no
	// rejoin credential is ever taken for an ordinary token and none of
	// the Keys' tokens for a rejoin. Its id must differ from theirs.
	RejoinKey *[proto.KeySize]byte
	// MaxUsedTokens bounds the history of tokens that opened a
	// connection and have not expired yet; when it is full, new
	// connections are denied as server full. Default 65,536.
	MaxUsedTokens int
}

// Responder answers connection requests, keeping no state per request:
// the token is opened, re-sealed into a cookie bound to the sender's
// address and sent back with a server random; only a response that
// echoes a valid cookie and proves the client key becomes a Handshake.
// Every reply is no larger than the datagram it answers. Denials after the
// token opened are sealed with the token's server-to-client key. It
// remembers every token that opened a connection until it expires, so a
// token opens one session (Use).
//
// Not safe for concurrent use.
type Responder struct {
	keys    *keyring
	rejoin  *keyring // RejoinKey's, or nil
	jar     *cookieJar
	servers []uint32 // ServerAddrHash of ResponderConfig.ServerAddrs
	used    map[[proto.NonceSize]byte]time.Time
	maxUsed int
	stats   HandshakeStats
	ch      proto.Challenge // reused: the cookie is written in place
}

// NewResponder returns a server's handshake.
func NewResponder(cfg ResponderConfig) (*Responder, error) {
	keys, err := newKeyring(cfg.Keys)
	if err != nil {
		return nil, err
	}
	j, err := newCookieJar(cfg.CookieLifetime)
	if err != nil {
		return nil, err
	}
	h := &Responder{keys: keys, jar: j, used: map[[proto.NonceSize]byte]time.Time{}, maxUsed: cfg.MaxUsedTokens}
	if cfg.RejoinKey != nil {
		if h.rejoin, err = newKeyring([]*[proto.KeySize]byte{cfg.RejoinKey}); err != nil {
			return nil, err
		}
		if slices.Contains(keys.ids[:keys.n], h.rejoin.ids[0]) {
			return nil, errors.New("tickwire: the rejoin key has a token key's id")
		}
	}
	if h.maxUsed <= 0 {
		h.maxUsed = 1 << 16
	}
	for _, a := range cfg.ServerAddrs {
		h.servers = append(h.servers, proto.ServerAddrHash(a))
	}
	return h, nil
}

// Stats returns the handshake's counters.
func (h *Responder) Stats() HandshakeStats { return h.stats }

// Admission is an opened token a server's admit function decides on.
type Admission struct {
	Priv   *proto.TokenPrivate
	GameID uint64
	Nonce  [proto.NonceSize]byte // the token's: it opens one session
	// Rejoin marks a rejoin credential (ResponderConfig.RejoinKey).
	Rejoin bool
}

// Request handles a connection request from addr and appends the reply to
// out (a challenge, or a denial). admit says whether the server could take
// the client now (capacity, duplicate client ids); it is asked before a
// cookie is spent so a full server answers with a denial.
func (h *Responder) Request(pkt []byte, addr netip.AddrPort, now time.Time, out []byte,
	admit func(a *Admission) proto.DenyReason) []byte {
	h.stats.Requests++
	h.stats.BytesIn += uint64(len(pkt))
	req, _, err := proto.ParseConnectionRequest(pkt)
	if err != nil {
		h.stats.Malformed++
		return out // too short to answer without amplification
	}
	keys := h.keys
	if h.rejoin != nil && req.KeyID == h.rejoin.ids[0] {
		keys = h.rejoin
	}
	priv, deny, opened := keys.open(&req, now)
	if !opened {
		return h.Deny(out, deny)
	}
	if deny == 0 {
		deny = h.checkServer(&priv)
	}
	if deny == 0 {
		deny = admit(&Admission{Priv: &priv, GameID: req.GameID, Nonce: req.TokenNonce, Rejoin: keys == h.rejoin})
	}
	if deny == 0 && h.wasUsed(req.TokenNonce, now) {
		deny = proto.DenyTokenUsed
	}
	switch deny {
	case 0:
	case DenySilently:
		return out
	default:
		return h.denySealed(out, deny, &priv.ServerToClientKey, nil)
	}
	rand.Read(h.ch.ServerRandom[:])
	d := cookieData{priv: priv, tokenExpires: req.Expires, gameID: req.GameID, tokenNonce: req.TokenNonce,
		serverRandom: h.ch.ServerRandom, rejoin: keys == h.rejoin}
	h.jar.issue(&h.ch.Cookie, &d, addr, now)
	h.stats.Challenges++
	h.stats.BytesOut += proto.ChallengeSize
	out, _ = h.ch.Append(out)
	return out
}

// checkServer says whether an opened token names this server.
func (h *Responder) checkServer(priv *proto.TokenPrivate) proto.DenyReason {
	if len(h.servers) == 0 {
		return 0
	}
	for _, s := range priv.Servers[:priv.ServerCount] {
		if slices.Contains(h.servers, s) {
			return 0
		}
	}
	return proto.DenyWrongServer
}

// Handshake is a verified challenge response: the client received the
// challenge at its address and holds the token's keys.
type Handshake struct {
	Priv   proto.TokenPrivate
	GameID uint64
	d      cookieData
	client [proto.RandomSize]byte
}

// Response checks a challenge response from addr. On failure ok is false
// and a denial may be appended to out.
func (h *Responder) Response(pkt []byte, addr netip.AddrPort, now time.Time, out []byte) (hs Handshake, _ []byte, ok bool) {
	h.stats.Responses++
	h.stats.BytesIn += uint64(len(pkt))
	resp, _, err := proto.ParseChallengeResponse(pkt)
	if err != nil {
		h.stats.Malformed++
		return Handshake{}, out, false
	}
	d, deny := h.jar.open(&resp.Cookie, addr, now)
	if deny == 0 && !verifyResponseTag(&d.priv.ClientToServerKey, &resp, pkt) {
		deny = proto.DenyBadCookie
	}
	if deny != 0 {
		return Handshake{}, h.Deny(out, deny), false
	}
	return Handshake{Priv: d.priv, GameID: d.gameID, d: d, client: resp.ClientRandom}, out, true
}

// SameToken reports whether two handshakes present the same token.
func (hs *Handshake) SameToken(other *Handshake) bool { return hs.d.tokenNonce == other.d.tokenNonce }

// TokenNonce is the nonce of the token hs presents.
func (hs *Handshake) TokenNonce() [proto.NonceSize]byte { return hs.d.tokenNonce }

// Rejoin reports whether hs presents a rejoin credential
// (ResponderConfig.RejoinKey).
func (hs *Handshake) Rejoin() bool { return hs.d.rejoin }

// Use records that hs's token opens a connection with id connID and
// returns the session's keys (client to server, server to client), which
// it hands to the key log when there is one (keylog.FromEnv). A token
// that already opened one is denied (DenyTokenUsed), and so is any when
// the history of used tokens is full (DenyServerFull).
func (h *Responder) Use(hs *Handshake, connID uint32, now time.Time) (c2s, s2c [proto.KeySize]byte, deny proto.DenyReason) {
	if h.wasUsed(hs.d.tokenNonce, now) {
		return c2s, s2c, proto.DenyTokenUsed
	}
	if len(h.used) >= h.maxUsed {
		h.forgetExpired(now)
		if len(h.used) >= h.maxUsed {
			return c2s, s2c, proto.DenyServerFull
		}
	}
	h.used[hs.d.tokenNonce] = time.Unix(int64(hs.d.tokenExpires), 0).Add(TokenSkew)
	c2s, s2c = SessionKeys(&hs.Priv.ClientToServerKey, &hs.Priv.ServerToClientKey, &hs.d.serverRandom, &hs.client, connID)
	keyLog().Session(connID, &c2s, &s2c)
	return c2s, s2c, 0
}

// wasUsed reports whether a token opened a connection and has not
// expired since.
func (h *Responder) wasUsed(nonce [proto.NonceSize]byte, now time.Time) bool {
	until, ok := h.used[nonce]
	if ok && now.After(until) {
		delete(h.used, nonce)
		return false
	}
	return ok
}

// forgetExpired drops the used tokens that expired.
func (h *Responder) forgetExpired(now time.Time) {
	for n, until := range h.used {
		if now.After(until) {
			delete(h.used, n)
		}
	}
}

// UsedTokens is how many tokens the history holds.
func (h *Responder) UsedTokens() int { return len(h.used) }

// Deny appends a plaintext denial for reason r to out: for requests whose
// token did not open (the server holds no key the client trusts yet).
func (h *Responder) Deny(out []byte, r proto.DenyReason) []byte {
	h.stats.Denied[r]++
	h.stats.BytesOut += proto.DeniedSize
	d := proto.Denied{Reason: r}
	out, _ = d.Append(out)
	return out
}

// DenyHandshake appends a denial for a verified handshake, sealed with its
// token's server-to-client key.
func (h *Responder) DenyHandshake(out []byte, hs *Handshake, r proto.DenyReason) []byte {
	return h.denySealed(out, r, &hs.Priv.ServerToClientKey, nil)
}

// DenyHandshakeDetail is DenyHandshake with a detail only the client can
// read (proto.DenyJoinRefused: the refused slot and the game's reason),
// at most proto.MaxDenyDetail bytes (longer is cut).
func (h *Responder) DenyHandshakeDetail(out []byte, hs *Handshake, r proto.DenyReason, detail []byte) []byte {
	return h.denySealed(out, r, &hs.Priv.ServerToClientKey, detail[:min(len(detail), proto.MaxDenyDetail)])
}

// denySealed appends a denial sealed with key: a client that holds the
// token verifies it (and reads detail), and nobody else can forge one.
func (h *Responder) denySealed(out []byte, r proto.DenyReason, key *[proto.KeySize]byte, detail []byte) []byte {
	aead, err := NewAEAD(key[:])
	if err != nil {
		return h.Deny(out, r)
	}
	var c [8]byte
	rand.Read(c[:])
	d := proto.Denied{Reason: r, Sealed: true, Counter: binary.LittleEndian.Uint64(c[:])}
	start := len(out)
	out, err = d.Append(out) // the tag's place, filled below
	if err != nil {
		return out[:start]
	}
	n := d.Nonce()
	out = aead.Seal(out[:start+proto.DeniedTagOffset], n[:], detail, out[start:start+proto.DeniedTagOffset])
	h.stats.Denied[r]++
	h.stats.BytesOut += uint64(len(out) - start)
	return out
}

// verifyResponseTag checks the response's proof that the client holds the
// client->server key. It builds a cipher for that key (a few allocations,
// paid only by clients that already proved their address).
func verifyResponseTag(key *[proto.KeySize]byte, resp *proto.ChallengeResponse, pkt []byte) bool {
	aead, err := NewAEAD(key[:])
	if err != nil {
		return false
	}
	var tag [proto.SealOverhead]byte
	responseTag(aead, tag[:0], resp, pkt)
	return subtle.ConstantTimeCompare(tag[:], resp.Tag[:]) == 1
}
