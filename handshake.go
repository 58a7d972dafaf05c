package tickwire

import (
	"crypto/subtle"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// handshakeStats counts what the server's stateless handshake did.
type handshakeStats struct {
	Requests   uint64 // connection requests received
	Challenges uint64 // challenges sent
	Responses  uint64 // challenge responses received
	Accepted   uint64 // connections created
	Denied     [proto.DenyShuttingDown + 1]uint64
	BytesIn    uint64 // handshake bytes received (requests and responses)
	BytesOut   uint64 // handshake bytes sent (challenges, denials, accepts)
	Malformed  uint64 // requests and responses that did not parse (dropped unanswered)
}

// denySilently is what an admit function returns to have a request
// dropped without an answer (the server answered it another way).
const denySilently proto.DenyReason = 255

// serverHandshake answers connection requests without keeping any state:
// the token is opened, re-sealed into a cookie bound to the sender's
// address and sent back; only a response that echoes a valid cookie and
// proves the client key creates a connection. Every reply is no larger
// than the datagram it answers.
type serverHandshake struct {
	opener *tokenOpener
	jar    *cookieJar
	stats  handshakeStats
	ch     proto.Challenge // reused: the cookie is written in place
}

func newServerHandshake(key Key, cookieLifetime time.Duration) (*serverHandshake, error) {
	o, err := newTokenOpener(key)
	if err != nil {
		return nil, err
	}
	j, err := newCookieJar(cookieLifetime)
	if err != nil {
		return nil, err
	}
	return &serverHandshake{opener: o, jar: j}, nil
}

// request handles a connection request from addr and appends the reply to
// out (a challenge, or a denial). admit says whether the server could take
// the client now (capacity, duplicate client ids); it is asked before a
// cookie is spent so a full server answers with a 5-byte denial.
func (h *serverHandshake) request(pkt []byte, addr netip.AddrPort, now time.Time, out []byte,
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
	if deny == denySilently {
		return out
	}
	if deny != 0 {
		return h.deny(out, deny)
	}
	h.jar.issue(&h.ch.Cookie, &priv, req.Expires, req.GameID, addr, now)
	h.stats.Challenges++
	h.stats.BytesOut += proto.ChallengeSize
	out, _ = h.ch.Append(out)
	return out
}

// response checks a challenge response from addr and returns the token and
// game id it carries; on failure ok is false and a denial may be appended
// to out.
func (h *serverHandshake) response(pkt []byte, addr netip.AddrPort, now time.Time, out []byte) (priv proto.TokenPrivate, gameID uint64, _ []byte, ok bool) {
	h.stats.Responses++
	h.stats.BytesIn += uint64(len(pkt))
	resp, _, err := proto.ParseChallengeResponse(pkt)
	if err != nil {
		h.stats.Malformed++
		return proto.TokenPrivate{}, 0, out, false
	}
	priv, gameID, deny := h.jar.open(&resp.Cookie, addr, now)
	if deny == 0 && !verifyResponseTag(&priv, pkt) {
		deny = proto.DenyBadCookie
	}
	if deny != 0 {
		return proto.TokenPrivate{}, 0, h.deny(out, deny), false
	}
	return priv, gameID, out, true
}

func (h *serverHandshake) deny(out []byte, r proto.DenyReason) []byte {
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
	aead, err := newAEAD(priv.ClientToServerKey[:])
	if err != nil {
		return false
	}
	var tag [proto.SealOverhead]byte
	responseTag(aead, tag[:0], pkt)
	return subtle.ConstantTimeCompare(tag[:], pkt[proto.PrefixSize+proto.CookieSize:proto.ChallengeResponseSize]) == 1
}
