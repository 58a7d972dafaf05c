package session

import (
	"crypto/cipher"
	"crypto/rand"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// Initiator is the client's side of the handshake: the connection request
// that presents the token, the challenge response that echoes the cookie
// with a proof of the client key under a nonce of the client's choosing,
// the accept that creates the session with keys derived from both sides'
// randoms, and the denials it honours. It does no I/O: the owner sends
// Packet until Accept succeeds. Not safe for concurrent use.
type Initiator struct {
	clientKey, serverKey *[proto.KeySize]byte
	aead                 cipher.AEAD // client->server token key: the response's proof
	request, response    []byte
	serverRandom         [proto.RandomSize]byte
	clientRandom         [proto.RandomSize]byte
}

// NewInitiator prepares the handshake for a token's connection request
// and the keys the token holds (client->server, server->client).
func NewInitiator(req *proto.ConnectionRequest, clientKey, serverKey *[proto.KeySize]byte) (*Initiator, error) {
	aead, err := NewAEAD(clientKey[:])
	if err != nil {
		return nil, err
	}
	b, err := req.Append(make([]byte, 0, proto.ConnectionRequestSize))
	if err != nil {
		return nil, err
	}
	return &Initiator{clientKey: clientKey, serverKey: serverKey, aead: aead, request: b}, nil
}

// Packet is the datagram to send (again) now: the request until a
// challenge arrived, then the response.
func (h *Initiator) Packet() []byte {
	if h.response != nil {
		return h.response
	}
	return h.request
}

// Challenged reports whether a challenge was answered.
func (h *Initiator) Challenged() bool { return h.response != nil }

// Challenge takes the server's challenge and builds the response with a
// fresh client random. A second challenge is ignored.
func (h *Initiator) Challenge(pkt []byte) error {
	if h.response != nil {
		return nil
	}
	ch, _, err := proto.ParseChallenge(pkt)
	if err != nil {
		return err
	}
	r := proto.ChallengeResponse{Cookie: ch.Cookie}
	if _, err := rand.Read(r.ClientRandom[:]); err != nil {
		return err
	}
	resp, err := r.Append(make([]byte, 0, proto.ChallengeResponseSize))
	if err != nil {
		return err
	}
	tag := responseTag(h.aead, nil, &r, resp)
	copy(resp[proto.ResponseTagOffset:], tag)
	h.serverRandom, h.clientRandom = ch.ServerRandom, r.ClientRandom
	h.response = resp
	return nil
}

// Denied reads a denial and says whether to end the handshake on it. A
// sealed denial ends it when it verifies under the token's
// server-to-client key (only the server that opened the token can seal
// one). A plaintext one can come only from a server that could not open
// the token, so it ends the handshake only before a challenge arrived
// and only for the reasons that need no key (unknown key, invalid token,
// another version, shutting down): anyone can forge a plaintext denial,
// and once the server has answered with a challenge it seals its
// denials.
//
// A sealed denial may carry a detail (proto.DenyJoinRefused: the refused
// slot and the game's reason), returned opened.
func (h *Initiator) Denied(pkt []byte) (r proto.DenyReason, honour bool, detail []byte, err error) {
	d, n, err := proto.ParseDenied(pkt)
	if err != nil {
		return 0, false, nil, err
	}
	if d.Sealed {
		aead, err := NewAEAD(h.serverKey[:])
		if err != nil {
			return d.Reason, false, nil, err
		}
		nonce := d.Nonce()
		detail, err := aead.Open(nil, nonce[:], pkt[proto.DeniedTagOffset:n], pkt[:proto.DeniedTagOffset])
		if err != nil {
			return d.Reason, false, nil, nil
		}
		return d.Reason, true, detail, nil
	}
	if h.Challenged() {
		return d.Reason, false, nil, nil
	}
	switch d.Reason {
	case proto.DenyUnknownKey, proto.DenyInvalidToken, proto.DenyVersion, proto.DenyShuttingDown:
		return d.Reason, true, nil, nil
	}
	return d.Reason, false, nil, nil
}

// Welcome is what the server's accept gives a client.
type Welcome struct {
	Session *Session
	Body    proto.AcceptBody
	Tick    uint32 // the server's tick in the accept's header
}

// Accept opens the server's accept packet and creates the session it
// announces. cfg's ID, MaxPacket, keys and heartbeat are set from the
// accept and the token: the server's values win. cfg.Timeout, if longer
// than the accept's heartbeat, is the session's timeout; otherwise the
// accept's is. On failure drop says why the packet is dropped.
func (h *Initiator) Accept(pkt []byte, now time.Time, cfg Config) (Welcome, DropReason, bool) {
	hdr, _, err := proto.ParseHeader(pkt)
	if err != nil || !hdr.Sealed || hdr.Type != proto.PacketAccept {
		return Welcome{}, DropMalformed, false
	}
	if h.response == nil {
		return Welcome{}, DropUnexpected, false
	}
	c2s, s2c := SessionKeys(h.clientKey, h.serverKey, &h.serverRandom, &h.clientRandom, hdr.ConnID)
	rx, err := newPacketCipher(&s2c)
	if err != nil {
		return Welcome{}, DropAuth, false
	}
	// The accept is the session's first packet from the server; its
	// number is expanded against an empty window.
	pn := uint64(hdr.Seq)
	payload, err := rx.open(pkt, pn)
	if err != nil {
		return Welcome{}, DropAuth, false
	}
	body, _, err := proto.ParseAcceptBody(payload)
	if err != nil || body.TickRate == 0 || int(body.MaxPacket) < MinPacketSize || int(body.MaxPacket) > proto.MaxPacketSizeLimit ||
		body.HeartbeatMs == 0 || body.TimeoutMs <= body.HeartbeatMs {
		return Welcome{}, DropMalformed, false
	}
	cfg.ID, cfg.MaxPacket = hdr.ConnID, int(body.MaxPacket)
	cfg.TxKey, cfg.RxKey = &c2s, &s2c
	cfg.Heartbeat = time.Duration(body.HeartbeatMs) * time.Millisecond
	if cfg.Timeout <= cfg.Heartbeat {
		// The client's own timeout, if it set one past the server's
		// heartbeat, wins; else it follows the server's.
		cfg.Timeout = time.Duration(body.TimeoutMs) * time.Millisecond
	}
	s, err := New(cfg, now)
	if err != nil {
		return Welcome{}, DropMalformed, false
	}
	if got, fresh := s.acks.ExpandSeq(hdr.Seq); !fresh || got != pn {
		return Welcome{}, DropReplay, false
	}
	s.acks.OnReceive(now, &hdr, pn, len(pkt), 0)
	keyLog().Session(hdr.ConnID, &c2s, &s2c) // the key log, when TICKWIRE_KEYLOG is set
	return Welcome{Session: s, Body: body, Tick: hdr.Tick}, 0, true
}

// MinPacketSize is the smallest packet size a session works with: room for
// the header, the AEAD tag and a useful payload.
const MinPacketSize = 256
