package tickwire

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/reliability"
)

// Delivery is how a message travels.
type Delivery uint8

const (
	// Unreliable messages may be lost, duplicated or arrive out of order;
	// they cost nothing when the network is bad.
	Unreliable Delivery = iota
	// Sequenced messages may be lost, but an older message on a channel is
	// never delivered after a newer one (state updates, voice).
	Sequenced
	// Reliable messages arrive exactly once and in the order sent, on
	// every channel together (chat, inventory, join data).
	Reliable
)

func (d Delivery) String() string {
	switch d {
	case Unreliable:
		return "unreliable"
	case Sequenced:
		return "sequenced"
	case Reliable:
		return "reliable"
	}
	return "invalid"
}

// Message is an application message received on a connection. Data is
// valid only during the callback that receives it; copy what you keep.
type Message struct {
	Channel  uint8
	Delivery Delivery
	// Postmarked messages name the tick at which they take effect.
	Postmarked bool
	Tick       uint32
	Data       []byte
}

// Errors from sending.
var (
	// ErrMessageTooLarge: the message exceeds what its delivery allows
	// (one packet for unreliable messages, reliability.DefaultMaxMessageSize
	// for reliable ones).
	ErrMessageTooLarge = errors.New("tickwire: message too large")
	// ErrQueueFull: the connection's send queue is full; the peer is not
	// keeping up. Retry later or drop.
	ErrQueueFull = errors.New("tickwire: send queue full")
	// ErrBadDelivery: Delivery is not one of the defined values.
	ErrBadDelivery = errors.New("tickwire: invalid delivery")
	// ErrNotConnected: the connection is closed.
	ErrNotConnected = errors.New("tickwire: not connected")
)

// maxUnreliableQueue bounds the bytes of unreliable frames waiting for the
// next packet; beyond it Send fails with ErrQueueFull.
const maxUnreliableQueue = 64 << 10

// maxPacketsPerTick bounds the data packets one connection sends per tick:
// enough to drain 1 MiB of reliable data in about two seconds at 60 Hz
// without letting one connection monopolise the socket.
const maxPacketsPerTick = 16

// frameHooks lets the layer above a session (the tick engine) read and
// write its own frames in the session's packets. All methods run on the
// owning loop goroutine.
type frameHooks interface {
	// frame receives a frame the session does not handle itself (input,
	// snapshot, checksum, control...) from the packet numbered pn.
	frame(t proto.FrameType, f []byte, h proto.Header)
	// appendFrames adds frames to the packet that will be numbered pn,
	// within room bytes; it reports whether it wrote anything.
	appendFrames(b []byte, room int, pn uint64) []byte
	// delivered and lost report the fate of sent packets.
	delivered(pn uint64)
	lost(pn uint64)
}

// sessionStats counts one session's traffic.
type sessionStats struct {
	PacketsIn, PacketsOut uint64
	BytesIn, BytesOut     uint64
	MessagesIn            uint64
	MessagesOut           uint64
	BadFrames             uint64 // frames dropped as malformed
	UnreliableDropped     uint64 // queued unreliable messages never sent
	ReliableRepeats       uint64 // reliable frames sent again as a copy (reliableCopies)
}

// session is the part of a connection both ends share: packet numbers and
// acks, AEAD per direction, the reliable channel, sequenced channels and
// the unreliable send queue. Owned by one loop goroutine.
type session struct {
	id        uint32
	maxPacket int
	tx, rx    *packetCipher
	acks      *reliability.PacketAcks
	rel       *reliability.Reliable
	seq       reliability.Sequencer
	filter    reliability.SequenceFilter
	hooks     frameHooks

	unrel    []byte // encoded unreliable message frames, oldest first
	scratch  []byte // encoding space for reliable messages
	relMsg   []byte // receive space for reliable messages
	inMsg    Message
	lastRecv time.Time
	lastSend time.Time
	// ackOwed: a packet with more than acks arrived since we last sent
	// one. Ack-only packets and keep-alives are acknowledged by the next
	// packet that goes anyway, so two idle peers do not ping-pong acks.
	ackOwed bool
	// relHist holds the reliable frames with new data of the last ticks
	// (relHist[relCur] collects this tick's) and how many more times each
	// goes out. At every tick the ones still owed a copy are gathered in
	// relCopy and go out once more, in the first packet if they fit, else
	// in packets of their own (see reliableCopies).
	relHist  [maxCopies - 1]relRepeat
	relCur   int
	relCopy  []byte
	relMaxSN uint32 // newest KCP data segment repeated
	relSent  bool
	stats    sessionStats
}

