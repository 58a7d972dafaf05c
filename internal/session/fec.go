package session

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/klauspost/reedsolomon"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/reliability"
)

// Forward error correction over the reliable frames, the alternative to
// copies (see copies.go) on lossy links: the reliable frames with new
// data of up to fecMembers packets form a group, and Reed–Solomon parity
// shards over them (proto.ParityFrame) follow the group's last packet. A
// receiver that lost some of the group's packets rebuilds their reliable
// frames from the ones it has and the parity shards, as long as it holds
// as many shards as it lost: m parity shards cover any m losses among
// k + m packets, where copies need k × m more packets for the same.

// fecMembers bounds a group; a group also closes at the end of the tick
// after the one it opened in, so that a lost packet waits at most about
// a tick for its parity.
const fecMembers = 4

// fecRing is how many received packets' reliable frames a receiver keeps
// for rebuilding: more than the packets a group can span.
const fecRing = 64

// parityFor says how many parity shards a group of k members gets: the
// fewest that make losing more packets than there are shards, among the
// k + m that go out, less likely than residualLoss at the loss rate.
func parityFor(loss float64, k int) int {
	for m := 1; m < proto.MaxParityShards; m++ {
		if lossBeyond(loss, k+m, m) <= reliability.ResidualLoss {
			return m
		}
	}
	return proto.MaxParityShards
}

