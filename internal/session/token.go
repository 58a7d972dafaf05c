package session

import (
	"crypto/aes"
	"crypto/cipher"
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

// SealToken seals a connect token's private part with the server's key:
// the game id and expiry travel in clear and are bound as additional
// data. It returns the sealed bytes written over dst.
func SealToken(key *[proto.KeySize]byte, dst *[proto.TokenSealedSize]byte, nonce *[proto.NonceSize]byte, gameID, expires uint64, priv *proto.TokenPrivate) error {
	plain, err := priv.Append(make([]byte, 0, proto.TokenPrivateSize))
	if err != nil {
		return err
	}
	aead, err := NewAEAD(key[:])
	if err != nil {
		return err
	}
	ad := proto.TokenAdditionalData(nil, 0, gameID, expires) // key id 0 until tokens carry one
	aead.Seal(dst[:0], nonce[:], plain, ad)
	return nil
}

// tokenOpener opens the sealed tokens of connection requests on the server.
// Which game ids a server accepts is the server's policy, not the opener's.
type tokenOpener struct {
	aead  cipher.AEAD
	ad    [proto.TokenAdditionalDataSize]byte
	plain [proto.TokenPrivateSize]byte
}

func newTokenOpener(key *[proto.KeySize]byte) (*tokenOpener, error) {
	aead, err := NewAEAD(key[:])
	if err != nil {
		return nil, err
	}
	return &tokenOpener{aead: aead}, nil
}

// open checks a request's token and returns its private part, or the
// reason to deny it. It allocates nothing.
func (o *tokenOpener) open(req *proto.ConnectionRequest, now time.Time) (proto.TokenPrivate, proto.DenyReason) {
	if int64(req.Expires) <= now.Unix() {
		return proto.TokenPrivate{}, proto.DenyExpired
	}
	ad := proto.TokenAdditionalData(o.ad[:0], req.KeyID, req.GameID, req.Expires)
	plain, err := o.aead.Open(o.plain[:0], req.TokenNonce[:], req.SealedToken[:], ad)
	if err != nil {
		return proto.TokenPrivate{}, proto.DenyInvalidToken
	}
	priv, _, err := proto.ParseTokenPrivate(plain)
	if err != nil {
		return proto.TokenPrivate{}, proto.DenyInvalidToken
	}
	return priv, 0
}