func newSession(id uint32, maxPacket int, txKey, rxKey *[proto.KeySize]byte, now time.Time) (*session, error) {
	tx, err := newPacketCipher(txKey)
	if err != nil {
		return nil, err
	}
	rx, err := newPacketCipher(rxKey)
	if err != nil {
		return nil, err
	}
	rel, err := reliability.NewReliable(id, reliability.ReliableConfig{MaxPacketSize: maxPacket})
	if err != nil {
		return nil, err
	}
	s := &session{
		id:        id,
		maxPacket: maxPacket,
		tx:        tx,
		rx:        rx,
		rel:       rel,
		unrel:     make([]byte, 0, 4096),
		scratch:   make([]byte, 0, 4096),
		relMsg:    make([]byte, 0, 4096),
		lastRecv:  now,
		lastSend:  now,
	}
	s.acks = reliability.NewPacketAcks(reliability.AckConfig{}, s)
	return s, nil
}

// Delivered and Lost make the session the acks' listener.
func (s *session) Delivered(pn uint64) {
	if s.hooks != nil {
		s.hooks.delivered(pn)
	}
}

func (s *session) Lost(pn uint64) {
	if s.hooks != nil {
		s.hooks.lost(pn)
	}
}

// payloadRoom is the payload bytes one packet holds.
func (s *session) payloadRoom() int {
	return s.maxPacket - proto.HeaderSize - proto.SealOverhead
}

// send queues one message.
func (s *session) send(d Delivery, channel uint8, postmarked bool, tick uint32, data []byte) error {
	f := proto.MessageFrame{Channel: channel, Postmarked: postmarked, Tick: tick, Data: data}
	switch d {
	case Reliable:
		if len(data) > reliability.DefaultMaxMessageSize-16 {
			return ErrMessageTooLarge
		}
		b, err := f.Append(s.scratch[:0])
		if err != nil {
			return ErrMessageTooLarge
		}
		s.scratch = b
		switch err := s.rel.Send(b); {
		case errors.Is(err, reliability.ErrQueueFull):
			return ErrQueueFull
		case err != nil:
			return ErrMessageTooLarge
		}
	case Unreliable, Sequenced:
		if f.Len() > s.payloadRoom() {
			return ErrMessageTooLarge
		}
		if len(s.unrel)+f.Len() > maxUnreliableQueue {
			return ErrQueueFull
		}
		if d == Sequenced {
			s.seq.Stamp(&f)
		}
		s.unrel, _ = f.Append(s.unrel)
	default:
		return ErrBadDelivery
	}
	s.stats.MessagesOut++
	return nil
}

// dropReason values returned by open; 0 means the packet is good.
func (s *session) open(pkt []byte, h *proto.Header) (pn uint64, payload []byte, drop int) {
	pn, fresh := s.acks.ExpandSeq(h.Seq)
	if !fresh {
		return 0, nil, DropReplay
	}
	payload, err := s.rx.open(pkt, pn)
	if err != nil {
		return 0, nil, DropAuth
	}
	return pn, payload, -1
}

