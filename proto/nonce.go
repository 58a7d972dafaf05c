package proto

// AEAD nonces are NonceSize bytes: a four-byte kind, then a counter that is
// unique per key within that kind. Each direction of a session has its own
// key, so the two directions never share a nonce space.
const (
	// NonceSession seals session packets; the counter is the sender's full
	// 64-bit packet number (the header carries its low 16 bits). The keys
	// are the session keys derived afresh for every handshake
	// (docs/PROTOCOL.md, "Session keys"), so packet numbers that restart
	// at 1 in every session never repeat a nonce under one key.
	NonceSession uint32 = 0
	// NonceResponse authenticates a challenge response under the token's
	// client-to-server key; the counter is the first eight bytes,
	// little-endian, of the response's ClientRandom, which the client
	// chooses (ChallengeResponse.Nonce).
	NonceResponse uint32 = 1
	// NonceDenied authenticates a sealed denial under the token's
	// server-to-client key; the counter is the denial's Counter, random
	// per denial (Denied.Nonce).
	NonceDenied uint32 = 2
)

// Nonce builds the nonce for kind and counter.
func Nonce(kind uint32, counter uint64) [NonceSize]byte {
	var n [NonceSize]byte
	le.PutUint32(n[:], kind)
	le.PutUint64(n[4:], counter)
	return n
}
