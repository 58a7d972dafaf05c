package relay

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"time"
)

// KeySize is the size of a relay key.
const KeySize = 32

// Key is the secret a relay shares with whoever mints its grants (the
// lobby). Whoever holds it can let anyone use the relay. It has the
// size and text form of tickwire.Key, so one key file can serve both
// (a tickwire.Key converts: relay.Key(k)); grants are MACed under a
// key derived from it for this purpose only.
type Key [KeySize]byte

// GenerateKey returns a new random key.
func GenerateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("relay: generate key: %w", err)
	}
	return k, nil
}

// grantInfo labels the HKDF expansion of a Key into the grant MAC key.
const grantInfo = "tickwire relay grant v1"

// macKey derives the grant MAC key from k.
func (k *Key) macKey() []byte {
	mk, err := hkdf.Key(sha256.New, k[:], nil, grantInfo, sha256.Size)
	if err != nil {
		panic("relay: hkdf: " + err.Error()) // only for a length HKDF cannot give
	}
	return mk
}

// Grant is what a grant token authorizes: binding one side of one
// allocation, until Expires, for at most Budget bytes forwarded.
type Grant struct {
	// Alloc names the allocation. Both sides' grants carry the same id;
	// the minter picks it at random (MintPair).
	Alloc uint64
	// Side is the side the holder may bind: SideJoiner (0) or SideHost (1).
	Side uint8
	// Expires is when the grant stops binding, to the second. A side
	// already bound keeps its binding (see the package doc).
	Expires time.Time
	// Budget is the most bytes the allocation forwards, both directions
	// together. Zero is refused by Mint.
	Budget uint64
}

// The sides of an allocation.
const (
	SideJoiner uint8 = 0 // the player who joins a peer-hosted game
	SideHost   uint8 = 1 // the player who hosts it
)

// Grant token layout (offsets in bytes, little-endian).
const (
	grantOffVersion = 0
	grantOffSide    = 1
	grantOffAlloc   = 2
	grantOffExpires = 10
	grantOffBudget  = 18
	grantOffMAC     = 26
	grantMACSize    = 16

	// GrantSize is the size of a grant token.
	GrantSize = grantOffMAC + grantMACSize

	// grantVersion is the token format in byte 0.
	grantVersion = 1
)

var (
	errGrantSize    = errors.New("relay: grant token: wrong size")
	errGrantVersion = errors.New("relay: grant token: unknown version")
	errGrantSide    = errors.New("relay: grant token: side is neither 0 nor 1")
	errGrantMAC     = errors.New("relay: grant token: bad MAC")
	errGrantBudget  = errors.New("relay: grant: zero budget")
	errGrantExpires = errors.New("relay: grant: expiry before 1970 or zero")
)

// Mint returns the token for g under key: GrantSize bytes the holder
// can read but neither alter nor forge (HMAC-SHA-256, truncated to 16
// bytes, under a key derived from key).
func Mint(key Key, g Grant) ([]byte, error) {
	return newGrantMAC(key.macKey()).mint(g)
}

// MintPair mints the two grants of a new allocation with a random id:
// the joiner's (side 0) and the host's (side 1).
func MintPair(key Key, expires time.Time, budget uint64) (joiner, host []byte, err error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, nil, fmt.Errorf("relay: allocation id: %w", err)
	}
	m := newGrantMAC(key.macKey())
	g := Grant{Alloc: binary.LittleEndian.Uint64(id[:]), Side: SideJoiner, Expires: expires, Budget: budget}
	if joiner, err = m.mint(g); err != nil {
		return nil, nil, err
	}
	g.Side = SideHost
	if host, err = m.mint(g); err != nil {
		return nil, nil, err
	}
	return joiner, host, nil
}

// Open checks a grant token's MAC under key and returns its grant. It
// does not look at the expiry: the relay compares it with its clock.
func Open(key Key, token []byte) (Grant, error) {
	return newGrantMAC(key.macKey()).open(token)
}

// grantMAC computes grant MACs with one HMAC, reused, so that checking
// a grant (a flood of bad ones included) allocates nothing. It is not
// safe for concurrent use: each of the relay's loops has its own.
type grantMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newGrantMAC(macKey []byte) *grantMAC {
	return &grantMAC{h: hmac.New(sha256.New, macKey)}
}

// of returns the MAC of fields, valid until the next call.
func (m *grantMAC) of(fields []byte) []byte {
	m.h.Reset()
	m.h.Write(fields)
	return m.h.Sum(m.sum[:0])[:grantMACSize]
}

func (m *grantMAC) mint(g Grant) ([]byte, error) {
	switch {
	case g.Side > SideHost:
		return nil, errGrantSide
	case g.Budget == 0:
		return nil, errGrantBudget
	case g.Expires.Unix() <= 0:
		return nil, errGrantExpires
	}
	b := make([]byte, grantOffMAC, GrantSize)
	b[grantOffVersion] = grantVersion
	b[grantOffSide] = g.Side
	binary.LittleEndian.PutUint64(b[grantOffAlloc:], g.Alloc)
	binary.LittleEndian.PutUint64(b[grantOffExpires:], uint64(g.Expires.Unix()))
	binary.LittleEndian.PutUint64(b[grantOffBudget:], g.Budget)
	return append(b, m.of(b)...), nil
}

func (m *grantMAC) open(token []byte) (Grant, error) {
	if len(token) != GrantSize {
		return Grant{}, errGrantSize
	}
	if !hmac.Equal(m.of(token[:grantOffMAC]), token[grantOffMAC:]) {
		return Grant{}, errGrantMAC
	}
	return ReadGrant(token)
}

// ReadGrant decodes a grant token's fields without checking its MAC:
// for its holder, who cannot check it, to learn the allocation, side
// and expiry it was handed.
func ReadGrant(token []byte) (Grant, error) {
	if len(token) != GrantSize {
		return Grant{}, errGrantSize
	}
	if token[grantOffVersion] != grantVersion {
		return Grant{}, errGrantVersion
	}
	side := token[grantOffSide]
	if side > SideHost {
		return Grant{}, errGrantSide
	}
	exp := binary.LittleEndian.Uint64(token[grantOffExpires:])
	if int64(exp) <= 0 {
		return Grant{}, errGrantExpires
	}
	budget := binary.LittleEndian.Uint64(token[grantOffBudget:])
	if budget == 0 {
		return Grant{}, errGrantBudget
	}
	return Grant{
		Alloc:   binary.LittleEndian.Uint64(token[grantOffAlloc:]),
		Side:    side,
		Expires: time.Unix(int64(exp), 0),
		Budget:  budget,
	}, nil
}