// receive processes the frames of an authenticated data packet and
// delivers its messages. It returns an error, having processed nothing, if
// the payload is malformed.
func (s *session) receive(now time.Time, h *proto.Header, pn uint64, size int, payload []byte, sink messageSink) error {
	r := proto.FrameReader{Payload: payload}
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		return err
	}
	s.lastRecv = now
	s.stats.PacketsIn++
	s.stats.BytesIn += uint64(size)
	var ackDelay time.Duration
	r = proto.FrameReader{Payload: payload}
	for r.Next() {
		if r.Type() != proto.FrameAckOnly {
			s.ackOwed = true
		}
		switch r.Type() {
		case proto.FrameAckOnly:
			f, _, err := proto.ParseAckOnlyFrame(r.Frame())
			if err == nil {
				ackDelay = time.Duration(f.DelayMicros) * time.Microsecond
			}
		case proto.FrameReliable:
			f, _, err := proto.ParseReliableFrame(r.Frame())
			if err == nil {
				err = s.rel.Input(now, f.Data)
			}
			if err != nil {
				s.stats.BadFrames++
			}
		case proto.FrameMessage:
			f, _, err := proto.ParseMessageFrame(r.Frame())
			if err != nil {
				s.stats.BadFrames++
				continue
			}
			if !s.filter.AcceptFrame(&f) {
				continue
			}
			d := Unreliable
			if f.Sequenced {
				d = Sequenced
			}
			s.deliver(&f, d, sink)
		default:
			if s.hooks != nil {
				s.hooks.frame(r.Type(), r.Frame(), *h)
			} else {
				s.stats.BadFrames++
			}
		}
	}
	s.acks.OnReceive(now, h, pn, size, ackDelay)
	for {
		msg, ok := s.rel.Receive(s.relMsg[:0])
		if !ok {
			break
		}
		s.relMsg = msg
		t, err := proto.PeekFrameType(msg)
		if err != nil {
			s.stats.BadFrames++
			continue
		}
		if t != proto.FrameMessage {
			if s.hooks != nil {
				s.hooks.frame(t, msg, *h)
			} else {
				s.stats.BadFrames++
			}
			continue
		}
		f, _, err := proto.ParseMessageFrame(msg)
		if err != nil {
			s.stats.BadFrames++
			continue
		}
		s.deliver(&f, Reliable, sink)
	}
	return nil
}

// messageSink receives a session's messages.
type messageSink interface {
	message(m *Message)
}

func (s *session) deliver(f *proto.MessageFrame, d Delivery, sink messageSink) {
	s.stats.MessagesIn++
	s.inMsg = Message{Channel: f.Channel, Delivery: d, Postmarked: f.Postmarked, Tick: f.Tick, Data: f.Data}
	sink.message(&s.inMsg)
}

// sendReliableFrame queues one whole proto frame (a full snapshot, a
// resync answer) on the reliable channel.
func (s *session) sendReliableFrame(frame []byte) error {
	switch err := s.rel.Send(frame); {
	case errors.Is(err, reliability.ErrQueueFull):
		return ErrQueueFull
	case err != nil:
		return ErrMessageTooLarge
	}
	return nil
}

// packetFields are the header fields the owner of a session decides.
type packetFields struct {
	tick, interpFrom, interpTo uint32
	blend                      uint16
}

// Packet contents for appendPacket.
const (
	fillNone  = iota // keep-alive, disconnect: no frames
	fillData         // reliable, unreliable and (first) hook frames, else an ack-only frame
	fillFirst        // fillData, and the hooks may add frames
)

// appendPacket appends one sealed packet of type t to out and returns out.
// fill says what the payload holds; extra, if not nil, is appended as the
// whole payload instead (a disconnect reason, an accept body).
func (s *session) appendPacket(out []byte, now time.Time, t proto.PacketType, pf packetFields, fill int, extra []byte) []byte {
	start := len(out)
	out = append(out, make([]byte, proto.HeaderSize)...)
	switch {
	case extra != nil:
		out = append(out, extra...)
	case fill != fillNone:
		out = s.fillData(out, now, fill == fillFirst)
	}
	h := proto.Header{Type: t, Sealed: true, ConnID: s.id, Tick: pf.tick,
		InterpFrom: pf.interpFrom, InterpTo: pf.interpTo, Blend: pf.blend}
	size := len(out) - start + proto.SealOverhead
	pn := s.acks.Send(now, &h, size)
	if _, err := h.Append(out[start:start]); err != nil {
		// Only inconsistent interpolation fields fail; send the tick alone
		// rather than nothing.
		h.InterpFrom, h.InterpTo, h.Blend = h.Tick, h.Tick, 0
		h.Append(out[start:start])
	}
	out = append(out[:start], s.tx.seal(out[start:], pn)...)
	s.lastSend = now
	s.ackOwed = false
	s.stats.PacketsOut++
	s.stats.BytesOut += uint64(size)
	return out
}

