package session

import (
	"errors"
	"fmt"
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
	// Player is the player slot the sender named (see
	// proto.MessageFrame.Player), 0 when it named none.
	Player uint16
	Data   []byte
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
	// ErrEmptyMessage: a reliable frame must hold at least one byte.
	ErrEmptyMessage = errors.New("tickwire: empty reliable frame")
	// ErrBadDelivery: Delivery is not one of the defined values.
	ErrBadDelivery = errors.New("tickwire: invalid delivery")
)

// reliableSendError maps the reliable channel's refusal to the error the
// caller acts on, keeping the real cause.
func reliableSendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, reliability.ErrQueueFull):
		return ErrQueueFull
	case errors.Is(err, reliability.ErrMessageTooLarge):
		return ErrMessageTooLarge
	case errors.Is(err, reliability.ErrEmptyMessage):
		return ErrEmptyMessage
	}
	return fmt.Errorf("tickwire: reliable send: %w", err)
}

// maxUnreliableQueue bounds the bytes of unreliable frames waiting for the
// next packet; beyond it Send fails with ErrQueueFull.
const maxUnreliableQueue = 64 << 10

// maxPacketsPerTick bounds the data packets one connection sends per tick:
// enough to drain 1 MiB of reliable data in about two seconds at 60 Hz
// without letting one connection monopolise the socket.
const maxPacketsPerTick = 16

// AckOnlyThreshold is how many packets may arrive between two of ours
// before the owner sends an ack-only packet (half the ack field).
const AckOnlyThreshold = 16

// PacketInfo describes the packet a Handler call is about: a received one
// (Frame, Message) or the one being built (AppendFrames).
type PacketInfo struct {
	// Header is the received packet's header (zero when building).
	Header proto.Header
	// Number is the packet's full 64-bit packet number.
	Number uint64
	// Time is when the packet arrived, or the send time when building.
	Time time.Time
	// The path's estimates as they stand.
	RTT, RTTVar time.Duration
	Loss        float64 // fraction of our packets the peer did not acknowledge
}

// Handler is what a session reports to: the owner of the connection (the
// root package's Conn or Client). Its methods run on the goroutine that
// drives the session.
type Handler interface {
	// Message delivers one application message; m is valid only during
	// the call.
	Message(m *Message, p *PacketInfo)
	// Frame receives a frame the session does not handle itself (input,
	// snapshot, checksum, control...). An error counts the frame as bad.
	// frame is valid only during the call.
	Frame(t proto.FrameType, frame []byte, p *PacketInfo) error
	// AppendFrames adds frames to the first data packet of a tick, within
	// room bytes, and returns b.
	AppendFrames(b []byte, room int, p *PacketInfo) []byte
	// Delivered and Lost report the fate of sent packets by number.
	Delivered(pn uint64)
	Lost(pn uint64)
}

// Output takes the datagrams a session builds. Buffer returns an empty
// buffer with room for one datagram; Emit queues it for sending.
type Output interface {
	Buffer() []byte
	Emit(b []byte)
}

// Ticks are the header fields the owner of a session decides: the tick a
// packet speaks for and, on a client, the interpolated view it showed.
type Ticks struct {
	Tick, InterpFrom, InterpTo uint32
	Blend                      uint16
}

// TickOnly is a Ticks naming just t.
func TickOnly(t uint32) Ticks { return Ticks{Tick: t, InterpFrom: t, InterpTo: t} }

// Stats counts one session's traffic and carries its estimates.
type Stats struct {
	PacketsIn, PacketsOut uint64
	BytesIn, BytesOut     uint64
	MessagesIn            uint64
	MessagesOut           uint64
	BadFrames             uint64 // frames dropped as malformed or refused by the handler
	UnreliableDropped     uint64 // queued unreliable messages never sent
	ReliableRepeats       uint64 // reliable frames sent again as a copy (see copies.go)
	ParityFrames          uint64 // parity frames sent (see fec.go)
	ReliableRebuilt       uint64 // reliable frames rebuilt from parity (see fec.go)
	ReliableQueue         int    // reliable segments waiting to be sent or acknowledged
	RTT                   time.Duration
	RTTVar                time.Duration
	Loss                  float64
}

