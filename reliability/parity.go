package reliability

import (
	"encoding/binary"
	"sync"

	"github.com/klauspost/reedsolomon"

	"github.com/tickwire/tickwire/proto"
)

// Forward error correction over the reliable frames, in place of copies
// on lossy paths: each packet that carries new reliable data (KCP push
// segments) is a member, and parity frames (proto.ParityFrame) follow,
// each a Reed–Solomon parity shard over the last members sent: a sliding
// window, not closed groups. Consecutive windows overlap, so a member is
// covered by several parity frames, and a receiver solves them together
// (ParityReceiver): m parity frames rebuild any m lost members they
// cover between them, where closed groups need each group's losses
// covered by that group's own parity. A lost member costs the wait for
// the next parity frame; at a rate of one parity frame per two members
// that is a tick for half of them and nothing for the other half. (A
// parity frame that overtakes one of its members on the path solves for
// a lost one when that member arrives: ParityReceiver.Store.)
//
// Every parity frame is one shard of klauspost/reedsolomon's systematic
// code for its window, so a receiver that decodes each frame's group on
// its own rebuilds a single loss from it.

// Sliding window bounds.
const (
	// ParityWindow is how many of the last members a parity frame
	// covers.
	ParityWindow = 6
	// ParityRing is how many packets back a receiver keeps reliable
	// frames for rebuilding, and so how far back of its own packet a
	// parity frame's first member may lie.
	ParityRing = 32
	// parityRows is the shard count every parity frame declares; the
	// sender rotates the shard index over it, so that two overlapping
	// windows give independent equations.
	parityRows = proto.MaxParityShards
	// maxEquations bounds the parity frames a receiver keeps unsolved.
	maxEquations = 8
	// maxUnknowns bounds the lost members one unsolved equation names.
	maxUnknowns = 2 * ParityWindow
	// maxWaitTicks is how many ticks after its own a member waits at
	// most for a parity frame when the rate owes none yet. One a tick is
	// how a steady stream's members come, and with one parity frame per
	// two members the rate covers them; the second tick is for a stream
	// whose ticks carry two members, then none (a message a tick sent
	// from another clock): with a wait of one tick each lone member got
	// a parity frame of its own, and the 5 % echo over real sockets sent
	// 3 % more bytes.
	maxWaitTicks = 1
)

// parityCoef returns the coefficients of parity shard index of the
// systematic (k, parityRows) code: shard = Σ coef[i] · member i. They
// are read off the codec by encoding unit vectors, once per k.
func parityCoef(k, index int) []byte {
	coefs.Do(func() {
		for k := 1; k <= proto.MaxParityMembers; k++ {
			enc, err := reedsolomon.New(k, parityRows)
			if err != nil {
				panic(err) // 1 ≤ k ≤ 16, 8 parity shards: always a codec
			}
			shards := make([][]byte, k+parityRows)
			for i := range shards {
				shards[i] = make([]byte, 1)
			}
			for i := range k {
				for j := range k {
					shards[j][0] = 0
				}
				shards[i][0] = 1
				if err := enc.Encode(shards); err != nil {
					panic(err)
				}
				for j := range parityRows {
					coefs.byShape[k][j][i] = shards[k+j][0]
				}
			}
		}
	})
	return coefs.byShape[k][index][:k]
}

var coefs struct {
	sync.Once
	byShape [proto.MaxParityMembers + 1][parityRows][proto.MaxParityMembers]byte
}

// ParitySender keeps the reliable frame data of the last members sent
// and says when a parity frame is due. Its zero value is ready; it
// allocates its window (about 9 KB) at the first member. Not safe for
// concurrent use.
type ParitySender struct {
	ring  *[ParityWindow]member
	next  int // ring slot of the next member
	count int // members in the ring
	// credit is parity frames owed (a rate's worth per member);
	// uncovered the members no parity frame has covered yet, the first
	// of them added at tick since.
	credit    float64
	uncovered int
	since     uint64
	index     uint8
	gaps      []byte
	lens      []byte
	shard     []byte
}

type member struct {
	pn   uint64
	n    int
	data [proto.MaxPacketSizeLimit]byte
}

// Fits reports whether a reliable frame of n data bytes can be a member:
// a parity frame over a full window of members that long must fit one
// packet's payload room.
func (s *ParitySender) Fits(n, room int) bool {
	return n <= room-proto.ParityOverhead(ParityWindow)
}

// Add makes data, the reliable frame data of packet pn sent in tick,
// a member, owed rate parity frames (ParityDue). data is copied.
func (s *ParitySender) Add(pn uint64, data []byte, tick uint64, rate float64) {
	if s.ring == nil {
		s.ring = new([ParityWindow]member)
	}
	m := &s.ring[s.next]
	m.pn, m.n = pn, copy(m.data[:], data)
	s.next = (s.next + 1) % len(s.ring)
	s.count = min(s.count+1, len(s.ring))
	if s.uncovered == 0 {
		s.since = tick
	}
	s.uncovered++
	s.credit += rate
}

// ParityDue reports whether a parity frame should go now, at the end of
// a tick's (or of a no-delay flush's) packets: when a whole frame is
// owed, or when a member has waited maxWaitTicks ticks after its own,
// or after a flush (a no-delay sender wants its loss repaired at once,
// not with the next message).
func (s *ParitySender) ParityDue(tick uint64, flush bool) bool {
	if s.count == 0 {
		return false
	}
	return s.credit >= 1 || s.uncovered > 0 && (flush || tick > s.since+maxWaitTicks)
}

// AppendParity appends the parity frame over the last members (at most
// ParityWindow, none more than ParityRing packets before pn, the packet
// it will travel in) to b, and takes it off what is owed.
func (s *ParitySender) AppendParity(b []byte, pn uint64) []byte {
	s.uncovered = 0
	s.credit = max(s.credit-1, 0)
	if s.count == 0 {
		return b
	}
	first := s.count // oldest member to cover, counted back from the newest
	for first > 1 {
		m := &s.ring[(s.next-first+len(s.ring))%len(s.ring)]
		if pn-m.pn < ParityRing {
			break
		}
		first--
	}
	newest := &s.ring[(s.next-1+len(s.ring))%len(s.ring)]
	if pn-newest.pn >= ParityRing {
		return b // nothing recent enough
	}
	k := first
	coef := parityCoef(k, int(s.index))
	idx := s.index
	s.index = (s.index + 1) % parityRows
	longest := 0
	s.gaps, s.lens = s.gaps[:0], s.lens[:0]
	var prev uint64
	for i := range k {
		m := &s.ring[(s.next-k+i+len(s.ring))%len(s.ring)]
		longest = max(longest, m.n)
		if i > 0 {
			s.gaps = append(s.gaps, byte(m.pn-prev))
		}
		prev = m.pn
		s.lens = binary.LittleEndian.AppendUint16(s.lens, uint16(m.n))
	}
	if cap(s.shard) < proto.MaxPacketSizeLimit {
		s.shard = make([]byte, proto.MaxPacketSizeLimit)
	}
	shard := s.shard[:longest]
	clear(shard)
	var firstPN uint64
	for i := range k {
		m := &s.ring[(s.next-k+i+len(s.ring))%len(s.ring)]
		if i == 0 {
			firstPN = m.pn
		}
		gfMulAdd(shard, m.data[:m.n], coef[i])
	}
	f := proto.ParityFrame{First: uint32(firstPN), Shards: parityRows, Index: idx, Gaps: s.gaps, Lens: s.lens, Shard: shard}
	b, _ = f.Append(b) // members within 255 of each other and ≤ MaxPacketSizeLimit: valid
	return b
}
