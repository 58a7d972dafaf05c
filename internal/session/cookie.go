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
// client later (the opened token and its expiry), sealed with a key that
// only this server process knows and bound to the client's address, so
// the server keeps no state for a connection request until the client
// proves, by echoing the cookie, that it receives at its source address.
//
// Cookie layout (proto.CookieSize = 176 bytes):
//
//	0   8    counter: nonce of the seal, unique per cookie (random start)
//	8   168  AES-256-GCM seal of: token private data (128), token expiry
//	         (u64 unix s), cookie expiry (u64 unix ms), game id (u64);
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

const (
	cookiePlainSize = proto.TokenPrivateSize + 8 + 8 + 8
	cookieSealStart = 8
)

// The cookie must fill proto.CookieSize exactly.
const _ = uint(proto.CookieSize-(cookieSealStart+cookiePlainSize+proto.SealOverhead)) +
	uint((cookieSealStart+cookiePlainSize+proto.SealOverhead)-proto.CookieSize)

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

// issue writes a cookie for an opened token of game gameID into dst. It
// allocates nothing.
func (j *cookieJar) issue(dst *[proto.CookieSize]byte, priv *proto.TokenPrivate, tokenExpires, gameID uint64, addr netip.AddrPort, now time.Time) {
	j.counter++
	exp := now.Add(j.lifetime).UnixMilli()
	if tok := int64(tokenExpires) * 1000; tok < exp {
		exp = tok
	}
	p, _ := priv.Append(j.plain[:0]) // priv came from ParseTokenPrivate: always valid
	p = binary.LittleEndian.AppendUint64(p, tokenExpires)
	p = binary.LittleEndian.AppendUint64(p, uint64(exp))
	p = binary.LittleEndian.AppendUint64(p, gameID)
	binary.LittleEndian.PutUint64(dst[:cookieSealStart], j.counter)
	j.aead.Seal(dst[cookieSealStart:cookieSealStart], j.nonceFor(j.counter), p, j.addrAD(addr))
}

// open checks a cookie echoed from addr and returns the token and game id
// it carries, or the reason to deny: DenyBadCookie if it was forged,
// altered or comes from another address, DenyExpired if it is too old.
func (j *cookieJar) open(c *[proto.CookieSize]byte, addr netip.AddrPort, now time.Time) (proto.TokenPrivate, uint64, proto.DenyReason) {
	counter := binary.LittleEndian.Uint64(c[:cookieSealStart])
	p, err := j.aead.Open(j.plain[:0], j.nonceFor(counter), c[cookieSealStart:], j.addrAD(addr))
	if err != nil {
		return proto.TokenPrivate{}, 0, proto.DenyBadCookie
	}
	priv, n, err := proto.ParseTokenPrivate(p)
	if err != nil {
		return proto.TokenPrivate{}, 0, proto.DenyBadCookie
	}
	exp := int64(binary.LittleEndian.Uint64(p[n+8:]))
	gameID := binary.LittleEndian.Uint64(p[n+16:])
	if now.UnixMilli() >= exp {
		return proto.TokenPrivate{}, 0, proto.DenyExpired
	}
	return priv, gameID, 0
}

// responseTag computes the challenge response's key proof: the AEAD tag of
// an empty plaintext under the client->server key, nonce kind
// proto.NonceResponse with the cookie counter, over the packet's prefix and
// cookie. The client calls it to build the response, the server to check.
func responseTag(aead cipher.AEAD, dst []byte, packet []byte) []byte {
	counter := binary.LittleEndian.Uint64(packet[proto.PrefixSize:])
	nonce := proto.Nonce(proto.NonceResponse, counter)
	return aead.Seal(dst, nonce[:], nil, packet[:proto.PrefixSize+proto.CookieSize])
}