// lossBeyond is the probability that more than m of n packets are lost,
// each with probability p.
func lossBeyond(p float64, n, m int) float64 {
	sum := 0.0
	for i := m + 1; i <= n; i++ {
		sum += binomial(n, i) * math.Pow(p, float64(i)) * math.Pow(1-p, float64(n-i))
	}
	return sum
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// encoders caches a Reed–Solomon codec per group shape, made on first
// use (codecs are safe for concurrent use).
var encoders struct {
	sync.Mutex
	byShape [proto.MaxParityMembers + 1][proto.MaxParityShards + 1]reedsolomon.Encoder
}

func encoder(k, m int) reedsolomon.Encoder {
	encoders.Lock()
	defer encoders.Unlock()
	e := encoders.byShape[k][m]
	if e == nil {
		var err error
		if e, err = reedsolomon.New(k, m); err != nil {
			panic(err) // 1 ≤ k ≤ 16, 1 ≤ m ≤ 8 always make a codec
		}
		encoders.byShape[k][m] = e
	}
	return e
}

// fecSender collects one group and builds its parity frames.
type fecSender struct {
	pns    [fecMembers]uint64
	lens   [fecMembers]int
	data   []byte // the members' frame data, back to back
	n      int
	opened uint64 // the tick count when the group opened
	shards [][]byte
	gaps   []byte
	lensLE []byte
}

// fits reports whether a reliable frame of n data bytes can be a member:
// its parity frame must fit one packet's room.
func (f *fecSender) fits(n, room int) bool {
	return n <= room-proto.ParityOverhead(fecMembers)
}

// add makes the reliable frame data of packet pn a member. A full group,
// or one whose last member is too far before pn (the gap field is one
// byte), is closed first, through flush.
func (f *fecSender) add(pn uint64, data []byte, tick uint64, flush func()) {
	if f.n == fecMembers || f.n > 0 && pn-f.pns[f.n-1] > 255 {
		flush()
	}
	if f.n == 0 {
		f.opened = tick
		f.data = f.data[:0]
	}
	f.pns[f.n], f.lens[f.n] = pn, len(data)
	f.data = append(f.data, data...)
	f.n++
}

// due reports whether the group should close now: full, or open since an
// earlier tick than the last one.
func (f *fecSender) due(tick uint64) bool {
	return f.n == fecMembers || f.n > 0 && tick > f.opened
}

// close appends the group's m parity frames to b and empties the group.
func (f *fecSender) close(b []byte, m int) []byte {
	k := f.n
	f.n = 0
	longest := 0
	for _, l := range f.lens[:k] {
		longest = max(longest, l)
	}
	if len(f.shards) < fecMembers+proto.MaxParityShards {
		f.shards = make([][]byte, fecMembers+proto.MaxParityShards)
		for i := range f.shards {
			f.shards[i] = make([]byte, 0, proto.MaxPacketSizeLimit)
		}
	}
	off := 0
	for i := range k {
		s := f.shards[i][:longest]
		copy(s, f.data[off:off+f.lens[i]])
		clear(s[f.lens[i]:])
		f.shards[i] = s
		off += f.lens[i]
	}
	for j := range m {
		f.shards[k+j] = f.shards[k+j][:longest]
	}
	if err := encoder(k, m).Encode(f.shards[:k+m]); err != nil {
		return b // shapes and sizes are ours: cannot fail
	}
	f.gaps, f.lensLE = f.gaps[:0], f.lensLE[:0]
	for i := range k {
		if i > 0 {
			f.gaps = append(f.gaps, byte(f.pns[i]-f.pns[i-1]))
		}
		f.lensLE = binary.LittleEndian.AppendUint16(f.lensLE, uint16(f.lens[i]))
	}
	for j := range m {
		p := proto.ParityFrame{First: uint32(f.pns[0]), Shards: uint8(m), Index: uint8(j), Gaps: f.gaps, Lens: f.lensLE, Shard: f.shards[k+j]}
		b, _ = p.Append(b)
	}
	return b
}

// fecReceiver keeps the reliable frames of the last fecRing packets and
// the parity shards of the groups that may still need them. It is
// allocated when the first parity frame arrives.
type fecReceiver struct {
	ring    [fecRing]ringFrame
	groups  [4]parityGroup
	next    int // the group slot to reuse
	shards  [][]byte
	rebuilt [][]byte
}

type ringFrame struct {
	pn   uint64
	n    int // 0: no reliable frame (or none kept)
	data [proto.MaxPacketSizeLimit]byte
}

// parityGroup is one group's parity shards received so far.
type parityGroup struct {
	first   uint64
	k, m    int
	done    bool
	pns     [proto.MaxParityMembers]uint64
	lens    [proto.MaxParityMembers]int
	longest int
	have    [proto.MaxParityShards]bool
	shards  [proto.MaxParityShards][proto.MaxPacketSizeLimit]byte
}

// store keeps packet pn's reliable frame data (nil: it had none).
func (r *fecReceiver) store(pn uint64, data []byte) {
	e := &r.ring[pn%fecRing]
	e.pn, e.n = pn, copy(e.data[:], data)
}

// held returns packet pn's reliable frame data if it is kept.
func (r *fecReceiver) held(pn uint64) ([]byte, bool) {
	e := &r.ring[pn%fecRing]
	if e.pn != pn || e.n == 0 {
		return nil, false
	}
	return e.data[:e.n], true
}

// parity takes one parity frame that arrived in packet pn (its members
// are earlier packets) and returns the reliable frame data it lets the
// receiver rebuild, if any (valid until the next call). The frame was
// validated by its parser; a frame that contradicts an earlier shard of
// its group is ignored.
func (r *fecReceiver) parity(pn uint64, f *proto.ParityFrame) [][]byte {
	r.rebuilt = r.rebuilt[:0]
	back := uint64(uint32(pn) - f.First)
	if back == 0 || back > fecRing || back > pn {
		return nil // not an earlier packet, or too old to rebuild
	}
	first, k := pn-back, f.Members()
	span := uint64(0)
	for _, g := range f.Gaps {
		span += uint64(g)
	}
	if span >= back {
		return nil // a member at or after this packet
	}
	g := r.group(first, k, int(f.Shards), f)
	if g == nil || g.done || g.have[f.Index] || len(f.Shard) != g.longest {
		return nil
	}
	g.have[f.Index] = true
	copy(g.shards[f.Index][:], f.Shard)
	missing := 0
	for i := range k {
		d, ok := r.held(g.pns[i])
		if !ok {
			missing++
		} else if len(d) != g.lens[i] {
			g.done = true // the parity is not over the frames we hold
			return nil
		}
	}
	if missing == 0 {
		g.done = true
		return nil
	}
	received := 0
	for _, h := range g.have[:g.m] {
		if h {
			received++
		}
	}
	if missing > received {
		return nil
	}
	if len(r.shards) < proto.MaxParityMembers+proto.MaxParityShards {
		r.shards = make([][]byte, proto.MaxParityMembers+proto.MaxParityShards)
	}
	sh := r.shards[:k+g.m]
	for i := range k {
		d, ok := r.held(g.pns[i])
		e := &r.ring[g.pns[i]%fecRing]
		if !ok {
			// Rebuilt into the ring slot itself.
			e.pn, e.n = g.pns[i], 0
			sh[i] = e.data[:0]
			continue
		}
		clear(e.data[len(d):g.longest])
		sh[i] = e.data[:g.longest]
	}
	for j := range g.m {
		sh[k+j] = nil
		if g.have[j] {
			sh[k+j] = g.shards[j][:g.longest]
		}
	}
	if err := encoder(k, g.m).ReconstructData(sh); err != nil {
		return nil
	}
	g.done = true
	for i := range k {
		e := &r.ring[g.pns[i]%fecRing]
		if e.pn == g.pns[i] && e.n == 0 {
			e.n = g.lens[i]
			r.rebuilt = append(r.rebuilt, e.data[:e.n])
		}
	}
	return r.rebuilt
}

// group finds the group that starts at first, or starts one in the
// oldest slot. A shard whose group differs from an earlier shard's
// (members, lengths, shard count) is refused.
func (r *fecReceiver) group(first uint64, k, m int, f *proto.ParityFrame) *parityGroup {
	for i := range r.groups {
		g := &r.groups[i]
		if g.k != 0 && g.first == first {
			if g.k != k || g.m != m {
				return nil
			}
			pn := first
			for j := range k {
				if j > 0 {
					pn += uint64(f.Gaps[j-1])
				}
				if g.pns[j] != pn || g.lens[j] != f.MemberLen(j) {
					return nil
				}
			}
			return g
		}
	}
	g := &r.groups[r.next]
	r.next = (r.next + 1) % len(r.groups)
	*g = parityGroup{first: first, k: k, m: m}
	pn := first
	for j := range k {
		if j > 0 {
			pn += uint64(f.Gaps[j-1])
		}
		g.pns[j], g.lens[j] = pn, f.MemberLen(j)
		g.longest = max(g.longest, g.lens[j])
	}
	return g
}

// protect gives the reliable frame just written into the packet being
// built its redundancy: a place in the parity group, or copies.
// Only frames with new data (or retransmissions) get any, and only on a
// link that calls for more than one copy (copiesFor).
func (s *Session) protect(frame []byte, room int) {
	f, _, err := proto.ParseReliableFrame(frame)
	if err != nil || !pushes(f.Data) {
		return // nothing written, or acks only
	}
	n := copiesFor(s.acks.Stats())
	if n <= 1 {
		return
	}
	if s.cfg.FEC && s.fecTx.fits(len(f.Data), room) {
		s.fecTx.add(s.acks.NextPacketNumber(), f.Data, s.tickCount, s.closeGroup)
		return
	}
	s.copies.noteSent(frame, room, n)
}

// closeGroup closes the parity group: its parity frames join the owed
// copies, to go in packets of their own.
func (s *Session) closeGroup() {
	m := 1
	if loss := s.acks.Stats().LossEstimate(); loss > 0 {
		m = parityFor(loss, s.fecTx.n)
	}
	s.copies.owed = s.fecTx.close(s.copies.owed, m)
}

// parity takes a parity frame of packet pn and feeds the reliable frames
// it rebuilds to the reliable channel.
func (s *Session) parity(now time.Time, pn uint64, f *proto.ParityFrame) {
	if s.fecRx == nil {
		s.fecRx = new(fecReceiver)
	}
	for _, d := range s.fecRx.parity(pn, f) {
		if s.rel.Input(now, d) != nil {
			s.stats.BadFrames++
			continue
		}
		s.stats.ReliableRebuilt++
	}
}
