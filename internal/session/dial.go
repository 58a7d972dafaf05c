package session

import (
	"crypto/cipher"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// Initiator is the client's side of the handshake: the connection request
// that presents the token, the challenge response that echoes the cookie
// with a proof of the client key, and the accept that creates the session.
// It does no I/O: the owner sends Packet until Accept succeeds. Not safe
// for concurrent use.
type Initiator struct {
	clientKey, serverKey *[proto.KeySize]byte
	aead                 cipher.AEAD
	request, response    []byte
}

// NewInitiator prepares the handshake for a token's connection request
// and the session keys the token holds (client->server, server->client).
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

// Challenge takes the server's challenge and builds the response. A
// second challenge is ignored.
func (h *Initiator) Challenge(pkt []byte) error {
	if h.response != nil {
		return nil
	}
	ch, _, err := proto.ParseChallenge(pkt)
	if err != nil {
		return err
	}
	r := proto.ChallengeResponse{Cookie: ch.Cookie}
	resp, err := r.Append(make([]byte, 0, proto.ChallengeResponseSize))
	if err != nil {
		return err
	}
	tag := responseTag(h.aead, nil, resp)
	copy(resp[proto.ResponseTagOffset:], tag)
	h.response = resp
	return nil
}

// Welcome is what the server's accept gives a client.
type Welcome struct {
	Session *Session
	Body    proto.AcceptBody
	Tick    uint32 // the server's tick in the accept's header
}

// Accept opens the server's accept packet and creates the session it
// announces. cfg's ID, MaxPacket, keys and timers are set from the accept
// and the token: the server's values win. On failure drop says why the
// packet is dropped.
func (h *Initiator) Accept(pkt []byte, now time.Time, cfg Config) (Welcome, DropReason, bool) {
	hdr, _, err := proto.ParseHeader(pkt)
	if err != nil || !hdr.Sealed || hdr.Type != proto.PacketAccept {
		return Welcome{}, DropMalformed, false
	}
	rx, err := newPacketCipher(h.serverKey)
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
	cfg.TxKey, cfg.RxKey = h.clientKey, h.serverKey
	cfg.Heartbeat = time.Duration(body.HeartbeatMs) * time.Millisecond
	cfg.Timeout = time.Duration(body.TimeoutMs) * time.Millisecond
	s, err := New(cfg, now)
	if err != nil {
		return Welcome{}, DropMalformed, false
	}
	if got, fresh := s.acks.ExpandSeq(hdr.Seq); !fresh || got != pn {
		return Welcome{}, DropReplay, false
	}
	s.acks.OnReceive(now, &hdr, pn, len(pkt), 0)
	return Welcome{Session: s, Body: body, Tick: hdr.Tick}, 0, true
}

// MinPacketSize is the smallest packet size a session works with: room for
// the header, the AEAD tag and a useful payload.
const MinPacketSize = 256