// Config describes a session.
type Config struct {
	ID        uint32 // connection id, in every header
	MaxPacket int    // largest datagram, bytes
	// TxKey seals what this end sends, RxKey opens what it receives.
	TxKey, RxKey *[proto.KeySize]byte
	// Heartbeat: a keep-alive goes out after this long without a packet.
	Heartbeat time.Duration
	// Timeout: the peer is gone after this long without an authenticated
	// packet.
	Timeout time.Duration
	Handler Handler
}

// Session is one end of a connection. It is not safe for concurrent use:
// one goroutine drives it.
type Session struct {
	cfg    Config
	tx, rx *packetCipher
	acks   *reliability.PacketAcks
	rel    *reliability.Reliable
	seq    reliability.Sequencer
	filter reliability.SequenceFilter

	unrel    []byte // encoded unreliable message frames, oldest first
	scratch  []byte // encoding space for frames the session writes itself (reliable messages, path probes)
	relMsg   []byte // receive space for reliable messages
	inMsg    Message
	info     PacketInfo
	lastRecv time.Time
	lastSend time.Time
	// ackOwed: a packet with more than acks arrived since we last sent
	// one. Ack-only packets and keep-alives are acknowledged by the next
	// packet that goes anyway, so two idle peers do not ping-pong acks.
	ackOwed   bool
	copies    copies
	fecTx     reliability.ParitySender
	fecRx     *reliability.ParityReceiver // allocated at the peer's first parity frame
	tickCount uint64                      // Tick calls, for the age of a member in the parity window
	lastTick  time.Time                   // the last Tick's now, for the tick's length
	path      path
	stats     Stats
}

// New creates a session at now.
func New(cfg Config, now time.Time) (*Session, error) {
	if cfg.Handler == nil {
		return nil, errors.New("tickwire: session needs a handler")
	}
	tx, err := newPacketCipher(cfg.TxKey)
	if err != nil {
		return nil, err
	}
	rx, err := newPacketCipher(cfg.RxKey)
	if err != nil {
		return nil, err
	}
	rel, err := reliability.NewReliable(cfg.ID, reliability.ReliableConfig{MaxPacketSize: cfg.MaxPacket})
	if err != nil {
		return nil, err
	}
	s := &Session{
		cfg:      cfg,
		tx:       tx,
		rx:       rx,
		rel:      rel,
		unrel:    make([]byte, 0, 4096),
		scratch:  make([]byte, 0, 4096),
		relMsg:   make([]byte, 0, 4096),
		lastRecv: now,
		lastSend: now,
	}
	s.acks = reliability.NewPacketAcks(reliability.AckConfig{}, ackListener{s})
	return s, nil
}

// ackListener passes the acks' verdicts to the handler without making
// them methods of Session.
type ackListener struct{ s *Session }

func (l ackListener) Delivered(pn uint64) { l.s.cfg.Handler.Delivered(pn) }
func (l ackListener) Lost(pn uint64)      { l.s.cfg.Handler.Lost(pn) }

// ID is the connection id.
func (s *Session) ID() uint32 { return s.cfg.ID }

// TimedOut reports whether the peer has been silent longer than the
// timeout at now.
func (s *Session) TimedOut(now time.Time) bool { return now.Sub(s.lastRecv) > s.cfg.Timeout }

// Silent is how long the peer has been silent at now.
func (s *Session) Silent(now time.Time) time.Duration { return now.Sub(s.lastRecv) }

// Excuse takes d off the peer's silence: time the owner itself was not
// running (a stalled process), in which the peer's packets waited
// unread and for which the peer is not to blame.
func (s *Session) Excuse(d time.Duration) { s.lastRecv = s.lastRecv.Add(d) }

// NextPacketNumber is the number the next packet sent will carry.
func (s *Session) NextPacketNumber() uint64 { return s.acks.NextPacketNumber() }