// fillData writes the frames of one data packet. The first packet of a
// tick carries the time-critical frames first: queued unreliable
// messages, then the hooks' frames (inputs, snapshot deltas), then
// reliable segments in the room left (acks and short segments; a full
// segment waits for the next packet). Later packets carry reliable
// segments first. A packet with nothing else carries an ack-only frame.
func (s *session) fillData(b []byte, now time.Time, first bool) []byte {
	start, room := len(b), s.payloadRoom()
	left := func() int { return room - (len(b) - start) }
	if first {
		b = s.takeUnreliable(b, left())
		if s.hooks != nil {
			b = s.hooks.appendFrames(b, left(), s.acks.NextPacketNumber())
		}
		if len(s.relCopy) > 0 && len(s.relCopy) <= left() {
			b = append(b, s.relCopy...)
			s.relCopy = s.relCopy[:0]
			s.stats.ReliableRepeats++
		}
	}
	if s.rel.Pending() > 0 {
		at := len(b)
		b, _ = s.rel.AppendFrame(b, left())
		cur := &s.relHist[s.relCur]
		if n := len(b) - at; n > 0 && len(cur.frames)+n <= maxRepeat*room {
			// Repeat frames with new data only: KCP's own
			// retransmissions are already another copy.
			if copies := s.reliableCopies(); copies > 1 {
				if sn, ok := framePushes(b[at:]); ok && (!s.relSent || int32(sn-s.relMaxSN) > 0) {
					cur.frames = append(cur.frames, b[at:]...)
					cur.left = copies - 1
					s.relMaxSN, s.relSent = sn, true
				}
			}
		}
	}
	if !first {
		b = s.takeUnreliable(b, left())
	}
	if len(b) == start {
		f := proto.AckOnlyFrame{DelayMicros: s.acks.AckDelayMicros(now)}
		b, _ = f.Append(b)
	}
	return b
}

// maxRepeat bounds the packets of repeated reliable data per tick.
const maxRepeat = 4

// repeatReliable sends the last tick's reliable data again in packets of
// its own when the first packet had no room for it.
func (s *session) repeatReliable(now time.Time, pf packetFields, next func() []byte, emit func([]byte)) {
	room := s.payloadRoom()
	for len(s.relCopy) > 0 {
		n := 0
		for n < len(s.relCopy) {
			_, k, err := proto.SkipFrame(s.relCopy[n:])
			if err != nil || n+k > room {
				break
			}
			n += k
		}
		if n == 0 {
			break
		}
		emit(s.appendPacket(next(), now, proto.PacketData, pf, fillNone, s.relCopy[:n]))
		s.relCopy = s.relCopy[n:]
		s.stats.ReliableRepeats++
	}
	s.relCopy = s.relCopy[:0]
}

// relRepeat is one tick's new reliable frames and the copies they are
// still owed.
type relRepeat struct {
	frames []byte
	left   int
}

// maxCopies bounds how many times new reliable data goes out.
const maxCopies = 4

// residualLoss is the probability that every copy of new reliable data
// is lost which reliableCopies aims for.
const residualLoss = 1e-3

// reliableCopies says how many times new reliable data goes out, in
// consecutive ticks: once when 200 packets have shown the link loses at
// most 1 % of them; else enough copies that all are lost with
// probability at most residualLoss at the measured loss rate (2 until
// the loss rate is known, 3 at 5 % loss, 4 from 18 %). A lost copy then
// costs a tick instead of a retransmission timeout, and the messages
// behind it in order do not wait either, which keeps the tail latency of
// game messages near one round trip, at the price of sending reliable
// data more than once on lossy links (KCP drops the duplicates).
func (s *session) reliableCopies() int {
	st := s.acks.Stats()
	switch {
	case st.LossSamples < 200:
		return 2
	case st.Loss <= 0.01:
		return 1
	}
	n := int(math.Ceil(math.Log(residualLoss) / math.Log(st.Loss)))
	return min(max(n, 2), maxCopies)
}

