package reliability

import "github.com/tickwire/tickwire/proto"

// Channels: proto.MessageFrame.Channel is a byte, so each side keeps a
// small fixed table per channel.
const numChannels = 256

// Sequencer assigns send-side sequence numbers for unreliable-sequenced
// messages, one 16-bit counter per channel. The zero value is ready.
// Not safe for concurrent use.
type Sequencer struct {
	next [numChannels]uint16
}

// Next returns the sequence number for the next message on channel.
func (s *Sequencer) Next(channel uint8) uint16 {
	seq := s.next[channel]
	s.next[channel]++
	return seq
}

// Stamp marks f as sequenced with the next number of its channel. To
// postmark a message with a tick, set f.Postmarked and f.Tick; that is
// independent of sequencing and works on every kind of channel.
func (s *Sequencer) Stamp(f *proto.MessageFrame) {
	f.Sequenced = true
	f.Seq = s.Next(f.Channel)
}

// SequenceFilter is the receive side of unreliable-sequenced channels: it
// lets a message through only if it is newer than every message already
// let through on its channel, so an older message is never delivered after
// a newer one (and duplicates are dropped). "Newer" is circular in 16 bits:
// up to 32767 ahead. The zero value has seen nothing.
// Not safe for concurrent use.
type SequenceFilter struct {
	newest [numChannels]uint16
	seen   [numChannels / 64]uint64
	drops  uint64
}

// Accept reports whether a message with seq on channel may be delivered,
// and if so records it as the channel's newest.
func (f *SequenceFilter) Accept(channel uint8, seq uint16) bool {
	w, b := channel/64, uint64(1)<<(channel%64)
	if f.seen[w]&b != 0 && !SeqNewer(seq, f.newest[channel]) {
		f.drops++
		return false
	}
	f.seen[w] |= b
	f.newest[channel] = seq
	return true
}

// AcceptFrame applies Accept to a sequenced frame; frames that are not
// sequenced always pass (plain unreliable messages: they may arrive late,
// twice or not at all).
func (f *SequenceFilter) AcceptFrame(m *proto.MessageFrame) bool {
	if !m.Sequenced {
		return true
	}
	return f.Accept(m.Channel, m.Seq)
}

// Dropped returns how many messages the filter rejected.
func (f *SequenceFilter) Dropped() uint64 { return f.drops }
