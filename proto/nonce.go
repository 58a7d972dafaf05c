package proto

// AEAD nonces are NonceSize bytes: a four-byte kind, then a counter that is
// unique per key within that kind. Each direction of a session has its own
// key, so the two directions never share a nonce space.
const (
	// NonceSession seals session packets; the counter is the sender's full
	// 64-bit packet number (the header carries its low 16 bits).
	NonceSession uint32 = 0
	// NonceResponse authenticates a challenge response; the counter is the
	// cookie's first eight bytes, which the server makes unique per cookie.
	NonceResponse uint32 = 1
)

// Nonce builds the nonce for kind and counter.
func Nonce(kind uint32, counter uint64) [NonceSize]byte {
	var n [NonceSize]byte
	le.PutUint32(n[:], kind)
	le.PutUint64(n[4:], counter)
	return n
}