// AckDue reports whether a packet should go now rather than with the
// next tick: enough packets arrived since our last one (AckOnlyThreshold),
// or the reliable channel holds the ack of a segment that came past a
// gap, which the peer's fast retransmission waits for (Reliable.Urgent).
func (s *Session) AckDue() bool {
	return s.rel.Urgent() || s.acks.AcksPending() >= AckOnlyThreshold
}

// ReliableQueued is how many reliable segments wait to be sent or
// acknowledged.
func (s *Session) ReliableQueued() int { return s.rel.Stats().QueuedSegments }

// Stats returns the counters and estimates.
func (s *Session) Stats() Stats {
	st := s.stats
	a := s.acks.Stats()
	st.RTT, st.RTTVar, st.Loss = a.RTT, a.RTTVar, a.Loss
	st.ReliableQueue = s.rel.Stats().QueuedSegments
	return st
}

// payloadRoom is the payload bytes one packet holds.
func (s *Session) payloadRoom() int {
	return s.cfg.MaxPacket - proto.HeaderSize - proto.SealOverhead
}

// Send queues one message; postmarked messages carry tick.
func (s *Session) Send(d Delivery, channel uint8, postmarked bool, tick uint32, data []byte) error {
	return s.SendMessage(d, proto.MessageFrame{Channel: channel, Postmarked: postmarked, Tick: tick, Data: data})
}

// SendMessage queues the message f describes (its Channel, Postmarked
// and Tick, Player and Data; the session numbers Sequenced ones).
func (s *Session) SendMessage(d Delivery, f proto.MessageFrame) error {
	data := f.Data
	switch d {
	case Reliable:
		if len(data) > reliability.DefaultMaxMessageSize-16 {
			return ErrMessageTooLarge
		}
		b, err := f.Append(s.scratch[:0])
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
		}
		s.scratch = b
		if err := reliableSendError(s.rel.Send(b)); err != nil {
			return err
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

// SendFrame queues one whole proto frame (a full snapshot, a control
// frame) on the reliable channel; the peer's Handler.Frame receives it.
func (s *Session) SendFrame(frame []byte) error {
	return reliableSendError(s.rel.Send(frame))
}

// Open checks a session packet's number against the replay window and
// opens it. The payload aliases pkt. When ok is false the packet is
// dropped for reason drop and nothing changed.
//
// Open changes nothing but pkt and the session's decryption state, so
// the packets of different sessions may be opened concurrently (not two
// of one session); a packet opened while others wait to be received
// before it is checked with Fresh before it is received in its turn.
func (s *Session) Open(pkt []byte, h *proto.Header) (pn uint64, payload []byte, drop DropReason, ok bool) {
	pn, fresh := s.acks.ExpandSeq(h.Seq)
	if !fresh {
		return 0, nil, DropReplay, false
	}
	payload, err := s.rx.open(pkt, pn)
	if err != nil {
		return 0, nil, DropAuth, false
	}
	return pn, payload, 0, true
}

// Fresh reports whether the opened packet pn may still be received (Open
// found it fresh, but a copy of it, or packets far newer, may have been
// received since): when it is false, drop it as a replay.
func (s *Session) Fresh(pn uint64) bool { return s.acks.Fresh(pn) }

// reliableSampleSlack is how far above the packet RTT estimate the
// reliable channel's RTT samples may go (reliability.SetSampleCap): the
// peer's ack waits for its next packet (a tick at 4 Hz and up), and a
// path's jitter. A sample beyond holds time the peer's process was not
// running: the packet estimate, sampled on every packet, forgets it
// within a few dozen packets, but KCP, sampled only by the acks of
// reliable segments, kept it for as long as few were in flight.
const reliableSampleSlack = 250 * time.Millisecond

// Receive processes an opened packet of size bytes (a data packet's
// frames, or a keep-alive's empty payload): acks, reliable segments,
// messages and the handler's frames. It returns an error, having
// processed nothing, if the payload is malformed.
func (s *Session) Receive(now time.Time, h *proto.Header, pn uint64, size int, payload []byte) error {
	r := proto.FrameReader{Payload: payload}
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		return err
	}
	s.lastRecv = now
	s.stats.PacketsIn++
	s.stats.BytesIn += uint64(size)
	s.info = PacketInfo{Header: *h, Number: pn, Time: now, RTT: s.acks.RTT(), RTTVar: s.acks.RTTVar(), Loss: s.acks.Loss()}
	var ackDelay time.Duration
	var relData []byte // the packet's last reliable frame, for parity
	s.rel.SetSampleCap(s.acks.RTT() + reliableSampleSlack)
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
				relData = f.Data
			}
			if err != nil {
				s.stats.BadFrames++
			}
		case proto.FrameParity:
			f, _, err := proto.ParseParityFrame(r.Frame())
			if err != nil {
				s.stats.BadFrames++
				continue
			}
			s.parity(now, pn, &f)
		case proto.FramePathChallenge:
			f, _, err := proto.ParsePathChallengeFrame(r.Frame())
			if err != nil {
				s.stats.BadFrames++
				continue
			}
			s.path.answer, s.path.answerDue = f.Data, true
		case proto.FramePathResponse:
			f, _, err := proto.ParsePathResponseFrame(r.Frame())
			if err != nil {
				s.stats.BadFrames++
				continue
			}
			s.pathResponse(f.Data)
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
			s.deliver(&f, d)
		default:
			s.frame(r.Type(), r.Frame())
		}
	}
	if s.fecRx != nil {
		s.rebuilt(now, s.fecRx.Store(pn, relData))
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
			s.frame(t, msg)
			continue
		}
		f, _, err := proto.ParseMessageFrame(msg)
		if err != nil {
			s.stats.BadFrames++
			continue
		}
		s.deliver(&f, Reliable)
	}
	return nil
}

