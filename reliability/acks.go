package reliability

import (
	mbits "math/bits"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// AckBitsLen is how many packets before Ack the header's AckBits cover.
const AckBitsLen = 32

const (
	// sentRingSize is how many sent packets PacketAcks remembers. A packet
	// still unresolved when its slot is reused is declared lost.
	sentRingSize = 1024
	// lossWindowLen is how many resolved packets the loss rate is measured
	// over.
	lossWindowLen = 1024

	// DefaultPacketThreshold is the default AckConfig.PacketThreshold.
	DefaultPacketThreshold = 3
)

// AckConfig tunes packet acknowledgement and loss detection. The zero value
// is the default.
type AckConfig struct {
	// InitialRTT is the RTT assumed until the first sample.
	// Default DefaultInitialRTT (100 ms).
	InitialRTT time.Duration
	// PacketThreshold declares an unacknowledged packet lost once a packet
	// sent this many packets after it has been acknowledged (RFC 9002
	// kPacketThreshold). 1 to AckBitsLen; default 3.
	PacketThreshold int
}

func (c AckConfig) withDefaults() AckConfig {
	if c.InitialRTT <= 0 {
		c.InitialRTT = DefaultInitialRTT
	}
	if c.PacketThreshold <= 0 {
		c.PacketThreshold = DefaultPacketThreshold
	}
	if c.PacketThreshold > AckBitsLen {
		c.PacketThreshold = AckBitsLen
	}
	return c
}

// AckListener hears the fate of sent packets. PacketAcks calls it
// synchronously from Send and OnReceive; it must not call back into the
// PacketAcks. pn is the 64-bit packet number Send returned; the header
// carried uint16(pn).
//
// Delivered is called exactly once for every packet the peer acknowledged.
// Lost is called at most once per packet, when it is judged lost (see
// PacketAcks); a packet judged lost may still be acknowledged later (it was
// only late), and then Delivered follows Lost for the same pn.
type AckListener interface {
	Delivered(pn uint64)
	Lost(pn uint64)
}

// AckListeners fans one notification out to several listeners, in order.
type AckListeners []AckListener

func (ls AckListeners) Delivered(pn uint64) {
	for _, l := range ls {
		l.Delivered(pn)
	}
}

func (ls AckListeners) Lost(pn uint64) {
	for _, l := range ls {
		l.Lost(pn)
	}
}

// Packet states in the sent ring.
const (
	stateInFlight = iota + 1
	stateAcked
	stateLost // judged lost, no ack (yet)
)

type sentPacket struct {
	pn     uint64 // 0: empty slot
	sentAt time.Duration
	size   int32
	state  uint8
}

// PacketAcks is one connection's packet acknowledgement state, in the
// style of reliable.io: every header carries the sender's sequence number
// and acknowledges the peer's newest sequence plus the 32 before it.
//
// Sending: Send numbers the packet, fills the header's Seq, Ack and AckBits
// and remembers when it was sent. Receiving: ExpandSeq/Fresh find the full
// packet number of an incoming header (for the AEAD nonce and replay
// check); after the packet authenticated, OnReceive records it (for our
// future acks) and processes the acks it carries.
//
// Loss rule (RFC 9002 §6.1, per packet): an unacknowledged packet is lost
// once a packet sent at least PacketThreshold later has been acknowledged,
// or once some later packet has been acknowledged and it was sent more
// than 9/8 × max(smoothed RTT, latest RTT) ago. A packet that leaves the
// ack window (more than 32 below the newest acknowledged one) or whose ring
// slot is reused while unresolved is lost too. The loss rate counts each
// packet once, by its final state when it leaves the ack window, so late
// acknowledgements do not bias it.
//
// Time: now is any monotonic time.Time the caller keeps consistent
// (time.Now in production, virtual inside a testing/synctest bubble); no
// method reads the clock. Nothing allocates after New. Not safe for
// concurrent use.
type PacketAcks struct {
	cfg      AckConfig
	listener AckListener
	epoch    time.Time
	started  bool

	// send side
	nextPN       uint64 // next packet number to send
	largestAcked uint64 // 0: none
	oldestOpen   uint64 // no packet below this is in flight
	finalNext    uint64 // next packet number whose verdict goes into the loss window
	// unacked has the bit of every ring slot holding a packet not yet
	// acknowledged (in flight or judged lost): the acks a header repeats
	// for packets already acknowledged, most of its 33, are dropped here
	// without reading the ring, whose entries are in no cache by the time
	// the peer's packet arrives.
	unacked [sentRingSize / 64]uint64
	rtt     rttEstimator

	// loss window: bit set = lost
	lossBits  [lossWindowLen / 64]uint64
	lossCount int
	lossN     int
	lossPos   int

	// receive side
	recv          ReplayWindow
	recvLargestAt time.Duration // when the largest packet number arrived
	ackPending    int           // packets received since our last Send

	stats AckStats

	// sent is the ring of sent packets, last: the fields above, which
	// every packet reads, sit together rather than on both sides of it.
	sent [sentRingSize]sentPacket
}

// AckStats are a connection's packet counters and estimates.
type AckStats struct {
	PacketsSent     uint64
	BytesSent       uint64
	PacketsReceived uint64
	BytesReceived   uint64
	PacketsAcked    uint64 // Delivered notifications
	PacketsLost     uint64 // Lost notifications
	SpuriousLosses  uint64 // packets acknowledged after Lost
	Duplicates      uint64 // OnReceive calls for a packet number already recorded

	RTT       time.Duration // smoothed RTT (peer ack delay removed when reported)
	RTTVar    time.Duration // RTT variation: the jitter estimate
	MinRTT    time.Duration
	LatestRTT time.Duration
	// Loss is the fraction of sent packets lost over the last
	// LossSamples resolved packets (up to 1024).
	Loss        float64
	LossSamples int
}

// NewPacketAcks returns the acknowledgement state of a new connection.
// listener may be nil.
func NewPacketAcks(cfg AckConfig, listener AckListener) *PacketAcks {
	a := &PacketAcks{}
	a.Reset(cfg, listener)
	return a
}

// Reset returns a to the state NewPacketAcks gives, reusing its memory.
func (a *PacketAcks) Reset(cfg AckConfig, listener AckListener) {
	*a = PacketAcks{
		cfg:        cfg.withDefaults(),
		listener:   listener,
		nextPN:     1,
		oldestOpen: 1,
		finalNext:  1,
	}
	a.rtt.initial = a.cfg.InitialRTT
}

// SetListener replaces the listener (nil for none).
func (a *PacketAcks) SetListener(l AckListener) { a.listener = l }

func (a *PacketAcks) clock(now time.Time) time.Duration {
	if !a.started {
		a.started = true
		a.epoch = now
	}
	return now.Sub(a.epoch)
}

// Send numbers an outgoing packet and records it as sent at now with the
// given datagram size (for statistics): it sets h.Seq, h.Ack and h.AckBits
// and returns the packet's 64-bit number, the counter for its AEAD nonce.
// Every call returns a new number, so call it once per datagram, and only
// for a datagram that will be sent.
func (a *PacketAcks) Send(now time.Time, h *proto.Header, size int) uint64 {
	t := a.clock(now)
	pn := a.nextPN
	a.nextPN++
	slot := &a.sent[pn%sentRingSize]
	if slot.pn != 0 {
		a.evict(slot)
	}
	*slot = sentPacket{pn: pn, sentAt: t, size: int32(size), state: stateInFlight}
	w, bit := a.unackedBit(pn)
	*w |= bit
	h.Seq = uint16(pn)
	h.Ack, h.AckBits = a.AckFields()
	a.ackPending = 0
	a.stats.PacketsSent++
	a.stats.BytesSent += uint64(size)
	return pn
}

// evict resolves a packet whose ring slot is needed again.
func (a *PacketAcks) evict(p *sentPacket) {
	if p.state == stateInFlight {
		p.state = stateLost
		a.stats.PacketsLost++
		if a.listener != nil {
			a.listener.Lost(p.pn)
		}
	}
	if a.finalNext <= p.pn {
		// Not yet counted in the loss window (finalize counts the
		// packets below finalNext, in order).
		a.recordVerdict(p.state != stateAcked)
		a.finalNext = p.pn + 1
	}
	if a.oldestOpen <= p.pn {
		a.oldestOpen = p.pn + 1
	}
}

// AckFields returns the Ack and AckBits for an outgoing header: the newest
// packet received and which of the 32 before it were received.
func (a *PacketAcks) AckFields() (ack uint16, bits uint32) {
	return uint16(a.recv.largest), a.recv.ackBits()
}

// AckDelay is how long the newest received packet (the one AckFields
// acknowledges) has waited for our acknowledgement; send it in a
// proto.AckOnlyFrame.
func (a *PacketAcks) AckDelay(now time.Time) time.Duration {
	if !a.recv.any {
		return 0
	}
	d := a.clock(now) - a.recvLargestAt
	return max(d, 0)
}

// AckDelayMicros is AckDelay in the units of proto.AckOnlyFrame, saturated.
func (a *PacketAcks) AckDelayMicros(now time.Time) uint16 {
	us := a.AckDelay(now).Microseconds()
	return uint16(min(us, 1<<16-1))
}

// AcksPending is how many packets arrived since we last sent one. A
// connection that receives much faster than it sends should send an
// ack-only packet before this reaches AckBitsLen, or the peer will see
// packets fall out of the ack window unacknowledged.
func (a *PacketAcks) AcksPending() int { return a.ackPending }

// ExpandSeq returns the full packet number of an incoming header's Seq,
// relative to the largest packet number received, and whether it is fresh
// (not a repeat, not older than the replay window). Check it before
// opening the packet; call OnReceive only after it authenticated.
func (a *PacketAcks) ExpandSeq(seq uint16) (pn uint64, fresh bool) {
	pn = ExpandSeq(a.recv.largest, seq)
	return pn, pn != 0 && a.recv.Fresh(pn)
}

// Fresh reports whether packet pn may still be received: not received
// before, nor older than the replay window. A packet opened ahead of its
// turn (ExpandSeq fresh then) is checked again with it when its turn
// comes: a copy of it, or a newer packet that pushed the window on, may
// have been received in between.
func (a *PacketAcks) Fresh(pn uint64) bool { return pn != 0 && a.recv.Fresh(pn) }

// OnReceive records an authenticated packet with number pn (from
// ExpandSeq) and datagram size, then processes the acknowledgements in h:
// newly acknowledged packets are Delivered, an RTT sample is taken when
// h.Ack is newly acknowledged, and packets are judged lost by the rule in
// the type's documentation. ackDelay is the peer's proto.AckOnlyFrame
// delay if the packet had one, else 0.
//
// It returns false and changes nothing if pn was already recorded or is
// older than the replay window (a duplicate).
func (a *PacketAcks) OnReceive(now time.Time, h *proto.Header, pn uint64, size int, ackDelay time.Duration) bool {
	t := a.clock(now)
	if pn == 0 || !a.recv.Mark(pn) {
		a.stats.Duplicates++
		return false
	}
	if pn == a.recv.largest {
		a.recvLargestAt = t
	}
	a.ackPending++
	a.stats.PacketsReceived++
	a.stats.BytesReceived += uint64(size)
	a.processAcks(t, h.Ack, h.AckBits, ackDelay)
	return true
}

func (a *PacketAcks) processAcks(t time.Duration, ack uint16, bits uint32, ackDelay time.Duration) {
	top, ok := a.resolveAck(ack)
	if !ok {
		return
	}
	if a.ackOne(top) {
		p := &a.sent[top%sentRingSize]
		a.rtt.update(t-p.sentAt, ackDelay)
	}
	// Bit i of bits acknowledges top-1-i (which must be a packet number,
	// at least 1).
	if top <= AckBitsLen {
		bits &= 1<<(top-1) - 1
	}
	for ; bits != 0; bits &= bits - 1 {
		pn := top - 1 - uint64(mbits.TrailingZeros32(bits))
		if a.isUnacked(pn) {
			a.ackOne(pn)
		}
	}
	a.detectLosses(t)
	a.finalize()
}

// resolveAck reconstructs the packet number a peer's Ack field names: the
// newest packet we sent whose low 16 bits match (the nearest to our newest
// packet), except that an Ack equal to the low bits of the largest packet
// already acknowledged means exactly that packet. That exception is what a
// peer that received nothing for a long time keeps sending (its Ack does
// not move while we send on), and expanding it relative to our newest
// packet would alias a packet it never received: a false ack, which would
// hand deltacomp a baseline the peer does not have. It also makes Ack 0
// with nothing acknowledged yet mean "received nothing".
//
// Correct as long as fewer than 65536 of our packets separate the acked
// packet from our newest one when the ack arrives.
func (a *PacketAcks) resolveAck(ack uint16) (uint64, bool) {
	if ack == uint16(a.largestAcked) {
		return a.largestAcked, a.largestAcked != 0
	}
	return expandAck(a.nextPN-1, ack)
}

// ackOne marks pn acknowledged; it reports whether that is news.
func (a *PacketAcks) ackOne(pn uint64) bool {
	p := &a.sent[pn%sentRingSize]
	if p.pn != pn || p.state == stateAcked {
		// Slot reused by a newer packet (pn is long gone) or already acked:
		// a stale ring entry never produces an ack.
		return false
	}
	if p.state == stateLost {
		a.stats.SpuriousLosses++
	}
	p.state = stateAcked
	w, bit := a.unackedBit(pn)
	*w &^= bit
	if pn > a.largestAcked {
		a.largestAcked = pn
	}
	a.stats.PacketsAcked++
	if a.listener != nil {
		a.listener.Delivered(pn)
	}
	return true
}

func (a *PacketAcks) detectLosses(t time.Duration) {
	if a.largestAcked == 0 {
		return
	}
	delay := max(a.rtt.srtt(), a.rtt.latest) * 9 / 8
	delay = max(delay, time.Millisecond)
	thresh := uint64(a.cfg.PacketThreshold)
	pn := a.oldestOpen
	advancing := true
	for ; pn < a.largestAcked; pn++ {
		p := &a.sent[pn%sentRingSize]
		if p.pn != pn || p.state != stateInFlight {
			if advancing {
				a.oldestOpen = pn + 1
			}
			continue
		}
		if a.largestAcked-pn >= thresh || t-p.sentAt >= delay {
			p.state = stateLost
			a.stats.PacketsLost++
			if a.listener != nil {
				a.listener.Lost(pn)
			}
			if advancing {
				a.oldestOpen = pn + 1
			}
			continue
		}
		advancing = false
	}
}

// finalize feeds the loss window with packets that left the ack window.
// The packets from finalNext on are all still in the ring (evict moves
// finalNext past a packet whose slot is taken again) and not yet counted,
// so their verdict is their unacked bit, with no read of the ring.
func (a *PacketAcks) finalize() {
	for a.finalNext+AckBitsLen < a.largestAcked {
		pn := a.finalNext
		a.finalNext++
		a.recordVerdict(a.isUnacked(pn))
	}
}

// unackedBit is the word of unacked holding the bit of pn's ring slot,
// and that bit.
func (a *PacketAcks) unackedBit(pn uint64) (*uint64, uint64) {
	sl := pn % sentRingSize
	return &a.unacked[sl/64], 1 << (sl % 64)
}

// isUnacked reports whether pn's ring slot holds a packet not yet
// acknowledged.
func (a *PacketAcks) isUnacked(pn uint64) bool {
	w, bit := a.unackedBit(pn)
	return *w&bit != 0
}

func (a *PacketAcks) recordVerdict(lost bool) {
	w, b := a.lossPos/64, uint64(1)<<(a.lossPos%64)
	if a.lossN == lossWindowLen {
		if a.lossBits[w]&b != 0 {
			a.lossCount--
		}
	} else {
		a.lossN++
	}
	if lost {
		a.lossBits[w] |= b
		a.lossCount++
	} else {
		a.lossBits[w] &^= b
	}
	a.lossPos = (a.lossPos + 1) % lossWindowLen
}

// RTT returns the smoothed RTT (the initial RTT before any sample).
func (a *PacketAcks) RTT() time.Duration { return a.rtt.srtt() }

// RTTVar returns the RTT variation, the jitter estimate.
func (a *PacketAcks) RTTVar() time.Duration { return a.rtt.rttvar() }

// Loss returns the fraction of packets lost over the last resolved ones.
func (a *PacketAcks) Loss() float64 {
	if a.lossN == 0 {
		return 0
	}
	return float64(a.lossCount) / float64(a.lossN)
}

// NextPacketNumber returns the number the next Send will use.
func (a *PacketAcks) NextPacketNumber() uint64 { return a.nextPN }

// LargestReceived returns the largest packet number received (0 if none).
func (a *PacketAcks) LargestReceived() uint64 { return a.recv.largest }

// Stats returns the counters and estimates.
func (a *PacketAcks) Stats() AckStats {
	s := a.stats
	s.RTT = a.rtt.srtt()
	s.RTTVar = a.rtt.rttvar()
	s.MinRTT = a.rtt.min
	s.LatestRTT = a.rtt.latest
	s.Loss = a.Loss()
	s.LossSamples = a.lossN
	return s
}
