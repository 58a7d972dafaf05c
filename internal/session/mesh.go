package session

import (
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/reliability"
)

// MeshLink seals and opens the peer packets (type 9) of one pair of the
// commits mode's mesh: a session header naming the sender's connection
// id, the sender's live tick, and frames sealed with the pair's key for
// that direction (nonce kind 0 with the packet's 64-bit number, which
// never repeats under one key: the server derives fresh keys for every
// introduction). Peer packets are unreliable and unacknowledged: the
// header's ack fields are zero, and a replay window drops duplicates and
// packets older than the window. Not safe for concurrent use.
type MeshLink struct {
	id     uint32 // our connection id, in the header of what we send
	tx, rx *packetCipher
	next   uint64 // number of our next packet
	replay reliability.ReplayWindow
}

// NewMeshLink returns the link whose packets we send as connection self,
// sealed with send, and whose received packets, which peer sends as its
// connection, open with recv. The keys go to the key log when there is
// one (keylog.FromEnv).
func NewMeshLink(self, peer uint32, send, recv *[proto.KeySize]byte) (*MeshLink, error) {
	tx, err := newPacketCipher(send)
	if err != nil {
		return nil, err
	}
	rx, err := newPacketCipher(recv)
	if err != nil {
		return nil, err
	}
	keyLog().MeshLink(self, send, peer, recv)
	return &MeshLink{id: self, tx: tx, rx: rx, next: 1}, nil
}

// Append appends a sealed peer packet carrying payload (frames) and
// tick. out needs proto.HeaderSize + len(payload) + proto.SealOverhead
// spare capacity to stay allocation-free.
func (l *MeshLink) Append(out []byte, tick uint32, payload []byte) []byte {
	pn := l.next
	l.next++
	start := len(out)
	h := proto.Header{Type: proto.PacketMesh, Sealed: true, ConnID: l.id, Seq: uint16(pn), Tick: tick, InterpFrom: tick, InterpTo: tick}
	out, _ = h.Append(out)
	out = append(out, payload...)
	return append(out[:start], l.tx.seal(out[start:], pn)...)
}

// Open authenticates and decrypts a received peer packet whose header h
// was parsed from pkt (ParseHeader). The payload aliases pkt. A packet
// that fails authentication or repeats one already opened is refused
// with the reason.
func (l *MeshLink) Open(pkt []byte, h *proto.Header) (payload []byte, drop DropReason, ok bool) {
	if h.Type != proto.PacketMesh {
		return nil, DropUnexpected, false
	}
	if !h.Sealed {
		return nil, DropUnsealed, false
	}
	pn := reliability.ExpandSeq(l.replay.Largest(), h.Seq)
	if !l.replay.Fresh(pn) {
		return nil, DropReplay, false
	}
	payload, err := l.rx.open(pkt, pn)
	if err != nil {
		return nil, DropAuth, false
	}
	l.replay.Mark(pn)
	return payload, 0, true
}
