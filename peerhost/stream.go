package peerhost

import (
	"errors"
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// The peer message stream: reliable messages between a player of a
// peer-hosted game and whichever peer hosts it, delivered exactly once
// and in order across host migrations (docs/MIGRATION.md). Each player
// numbers its messages (1, 2, ...) and keeps them until the host says
// they ran and its warm standby holds that; the host numbers its own to
// each player and keeps them until the player says it has them. The host
// copies both facts, and its own messages, to the standby on the
// standby's reliable channel, in order with the standby steps; it
// releases a message to a player, and acknowledges a player's, only
// once the standby's ack covers the tick the copy went out before. So a
// successor holds every message a player may lack and knows every
// message that ran: after a migration the players send their unconfirmed
// messages again (the successor drops what ran) and the successor sends
// its unconfirmed ones (the player drops what it has).

// streamMsg is one message of a stream.
type streamMsg struct {
	seq     uint32
	channel uint8
	data    []byte
	release uint32 // host: the standby tick that must be acked before it goes out
	sent    bool
}

// pendingRun is a run of a player's messages the standby does not hold yet.
type pendingRun struct{ through, tick uint32 }

// playerStream is the host's (or its standby's) state of one player's
// stream.
type playerStream struct {
	inNext   uint32 // the next message expected from the player
	durable  uint32 // the player's messages run and held by the standby
	acked    uint32 // the last durable told the player
	pending  []pendingRun
	outSeq   uint32      // the last number given to a message to the player
	out      []streamMsg // to the player, not yet acknowledged by it
	outBytes int         // their data
	// A host that took the game over without a copy of the stream (a
	// cold promotion) knows neither number: it takes the player's next
	// from the first message it gets (inUnknown), and its own from the
	// player's first ack (outUnknown: its messages wait, numbered from
	// 1, and are renumbered past what the player received).
	inUnknown, outUnknown bool
}

func newPlayerStream() *playerStream { return &playerStream{inNext: 1} }

// clone copies a standby's stream for a promoted host.
func (s *playerStream) clone() *playerStream {
	c := &playerStream{inNext: s.inNext, durable: s.inNext - 1, outSeq: s.outSeq, outBytes: s.outBytes}
	for _, m := range s.out {
		m.data = slices.Clone(m.data)
		m.release, m.sent = 0, false
		c.out = append(c.out, m)
	}
	return c
}

// based numbers the messages of a stream whose numbering was unknown
// (outUnknown) past through, the last the player received.
func (s *playerStream) based(through uint32) {
	for i := range s.out {
		s.out[i].seq += through
	}
	s.outSeq += through
	s.outUnknown = false
}

// received trims the messages the player has received through seq.
func (s *playerStream) received(through uint32) {
	s.out = slices.DeleteFunc(s.out, func(m streamMsg) bool {
		done := int32(m.seq-through) <= 0
		if done {
			s.outBytes -= len(m.data)
		}
		return done
	})
}

// standbyCopy applies a host's copy frame to a standby's stream.
func (s *playerStream) standbyCopy(f *proto.PeerMessageFrame) {
	if int32(f.Seq-s.outSeq) <= 0 {
		return // held already
	}
	s.outSeq = f.Seq
	s.out = append(s.out, streamMsg{seq: f.Seq, channel: f.Channel, data: slices.Clone(f.Data)})
	s.outBytes += len(f.Data)
}

// standbyAck applies a host's ack frame to a standby's stream.
func (s *playerStream) standbyAck(f *proto.PeerAckFrame) {
	switch f.Kind {
	case proto.PeerAckStandbyRun:
		if int32(f.Through+1-s.inNext) > 0 {
			s.inNext = f.Through + 1
		}
	case proto.PeerAckStandbyReceived:
		s.received(f.Through)
		if int32(f.Through-s.outSeq) > 0 {
			s.outSeq = f.Through // numbered that far: the player has them all
		}
	}
}

// StreamStats count a peer message stream's traffic at one end.
type StreamStats struct {
	Sent, Received uint64 // messages
	Duplicates     uint64 // received again after a migration, dropped
	Gaps           uint64 // received out of order (never expected), dropped
	Resent         uint64 // sent again to a new host or player after a migration
}

// errStreamGap is a stream message that skipped a number.
var errStreamGap = errors.New("peerhost: peer message out of sequence")

// appendPeerMessage encodes f.
func appendPeerMessage(b []byte, f proto.PeerMessageFrame) []byte {
	nb, err := f.Append(b)
	if err != nil {
		return b
	}
	return nb
}

// appendPeerAck encodes a peer ack.
func appendPeerAck(b []byte, player uint16, kind proto.PeerAckKind, through uint32) []byte {
	f := proto.PeerAckFrame{Player: player, Kind: kind, Through: through}
	nb, err := f.Append(b)
	if err != nil {
		return b
	}
	return nb
}
