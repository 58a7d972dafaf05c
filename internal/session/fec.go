package session

import (
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/reliability"
)

// Forward error correction over the reliable frames, the alternative to
// copies (see copies.go) on lossy links: each packet whose reliable
// frame carries new data is a member of reliability.ParitySender's
// sliding window, and parity frames over the last members go out in
// packets of their own at the rate the measured loss calls for
// (reliability.RedundancyFor); the peer's reliability.ParityReceiver
// rebuilds lost members from them.

// protect gives the reliable frame just written into the packet being
// built its redundancy: a place in the parity window, or copies when the
// frame is small (reliability.CopyLimit) or too large for a parity frame
// to follow it in one packet. Only frames with new data (or
// retransmissions) get any, and only on a lossy link.
func (s *Session) protect(frame []byte, room int) {
	f, _, err := proto.ParseReliableFrame(frame)
	if err != nil || !pushes(f.Data) {
		return // nothing written, or acks only
	}
	red := reliability.RedundancyFor(s.acks.Stats())
	if red.Parity > 0 && len(f.Data) > reliability.CopyLimit && s.fecTx.Fits(len(f.Data), room) {
		s.fecTx.Add(s.acks.NextPacketNumber(), f.Data, s.tickCount, red.Parity)
		return
	}
	if red.Copies > 1 {
		s.copies.noteSent(frame, room, red.Copies)
	}
}

// setRepairWait tells the reliable channel, once a tick, how long a lost
// segment may wait for parity beyond its round trip: about a tick (a
// member waits for the parity frame at the end of the next tick at most)
// and repairJitter, while parity protects new data; none otherwise.
func (s *Session) setRepairWait(now time.Time) {
	tick := now.Sub(s.lastTick)
	s.lastTick = now
	var d time.Duration
	if reliability.RedundancyFor(s.acks.Stats()).Parity > 0 && tick < time.Second {
		d = tick + repairJitter
	}
	s.rel.SetRepairWait(d)
}

// repairJitter is the margin of setRepairWait for a parity frame that
// arrives later than its members did.
const repairJitter = 10 * time.Millisecond

// sendParity sends the parity frames due, each in a packet of its own;
// flush: the end of a no-delay flush, which wants its members covered at
// once.
func (s *Session) sendParity(now time.Time, ticks Ticks, out Output, flush bool) {
	for s.fecTx.ParityDue(s.tickCount, flush) {
		body := s.fecTx.AppendParity(s.scratch[:0], s.acks.NextPacketNumber())
		s.scratch = body
		if len(body) == 0 {
			return
		}
		out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketData, ticks, fillNone, body))
		s.stats.ParityFrames++
	}
}

// parity takes a parity frame of packet pn and feeds the reliable frames
// it rebuilds to the reliable channel.
func (s *Session) parity(now time.Time, pn uint64, f *proto.ParityFrame) {
	if s.fecRx == nil {
		s.fecRx = new(reliability.ParityReceiver)
	}
	s.rebuilt(now, s.fecRx.Parity(pn, f))
}

// rebuilt feeds the reliable frames the parity receiver rebuilt to the
// reliable channel.
func (s *Session) rebuilt(now time.Time, frames [][]byte) {
	for _, d := range frames {
		if s.rel.Input(now, d) != nil {
			s.stats.BadFrames++
			continue
		}
		s.stats.ReliableRebuilt++
	}
}