// ReceiveAcks takes only the acknowledgements of an opened packet that
// carries no frames of its own (a repeated accept).
func (s *Session) ReceiveAcks(now time.Time, h *proto.Header, pn uint64, size int) {
	s.acks.OnReceive(now, h, pn, size, 0)
}

func (s *Session) frame(t proto.FrameType, f []byte) {
	if err := s.cfg.Handler.Frame(t, f, &s.info); err != nil {
		s.stats.BadFrames++
	}
}

func (s *Session) deliver(f *proto.MessageFrame, d Delivery) {
	s.stats.MessagesIn++
	s.inMsg = Message{Channel: f.Channel, Delivery: d, Postmarked: f.Postmarked, Tick: f.Tick, Player: f.Player, Data: f.Data}
	s.cfg.Handler.Message(&s.inMsg, &s.info)
}

// packet contents for appendPacket.
const (
	fillNone  = iota // keep-alive, disconnect: no frames
	fillData         // reliable, unreliable and (first) handler frames, else an ack-only frame
	fillFirst        // fillData, and the handler may add frames
)

// AppendControl appends one sealed packet of type t whose whole payload
// is body (an accept, a disconnect reason; nil for none) to out.
func (s *Session) AppendControl(out []byte, now time.Time, t proto.PacketType, ticks Ticks, body []byte) []byte {
	if body == nil {
		body = []byte{}
	}
	return s.appendPacket(out, now, t, ticks, fillNone, body)
}

// AppendAckPacket appends one data packet with what is queued beyond the
// handler's frames, or an ack-only frame: the answer to AckDue.
func (s *Session) AppendAckPacket(out []byte, now time.Time, ticks Ticks) []byte {
	return s.appendPacket(out, now, proto.PacketData, ticks, fillData, nil)
}

