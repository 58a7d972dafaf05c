package session

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// cookieJar issues and checks the stateless challenge cookies of the
// handshake. A cookie carries everything the server needs to accept the
// client later (a cookieData), sealed with a key that only this server
// process knows and bound to the client's address, so the server keeps no
// state for a connection request until the client proves, by echoing the
// cookie, that it receives at its source address.
//
// Cookie layout (proto.CookieSize = 192 bytes):
//
//	0   8    counter: nonce of the seal, unique per cookie (random start)
//	8   184  AES-256-GCM seal (168 bytes + 16-byte tag) of:
//	           0    8   client id
//	           8    32  client -> server key
//	           40   32  server -> client key
//	           72   1   player count
//	           73   8   players (4 × u16)
//	           81   32  user data
//	           113  8   token expiry (u64 unix s)
//	           121  8   cookie expiry (u64 unix ms)
//	           129  8   game id
//	           137  12  token nonce
//	           149  16  server random (the challenge's)
//	           165  1   flags: bit 0, the token is a rejoin credential
//	           166  2   zeros
//	         additional data: client IP (16, v4-mapped) and port (u16)
//
// Not safe for concurrent use.
type cookieJar struct {
	aead     cipher.AEAD
	counter  uint64
	lifetime time.Duration
	plain    [cookiePlainSize]byte
	ad       [18]byte
	nonce    [proto.NonceSize]byte // a field, not a local: it escapes through cipher.AEAD
}

// cookieData is what a cookie carries. Of the token's private part it
// keeps the client id, keys, players and user data, not its creation time
// or server list: those are checked before a cookie is issued.
type cookieData struct {
	priv         proto.TokenPrivate
	tokenExpires uint64 // unix s
	gameID       uint64
	tokenNonce   [proto.NonceSize]byte
	serverRandom [proto.RandomSize]byte
	rejoin       bool // the token was sealed with the rejoin key
}

// Offsets in the cookie's plaintext.
const (
	offCookieClientID = 0
	offCookieC2S      = offCookieClientID + 8
	offCookieS2C      = offCookieC2S + proto.KeySize
	offCookieCount    = offCookieS2C + proto.KeySize
	offCookiePlayers  = offCookieCount + 1
	offCookieUserData = offCookiePlayers + 2*proto.MaxPlayersPerConnection
	offCookieTokenExp = offCookieUserData + proto.UserDataSize
	offCookieExpires  = offCookieTokenExp + 8
	offCookieGameID   = offCookieExpires + 8
	offCookieNonce    = offCookieGameID + 8
	offCookieRandom   = offCookieNonce + proto.NonceSize
	offCookieFlags    = offCookieRandom + proto.RandomSize
	cookieUsed        = offCookieFlags + 1

	cookieSealStart = 8
	cookiePlainSize = proto.CookieSize - cookieSealStart - proto.SealOverhead
)

// The cookie's fields must fit its plaintext.
const _ = uint(cookiePlainSize - cookieUsed)

func newCookieJar(lifetime time.Duration) (*cookieJar, error) {
	var key [proto.KeySize]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, err
	}
	aead, err := NewAEAD(key[:])
	if err != nil {
		return nil, err
	}
	var c [8]byte
	if _, err := rand.Read(c[:]); err != nil {
		return nil, err
	}
	return &cookieJar{aead: aead, counter: binary.LittleEndian.Uint64(c[:]), lifetime: lifetime}, nil
}

func (j *cookieJar) addrAD(addr netip.AddrPort) []byte {
	ip := addr.Addr().As16()
	copy(j.ad[:16], ip[:])
	binary.LittleEndian.PutUint16(j.ad[16:], addr.Port())
	return j.ad[:]
}

func (j *cookieJar) nonceFor(counter uint64) []byte {
	binary.LittleEndian.PutUint64(j.nonce[4:], counter)
	return j.nonce[:]
}

// issue writes a cookie carrying d into dst. It allocates nothing.
func (j *cookieJar) issue(dst *[proto.CookieSize]byte, d *cookieData, addr netip.AddrPort, now time.Time) {
	j.counter++
	exp := now.Add(j.lifetime).UnixMilli()
	if tok := int64(d.tokenExpires) * 1000; tok < exp {
		exp = tok
	}
	le := binary.LittleEndian
	p := &j.plain
	le.PutUint64(p[offCookieClientID:], d.priv.ClientID)
	copy(p[offCookieC2S:], d.priv.ClientToServerKey[:])
	copy(p[offCookieS2C:], d.priv.ServerToClientKey[:])
	p[offCookieCount] = d.priv.PlayerCount
	for i, pl := range d.priv.Players {
		le.PutUint16(p[offCookiePlayers+2*i:], pl)
	}
	copy(p[offCookieUserData:], d.priv.UserData[:])
	le.PutUint64(p[offCookieTokenExp:], d.tokenExpires)
	le.PutUint64(p[offCookieExpires:], uint64(exp))
	le.PutUint64(p[offCookieGameID:], d.gameID)
	copy(p[offCookieNonce:], d.tokenNonce[:])
	copy(p[offCookieRandom:], d.serverRandom[:])
	p[offCookieFlags] = 0
	if d.rejoin {
		p[offCookieFlags] = 1
	}
	clear(p[cookieUsed:])
	le.PutUint64(dst[:cookieSealStart], j.counter)
	j.aead.Seal(dst[cookieSealStart:cookieSealStart], j.nonceFor(j.counter), p[:], j.addrAD(addr))
}

// open checks a cookie echoed from addr and returns what it carries, or
// the reason to deny: DenyBadCookie if it was forged, altered or comes
// from another address, DenyExpired if it is too old.
func (j *cookieJar) open(c *[proto.CookieSize]byte, addr netip.AddrPort, now time.Time) (cookieData, proto.DenyReason) {
	le := binary.LittleEndian
	counter := le.Uint64(c[:cookieSealStart])
	p, err := j.aead.Open(j.plain[:0], j.nonceFor(counter), c[cookieSealStart:], j.addrAD(addr))
	if err != nil {
		return cookieData{}, proto.DenyBadCookie
	}
	if now.UnixMilli() >= int64(le.Uint64(p[offCookieExpires:])) {
		return cookieData{}, proto.DenyExpired
	}
	var d cookieData
	d.priv.ClientID = le.Uint64(p[offCookieClientID:])
	copy(d.priv.ClientToServerKey[:], p[offCookieC2S:])
	copy(d.priv.ServerToClientKey[:], p[offCookieS2C:])
	d.priv.PlayerCount = p[offCookieCount]
	for i := range d.priv.Players {
		d.priv.Players[i] = le.Uint16(p[offCookiePlayers+2*i:])
	}
	copy(d.priv.UserData[:], p[offCookieUserData:])
	d.tokenExpires = le.Uint64(p[offCookieTokenExp:])
	d.gameID = le.Uint64(p[offCookieGameID:])
	copy(d.tokenNonce[:], p[offCookieNonce:])
	copy(d.serverRandom[:], p[offCookieRandom:])
	d.rejoin = p[offCookieFlags]&1 != 0
	return d, 0
}

// responseTag computes the challenge response's key proof: the AEAD tag of
// an empty plaintext under the client->server token key, with the nonce
// the client chose (proto.ChallengeResponse.Nonce, from its random), over
// every byte of the packet before the tag. The client calls it to build
// the response, the server to check it.
func responseTag(aead cipher.AEAD, dst []byte, resp *proto.ChallengeResponse, packet []byte) []byte {
	nonce := resp.Nonce()
	return aead.Seal(dst, nonce[:], nil, packet[:proto.ResponseTagOffset])
}
