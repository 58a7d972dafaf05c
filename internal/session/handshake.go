package session

import (
	"crypto/subtle"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// HandshakeStats counts what the server's stateless handshake did.
type HandshakeStats struct {
	Requests   uint64 // connection requests received
	Challenges uint64 // challenges sent
	Responses  uint64 // challenge responses received
	Denied     [proto.DenyUnknownKey + 1]uint64
	BytesIn    uint64 // handshake bytes received (requests and responses)
	BytesOut   uint64 // handshake bytes sent (challenges, denials, accepts)
	Malformed  uint64 // requests and responses that did not parse (dropped unanswered)
}

// DenySilently is what an admit function returns to have a request
// dropped without an answer (the server answered it another way).
const DenySilently proto.DenyReason = 255

// Responder answers connection requests without keeping any state:
// the token is opened, re-sealed into a cookie bound to the sender's
// address and sent back; only a response that echoes a valid cookie and
// proves the client key creates a connection. Every reply is no larger
// than the datagram it answers.
//
// Not safe for concurrent use.
type Responder struct {
	opener *tokenOpener
	jar    *cookieJar
	stats  HandshakeStats
	ch     proto.Challenge // reused: the cookie is written in place
}

// NewResponder returns the handshake of a server whose tokens are sealed
// with key; its cookies live cookieLifetime at most.
func NewResponder(key *[proto.KeySize]byte, cookieLifetime time.Duration) (*Responder, error) {
	o, err := newTokenOpener(key)
	if err != nil {
		return nil, err
	}
	j, err := newCookieJar(cookieLifetime)
	if err != nil {
		return nil, err
	}
	return &Responder{opener: o, jar: j}, nil
}

// Stats returns the handshake's counters.
func (h *Responder) Stats() HandshakeStats { return h.stats }

// Request handles a connection request from addr and appends the reply to
// out (a challenge, or a denial). admit says whether the server could take
// the client now (capacity, duplicate client ids); it is asked before a
// cookie is spent so a full server answers with a 5-byte denial.
func (h *Responder) Request(pkt []byte, addr netip.AddrPort, now time.Time, out []byte,
	admit func(priv *proto.TokenPrivate, gameID uint64) proto.DenyReason) []byte {
	h.stats.Requests++
	h.stats.BytesIn += uint64(len(pkt))
	req, _, err := proto.ParseConnectionRequest(pkt)
	if err != nil {
		h.stats.Malformed++
		return out // too short to answer without amplification
	}
	priv, deny := h.opener.open(&req, now)
	if deny == 0 {
		deny = admit(&priv, req.GameID)
	}
	if deny == DenySilently {
		return out
	}
	if deny != 0 {
		return h.Deny(out, deny)
	}
	d := cookieData{priv: priv, tokenExpires: req.Expires, gameID: req.GameID, tokenNonce: req.TokenNonce, serverRandom: h.ch.ServerRandom}
	h.jar.issue(&h.ch.Cookie, &d, addr, now)
	h.stats.Challenges++
	h.stats.BytesOut += proto.ChallengeSize
	out, _ = h.ch.Append(out)
	return out
}

// Response checks a challenge response from addr and returns the token and
// game id it carries; on failure ok is false and a denial may be appended
// to out.
func (h *Responder) Response(pkt []byte, addr netip.AddrPort, now time.Time, out []byte) (priv proto.TokenPrivate, gameID uint64, _ []byte, ok bool) {
	h.stats.Responses++
	h.stats.BytesIn += uint64(len(pkt))
	resp, _, err := proto.ParseChallengeResponse(pkt)
	if err != nil {
		h.stats.Malformed++
		return proto.TokenPrivate{}, 0, out, false
	}
	d, deny := h.jar.open(&resp.Cookie, addr, now)
	if deny == 0 && !verifyResponseTag(&d.priv, pkt) {
		deny = proto.DenyBadCookie
	}
	if deny != 0 {
		return proto.TokenPrivate{}, 0, h.Deny(out, deny), false
	}
	return d.priv, d.gameID, out, true
}

// Deny appends a denial for reason r to out.
func (h *Responder) Deny(out []byte, r proto.DenyReason) []byte {
	h.stats.Denied[r]++
	h.stats.BytesOut += proto.DeniedSize
	d := proto.Denied{Reason: r}
	out, _ = d.Append(out)
	return out
}

// verifyResponseTag checks the response's proof that the client holds the
// client->server key. It builds a cipher for that key (a few allocations,
// paid only by clients that already proved their address).
func verifyResponseTag(priv *proto.TokenPrivate, pkt []byte) bool {
	aead, err := NewAEAD(priv.ClientToServerKey[:])
	if err != nil {
		return false
	}
	var tag [proto.SealOverhead]byte
	responseTag(aead, tag[:0], pkt)
	return subtle.ConstantTimeCompare(tag[:], pkt[proto.ResponseTagOffset:proto.ChallengeResponseSize]) == 1
}