// appendPacket appends one sealed packet of type t to out and returns out.
// fill says what the payload holds; body, if not nil, is appended as the
// whole payload instead.
func (s *Session) appendPacket(out []byte, now time.Time, t proto.PacketType, ticks Ticks, fill int, body []byte) []byte {
	start := len(out)
	out = append(out, make([]byte, proto.HeaderSize)...)
	switch {
	case body != nil:
		out = append(out, body...)
	case fill != fillNone:
		out = s.fillData(out, now, fill == fillFirst)
	}
	h := proto.Header{Type: t, Sealed: true, ConnID: s.cfg.ID, Tick: ticks.Tick,
		InterpFrom: ticks.InterpFrom, InterpTo: ticks.InterpTo, Blend: ticks.Blend}
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
// messages, then the handler's frames (inputs, snapshot deltas), then
// reliable segments in the room left (acks and short segments; a full
// segment waits for the next packet). Later packets carry reliable
// segments first. A packet with nothing else carries an ack-only frame.
// No packet holds more than proto.MaxFramesPerPacket frames: the
// unreliable queue waits for the next packet, and handler frames beyond
// maxHandlerFrames are cut.
func (s *Session) fillData(b []byte, now time.Time, first bool) []byte {
	start, room := len(b), s.payloadRoom()
	left := func() int { return room - (len(b) - start) }
	frames := 0
	if first {
		b, frames = s.appendPathFrames(b)
		var n int
		b, n = s.takeUnreliable(b, left(), maxHandlerFrames-frames)
		frames += n
		s.info = PacketInfo{Number: s.acks.NextPacketNumber(), Time: now, RTT: s.acks.RTT(), RTTVar: s.acks.RTTVar(), Loss: s.acks.Loss()}
		at := len(b)
		b = s.cfg.Handler.AppendFrames(b, left(), &s.info)
		b, n = cutFrames(b, at, maxHandlerFrames-frames)
		frames += n
		b, n = s.copies.appendOwed(b, left(), proto.MaxFramesPerPacket-1-frames, &s.stats)
		frames += n
	}
	if s.rel.Pending() > 0 {
		at := len(b)
		b, _ = s.rel.AppendFrame(b, left())
		s.protect(b[at:], room)
		frames++
	}
	if !first {
		var n int
		b, n = s.takeUnreliable(b, left(), proto.MaxFramesPerPacket-frames)
		frames += n
	}
	if len(b) == start {
		f := proto.AckOnlyFrame{DelayMicros: s.acks.AckDelayMicros(now)}
		b, _ = f.Append(b)
	}
	return b
}

// appendPathFrames adds the response owed to a path challenge received,
// and reports how many frames it added.
func (s *Session) appendPathFrames(b []byte) ([]byte, int) {
	if !s.path.answerDue {
		return b, 0
	}
	f := proto.PathResponseFrame{Data: s.path.answer}
	b, _ = f.Append(b)
	s.path.answerDue = false
	return b, 1
}

// probePath sends the challenge of an address not validated yet in a
// packet of its own, every tick until it is answered: at 51 bytes it fits
// the 3× budget of the smallest packet that moved the session, where a
// full packet would not.
func (s *Session) probePath(now time.Time, ticks Ticks, out Output) {
	if !s.path.addr.IsValid() || s.path.validated {
		return
	}
	f := proto.PathChallengeFrame{Data: s.path.challenge}
	body, _ := f.Append(s.scratch[:0])
	s.scratch = body
	out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketData, ticks, fillNone, body))
}

// maxHandlerFrames bounds the frames the first packet of a tick gives to
// queued messages and the handler together, leaving room for the copies
// and the reliable frame.
const maxHandlerFrames = proto.MaxFramesPerPacket - 8

// cutFrames keeps at most max whole frames of b[at:] and reports how many
// it kept. A handler that wrote a malformed frame loses all it wrote.
func cutFrames(b []byte, at, max int) ([]byte, int) {
	n, off := 0, at
	for off < len(b) {
		_, k, err := proto.SkipFrame(b[off:])
		if err != nil || n == max {
			break
		}
		off += k
		n++
	}
	if off < len(b) && n == 0 {
		return b[:at], 0
	}
	return b[:off], n
}

// takeUnreliable moves as many queued unreliable frames as fit in room,
// at most max of them, into b, oldest first, and reports how many.
func (s *Session) takeUnreliable(b []byte, room, max int) ([]byte, int) {
	used, n := 0, 0
	for used < len(s.unrel) && n < max {
		_, k, err := proto.SkipFrame(s.unrel[used:])
		if err != nil || k > room {
			break
		}
		b = append(b, s.unrel[used:used+k]...)
		used += k
		room -= k
		n++
	}
	s.unrel = s.unrel[:copy(s.unrel, s.unrel[used:])]
	return b, n
}

