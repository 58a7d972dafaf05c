package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// NewAEAD returns AES-256-GCM with key.
func NewAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// KeyID names a token key: the first four bytes (little-endian) of its
// SHA-256. A token carries the id of the key that sealed it, so a server
// holding several keys (during a rotation) knows which one opens it.
func KeyID(key *[proto.KeySize]byte) uint32 {
	h := sha256.Sum256(key[:])
	return binary.LittleEndian.Uint32(h[:4])
}

// SealToken seals a connect token's private part with the server's key:
// the key id, game id and expiry travel in clear and are bound as
// additional data. It returns the sealed bytes written over dst.
func SealToken(key *[proto.KeySize]byte, dst *[proto.TokenSealedSize]byte, nonce *[proto.NonceSize]byte, gameID, expires uint64, priv *proto.TokenPrivate) error {
	plain, err := priv.Append(make([]byte, 0, proto.TokenPrivateSize))
	if err != nil {
		return err
	}
	aead, err := NewAEAD(key[:])
	if err != nil {
		return err
	}
	ad := proto.TokenAdditionalData(nil, KeyID(key), gameID, expires)
	aead.Seal(dst[:0], nonce[:], plain, ad)
	return nil
}

// TokenSkew is how much the lobby's and the server's clocks may disagree:
// a token is accepted up to TokenSkew past its expiry, and refused when it
// claims to be created more than TokenSkew in the future.
const TokenSkew = 5 * time.Second

// maxKeys bounds the keys a server accepts tokens from at once.
const maxKeys = 4

// keyring opens the sealed tokens of connection requests with the key
// their key id names. Which game ids and servers a server accepts is the
// responder's policy, not the keyring's.
type keyring struct {
	ids     [maxKeys]uint32
	openers [maxKeys]cipher.AEAD
	n       int
	ad      [proto.TokenAdditionalDataSize]byte
	plain   [proto.TokenPrivateSize]byte
}

func newKeyring(keys []*[proto.KeySize]byte) (*keyring, error) {
	if len(keys) == 0 || len(keys) > maxKeys {
		return nil, fmt.Errorf("tickwire: a server takes 1 to %d token keys, got %d", maxKeys, len(keys))
	}
	r := &keyring{}
	for _, k := range keys {
		id := KeyID(k)
		if slices.Contains(r.ids[:r.n], id) {
			return nil, fmt.Errorf("tickwire: two token keys with the same id %08x", id)
		}
		aead, err := NewAEAD(k[:])
		if err != nil {
			return nil, err
		}
		r.ids[r.n], r.openers[r.n] = id, aead
		r.n++
	}
	return r, nil
}

// open checks a request's token: its key, its seal, and its validity at
// now (with TokenSkew). It returns the private part, or the reason to deny
// it and whether the token opened (so that the denial can be sealed with
// its keys). It allocates nothing.
func (r *keyring) open(req *proto.ConnectionRequest, now time.Time) (priv proto.TokenPrivate, deny proto.DenyReason, opened bool) {
	i := slices.Index(r.ids[:r.n], req.KeyID)
	if i < 0 {
		return proto.TokenPrivate{}, proto.DenyUnknownKey, false
	}
	ad := proto.TokenAdditionalData(r.ad[:0], req.KeyID, req.GameID, req.Expires)
	plain, err := r.openers[i].Open(r.plain[:0], req.TokenNonce[:], req.SealedToken[:], ad)
	if err != nil {
		return proto.TokenPrivate{}, proto.DenyInvalidToken, false
	}
	priv, _, err = proto.ParseTokenPrivate(plain)
	if err != nil {
		return proto.TokenPrivate{}, proto.DenyInvalidToken, false
	}
	if int64(req.Expires) < now.Add(-TokenSkew).Unix() || int64(priv.Created) > now.Add(TokenSkew).Unix() {
		return priv, proto.DenyExpired, true // expired, or not valid yet
	}
	return priv, 0, true
}

// SessionKeys derives a session's keys from the token's two keys, the
// server's and the client's handshake randoms and the connection id
// (docs/PROTOCOL.md, "Session keys"): HKDF-SHA256 with the token keys as
// secret, the randoms as salt and the protocol and connection id as info.
// Every handshake gets keys of its own, so packet numbers that restart in
// every session never repeat a (key, nonce) pair.
func SessionKeys(c2s, s2c *[proto.KeySize]byte, serverRandom, clientRandom *[proto.RandomSize]byte, connID uint32) (c2sKey, s2cKey [proto.KeySize]byte) {
	var secret [2 * proto.KeySize]byte
	copy(secret[:], c2s[:])
	copy(secret[proto.KeySize:], s2c[:])
	var salt [2 * proto.RandomSize]byte
	copy(salt[:], serverRandom[:])
	copy(salt[proto.RandomSize:], clientRandom[:])
	info := binary.LittleEndian.AppendUint32([]byte(sessionKeyInfo), connID)
	k, err := hkdf.Key(sha256.New, secret[:], salt[:], string(info), 2*proto.KeySize)
	if err != nil {
		panic("tickwire: HKDF of 64 bytes cannot fail: " + err.Error())
	}
	copy(c2sKey[:], k)
	copy(s2cKey[:], k[proto.KeySize:])
	return c2sKey, s2cKey
}

// sessionKeyInfo is HKDF's info before the connection id.
const sessionKeyInfo = "tickwire v2 session"
