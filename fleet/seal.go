package fleet

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/tickwire/tickwire"
)

// A server's token key travels to the lobby that reserved seats sealed
// to that lobby's X25519 public key, so that nobody else on the bus, not
// even one allowed to read every reply, learns it. The construction
// composes standard primitives (an ECIES in the manner of HPKE's base
// mode): the server makes a fresh X25519 key pair per grant; the shared
// secret of its private key and the lobby's public key goes through
// HKDF-SHA256 (salt: both public keys) to a single-use AES-256-GCM key,
// which seals the token key with the server's id and the game id as
// additional data. A key is used once, so its all-zero nonce never
// repeats.

// sealInfo is HKDF's context: the construction and its version.
const sealInfo = "tickwire fleet token key v1"

// SealedKeyLen is the length of a sealed token key: the key and the
// AES-GCM tag.
const SealedKeyLen = len(tickwire.Key{}) + 16

// x25519Len is the length of an X25519 public key.
const x25519Len = 32

// errSealed is any failure to open a sealed key: the reasons are not
// told apart.
var errSealed = errors.New("fleet: the sealed token key does not open")

// sealTokenKey seals key to the lobby's X25519 public key lobbyPub for
// game gameID on server serverID; it returns the server's one-time
// public key and the sealed key.
func sealTokenKey(key tickwire.Key, lobbyPub []byte, serverID string, gameID uint64) (ephPub, sealed []byte, err error) {
	lp, err := ecdh.X25519().NewPublicKey(lobbyPub)
	if err != nil {
		return nil, nil, errors.New("fleet: the lobby's key is no X25519 public key")
	}
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ephPub = eph.PublicKey().Bytes()
	aead, err := sealAEAD(eph, lp, ephPub, lobbyPub)
	if err != nil {
		return nil, nil, err
	}
	var nonce [12]byte
	return ephPub, aead.Seal(nil, nonce[:], key[:], sealAD(serverID, gameID)), nil
}

// openTokenKey opens a key sealed by sealTokenKey to the lobby's
// private key priv.
func openTokenKey(priv *ecdh.PrivateKey, ephPub, sealed []byte, serverID string, gameID uint64) (tickwire.Key, error) {
	var key tickwire.Key
	if len(ephPub) != x25519Len || len(sealed) != SealedKeyLen {
		return key, errSealed
	}
	ep, err := ecdh.X25519().NewPublicKey(ephPub)
	if err != nil {
		return key, errSealed
	}
	aead, err := sealAEAD(priv, ep, ephPub, priv.PublicKey().Bytes())
	if err != nil {
		return key, errSealed
	}
	var nonce [12]byte
	if _, err := aead.Open(key[:0], nonce[:], sealed, sealAD(serverID, gameID)); err != nil {
		return tickwire.Key{}, errSealed
	}
	return key, nil
}

// sealAEAD is the AES-256-GCM of the shared secret of priv and pub.
func sealAEAD(priv *ecdh.PrivateKey, pub *ecdh.PublicKey, ephPub, lobbyPub []byte) (cipher.AEAD, error) {
	shared, err := priv.ECDH(pub) // fails on a low-order point (all-zero secret)
	if err != nil {
		return nil, err
	}
	k, err := hkdf.Key(sha256.New, shared, append(append([]byte{}, ephPub...), lobbyPub...), sealInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealAD binds a sealed key to its server and game.
func sealAD(serverID string, gameID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(serverID), gameID)
}