// wantsData reports whether the session has something to send beyond
// acks: reliable segments, unreliable messages.
func (s *Session) wantsData() bool {
	return s.rel.Pending() > 0 || len(s.unrel) > 0 || s.path.answerDue
}

// SendMode says when Session.Tick sends a packet with no data queued.
type SendMode uint8

const (
	// SendOwed: when acks are owed (a packet with more than acks
	// arrived since the last one sent), or a keep-alive after a
	// heartbeat of silence.
	SendOwed SendMode = iota
	// SendAlways: a packet every tick, for the handler's frames (a game
	// sends every tick).
	SendAlways
	// SendHeld: a paced owner's tick off its cadence (a game sending
	// every few ticks): owed acks — of packets, and the reliable
	// channel's — wait for its next SendAlways tick (or for
	// AckOnlyThreshold packets, as always), only a keep-alive after a
	// heartbeat of silence goes. Data queued goes in every mode.
	SendHeld
)

// Tick builds this tick's packets into out: data packets while there is
// data (up to maxPacketsPerTick), one packet for the handler's frames and
// owed acks, or a keep-alive after a heartbeat of silence, as send says.
func (s *Session) Tick(now time.Time, ticks Ticks, send SendMode, out Output) {
	s.tickCount++
	s.setRepairWait(now)
	s.checkPath(now)
	s.probePath(now, ticks, out)
	s.rel.Update(now)
	s.copies.gather(s.payloadRoom())
	defer s.repeatReliable(now, ticks, out)
	wants := s.wantsData()
	if send == SendHeld {
		// The reliable channel's acks wait too.
		wants = s.rel.PendingData() > 0 || len(s.unrel) > 0 || s.path.answerDue
	}
	if !wants && send != SendAlways && (!s.ackOwed || send == SendHeld) {
		if now.Sub(s.lastSend) >= s.cfg.Heartbeat {
			out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketKeepAlive, ticks, fillNone, nil))
		}
		return
	}
	for i := 0; i < maxPacketsPerTick; i++ {
		fill := fillData
		if i == 0 {
			fill = fillFirst
		}
		out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketData, ticks, fill, nil))
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

// Flush sends what is queued now instead of with the next tick: the
// reliable channel's segments (as soon as kcp's 10 ms flush interval
// allows) and the queued unreliable messages, in data packets without
// the handler's frames, which stay tick-aligned. New reliable data gets
// its first copy right after them and the others in the following ticks.
func (s *Session) Flush(now time.Time, ticks Ticks, out Output) {
	s.rel.Flush(now)
	s.copies.beginFlush()
	for i := 0; i < maxPacketsPerTick && s.wantsData(); i++ {
		out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketData, ticks, fillData, nil))
	}
	s.copies.endFlush()
	s.sendCopies(now, ticks, out)
	s.sendParity(now, ticks, out, true)
}

// FlushDue reports whether reliable messages wait for the reliable
// channel's next flush, and when it is: a no-delay sender (Flush) flushes
// again then.
func (s *Session) FlushDue() (time.Time, bool) { return s.rel.FlushDue() }

// repeatReliable sends the copies owed that did not fit the tick's first
// packet, and the first copy of this tick's new reliable frames, in
// packets of their own.
func (s *Session) repeatReliable(now time.Time, ticks Ticks, out Output) {
	s.copies.owedNow(s.payloadRoom())
	s.sendCopies(now, ticks, out)
	s.sendParity(now, ticks, out, false)
}

// sendCopies sends the owed copies in packets of their own.
func (s *Session) sendCopies(now time.Time, ticks Ticks, out Output) {
	room := s.payloadRoom()
	for {
		body := s.copies.next(room)
		if body == nil {
			return
		}
		out.Emit(s.appendPacket(out.Buffer(), now, proto.PacketData, ticks, fillNone, body))
		s.stats.ReliableRepeats++
	}
}
