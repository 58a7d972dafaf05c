package session

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"

	"github.com/tickwire/tickwire/proto"
)

// packetCipher seals or opens the session packets of one direction with
// AES-256-GCM. The whole session header is the additional data and the
// nonce is proto.NonceSession with the packet's full 64-bit number, which
// never repeats within a session. Not safe for concurrent use.
type packetCipher struct {
	aead  cipher.AEAD
	nonce [proto.NonceSize]byte // a field: it escapes through cipher.AEAD
}

var errOpen = errors.New("tickwire: packet failed authentication")

func newPacketCipher(key *[proto.KeySize]byte) (*packetCipher, error) {
	aead, err := NewAEAD(key[:])
	if err != nil {
		return nil, err
	}
	c := &packetCipher{aead: aead}
	binary.LittleEndian.PutUint32(c.nonce[:4], proto.NonceSession)
	return c, nil
}

// seal encrypts in place: pkt holds the header (with the sealed flag set)
// followed by the plaintext payload; the result is the header, ciphertext
// and tag. pkt needs proto.SealOverhead bytes of spare capacity to stay
// allocation-free.
func (c *packetCipher) seal(pkt []byte, number uint64) []byte {
	binary.LittleEndian.PutUint64(c.nonce[4:], number)
	hdr := pkt[:proto.HeaderSize]
	return c.aead.Seal(hdr, c.nonce[:], pkt[proto.HeaderSize:], hdr)
}

// open decrypts pkt's payload in place and returns the plaintext, which
// aliases pkt.
func (c *packetCipher) open(pkt []byte, number uint64) ([]byte, error) {
	if len(pkt) < proto.HeaderSize+proto.SealOverhead {
		return nil, errOpen
	}
	binary.LittleEndian.PutUint64(c.nonce[4:], number)
	p := pkt[proto.HeaderSize:]
	out, err := c.aead.Open(p[:0], c.nonce[:], p, pkt[:proto.HeaderSize])
	if err != nil {
		return nil, errOpen
	}
	return out, nil
}