// gatherRepeats collects in relCopy the earlier ticks' reliable frames
// still owed a copy, oldest first, and starts a new tick's collection.
func (s *session) gatherRepeats() {
	s.relCopy = s.relCopy[:0]
	limit := maxRepeat * s.payloadRoom()
	for i := range len(s.relHist) {
		r := &s.relHist[(s.relCur+1+i)%len(s.relHist)]
		if r.left == 0 {
			continue
		}
		r.left--
		if len(s.relCopy)+len(r.frames) <= limit {
			s.relCopy = append(s.relCopy, r.frames...)
		}
	}
	s.relCur = (s.relCur + 1) % len(s.relHist)
	cur := &s.relHist[s.relCur]
	cur.frames, cur.left = cur.frames[:0], 0
}

// framePushes reports whether a reliable frame holds a KCP data segment
// (not only acknowledgements), and the newest one's sequence number.
func framePushes(frame []byte) (maxSN uint32, ok bool) {
	f, _, err := proto.ParseReliableFrame(frame)
	if err != nil {
		return 0, false
	}
	d := f.Data
	for off := 0; off+kcpHeaderSize <= len(d); {
		if d[off+4] == kcpCmdPush {
			sn := binary.LittleEndian.Uint32(d[off+12:])
			if !ok || int32(sn-maxSN) > 0 {
				maxSN = sn
			}
			ok = true
		}
		off += kcpHeaderSize + int(binary.LittleEndian.Uint32(d[off+20:]))
	}
	return maxSN, ok
}

// KCP segment header: conv u32, cmd u8, frg u8, wnd u16, ts u32, sn u32,
// una u32, len u32.
const (
	kcpHeaderSize = 24
	kcpCmdPush    = 81
)

// takeUnreliable moves as many queued unreliable frames as fit in room
// into b, oldest first.
func (s *session) takeUnreliable(b []byte, room int) []byte {
	used := 0
	for used < len(s.unrel) {
		_, n, err := proto.SkipFrame(s.unrel[used:])
		if err != nil || n > room {
			break
		}
		b = append(b, s.unrel[used:used+n]...)
		used += n
		room -= n
	}
	s.unrel = s.unrel[:copy(s.unrel, s.unrel[used:])]
	return b
}

// wantsData reports whether the session has something to send beyond
// acks: reliable segments, unreliable messages.
func (s *session) wantsData() bool {
	return s.rel.Pending() > 0 || len(s.unrel) > 0
}

// tick builds this tick's packets with emit: data packets while there is
// data (up to maxPacketsPerTick), one packet for the hooks and owed acks,
// or a keep-alive after heartbeat of silence. The hooks decide by
// returning frames whether the first packet carries more than acks.
func (s *session) tick(now time.Time, pf packetFields, heartbeat time.Duration, alwaysSend bool, next func() []byte, emit func([]byte)) {
	s.rel.Update(now)
	s.gatherRepeats()
	defer s.repeatReliable(now, pf, next, emit)
	if !s.wantsData() && !alwaysSend && !s.ackOwed {
		if now.Sub(s.lastSend) >= heartbeat {
			emit(s.appendPacket(next(), now, proto.PacketKeepAlive, pf, fillNone, nil))
		}
		return
	}
	for i := 0; i < maxPacketsPerTick; i++ {
		fill := fillData
		if i == 0 {
			fill = fillFirst
		}
		emit(s.appendPacket(next(), now, proto.PacketData, pf, fill, nil))
		if !s.wantsData() {
			return
		}
	}
	if len(s.unrel) > 0 {
		// Unreliable data that waited a whole tick is stale: drop it.
		s.stats.UnreliableDropped++
		s.unrel = s.unrel[:0]
	}
}
