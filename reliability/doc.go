// Package reliability tracks which packets arrived and carries messages
// that must: per-connection packet acks with RTT, jitter and loss
// estimates, delivered/lost notifications, the reliable ordered channel on
// kcp-go's ARQ core, and unreliable and sequenced channels.
//
// It performs no I/O, starts no goroutines and reads no clock: callers
// pass now in and take bytes out. (kcp-go's core reads the process clock
// itself; see Reliable.) Everything is per connection and not safe for
// concurrent use.
//
// # Where it sits
//
//	udp (datagrams) → proto (header, frames) → reliability → deltacomp / interest / sim
//
// The pieces:
//
//   - PacketAcks: sequence numbers, acks and ack bits for every session
//     header (proto.Header Seq/Ack/AckBits), 16-bit → 64-bit packet number
//     reconstruction for AEAD nonces, a replay window, RTT/jitter/loss, and
//     Delivered/Lost notifications to an AckListener (deltacomp promotes
//     baselines on Delivered, interest re-prioritises on Lost).
//   - Reliable: reliable ordered byte messages on kcp.NewKCP; its segments
//     travel in proto.ReliableFrames inside ordinary packets.
//   - RedundancyFor: how new reliable data is protected at the loss the
//     acks measured (nothing on a clean path); ParitySender and
//     ParityReceiver: proto.ParityFrames over a sliding window of the
//     packets that carry it, solved together by the receiver.
//   - Sequencer / SequenceFilter: unreliable-sequenced proto.MessageFrames.
//   - ReplayWindow, ExpandSeq, SeqNewer: the small parts, usable alone.
//
// # Driving a connection from its tick loop
//
// Per received datagram, in the root package's order (session.go):
//
//	h, n, err := proto.ParseHeader(dgram)                 // drop and count on error; route by h.ConnID
//	pn, fresh := acks.ExpandSeq(h.Seq)                    // drop and count if !fresh (replay/too old)
//	payload, err := open(nonce(pn), dgram[n:], dgram[:n]) // AEAD, header as AD; drop and count on error
//	walk the frames (proto.FrameReader) to check them     // one malformed: drop and count the whole datagram
//	walk them again; note an AckOnlyFrame's delay;
//	    ReliableFrame → rel.Input(now, f.Data)            // count and skip the frame on error
//	    MessageFrame  → deliver if filter.AcceptFrame(&f) // a stale sequenced message is dropped
//	acks.OnReceive(now, &h, pn, len(dgram), ackDelay)     // marks pn received; Delivered/Lost fire here
//	for { msg, ok = rel.Receive(msg[:0]); if !ok { break }; parse msg as one proto frame }
//
// ExpandSeq only looks: the replay check comes before the AEAD open, so a
// repeat costs no decryption, but pn enters the replay window in
// OnReceive, once the datagram is authenticated and well formed, so a
// forged or malformed datagram cannot use up a packet number. A datagram
// dropped before OnReceive is neither acknowledged nor counted received.
// (proto.ConnIDOf reads the connection id alone, for routing before
// parsing the header.)
//
// Per outgoing datagram (once per tick, plus extra ones while reliable
// data is pending or when acks.AcksPending() nears AckBitsLen):
//
//	rel.Update(now)                                   // once per tick, before the first packet (rel.Flush for a no-delay send)
//	payload, _ = rel.AppendFrame(payload, room)       // room = MaxPacketSize − HeaderSize − SealOverhead − used
//	payload = other frames (inputs, snapshot deltas, sequenced messages via seq.Stamp) ...
//	h := proto.Header{Type: proto.PacketData, ConnID: id, Tick: ...}
//	pn := acks.Send(now, &h, proto.HeaderSize+len(payload)+proto.SealOverhead)
//	dgram = h.Append(dgram); seal payload with nonce(pn)
//
// Send fills Seq, Ack and AckBits and returns a new packet number on every
// call: never seal two datagrams with one pn. Tell the reliable channel's
// peer KCP nothing else; KCP's own acks ride in the ReliableFrames.
//
// # Budget and MTU arithmetic
//
// A datagram is HeaderSize (26) + payload + SealOverhead (16) ≤
// MaxPacketSize (default 1200), so the payload room is 1158 bytes. KCP's
// MTU is the largest m with 1 + VarintLen(m) + m ≤ room, i.e. one KCP
// output chunk in one ReliableFrame fills a packet: m = 1155 (MSS 1131 of
// data per segment) at 1200; see KCPMTU. AppendFrame takes whole segments
// only, acks first, so a full-size data segment needs an otherwise empty
// packet (NextFrameLen tells whether it fits what is left).
//
// # Time
//
// now is any monotonic time.Time (time.Now in production, virtual inside
// testing/synctest). PacketAcks stores durations since the first now it
// saw. kcp-go's core reads time.Since(a time taken at package init) in
// Input, Update and flush; inside a synctest bubble time.Since reads the
// bubble's virtual clock, so KCP's timers follow virtual time there
// (TestReliableVirtualClock proves it). A fake clock that is not time.Now
// would freeze them.
package reliability
