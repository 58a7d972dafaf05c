package netem

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// Packet is a datagram inside an Impairment.
type Packet struct {
	Data []byte
	// Where it goes (egress) or comes from (ingress); the Impairment
	// only carries these.
	AddrPort netip.AddrPort
	Addr     net.Addr

	Enqueued time.Time // when it was offered
	Due      time.Time // when it leaves the queue

	Duplicate bool // an extra copy made by "duplicate"
	Corrupted bool // a bit was flipped
	Reordered bool // sent ahead of the queue by "reorder"

	seq uint64
}

// Impairment is netem's queueing discipline as a pure state machine: it
// reads no clock and does no I/O. Offer datagrams with Enqueue(now, p);
// take them out with Dequeue(now) once they are due (Next says when).
// Given the same spec, seed and sequence of calls it makes the same
// decisions, so it is deterministic in virtual time.
//
// It follows Linux's sch_netem enqueue path: duplicate decision, loss
// decision, the duplicate re-enqueued (with duplication off) ahead of the
// original, corruption, the queue limit, then either the reorder path
// (sent at once, ahead of everything queued, when reorder fires on every
// gap-th datagram) or the delay path (delay from tabledist, plus
// serialisation time under rate, counted from the last queued datagram).
// Correlated draws use netem's get_crandom; Gilbert-Elliott uses its
// state machine. An Impairment is not safe for concurrent use.
type Impairment struct {
	spec Spec
	rng  *rand.Rand

	// Thresholds as netem keeps them: a percentage p is the u32
	// rint(p/100 · (2³²-1)); an event fires when threshold >= draw.
	loss, dup, reorder, corrupt uint32
	geP, geR, geH, geK          uint32
	geBad                       bool
	delayCor, lossCor, dupCor   crandom
	reorderCor, corruptCor      crandom
	dist                        []int16
	latency, jitter             int64 // ns
	limit                       int
	counter                     uint32 // datagrams delayed since the last reorder

	head    []*Packet // reordered: leave first, in order
	tfifo   tfifo     // delayed: leave by Due, then arrival order
	lastDue time.Time // latest Due queued (valid while queued > 0)
	seq     uint64

	stats statsCounter
}

// NewImpairment returns an impairment for spec seeded with seed.
func NewImpairment(spec Spec, seed uint64) *Impairment {
	q := &Impairment{
		spec:    spec,
		rng:     rand.New(rand.NewPCG(seed, 0x7469636b77697265)), // "tickwire"
		loss:    threshold(spec.Loss.Percent),
		dup:     threshold(spec.Duplicate),
		reorder: threshold(spec.Reorder),
		corrupt: threshold(spec.Corrupt),
		latency: int64(spec.Delay),
		jitter:  int64(min(spec.Jitter, maxJitter)),
		limit:   spec.Limit,
	}
	if spec.Loss.Model == LossGE {
		q.geP, q.geR = threshold(spec.Loss.P), threshold(spec.Loss.R)
		q.geH, q.geK = math.MaxUint32-threshold(spec.Loss.OneMinusH), threshold(spec.Loss.OneMinusK)
	}
	if q.limit <= 0 {
		q.limit = DefaultLimit
	}
	if spec.Distribution != Uniform {
		q.dist = table(spec.Distribution)
	}
	// netem seeds each correlation state's last value randomly.
	q.delayCor.init(spec.DelayCorrelation, q.rng)
	q.lossCor.init(spec.Loss.Correlation, q.rng)
	q.dupCor.init(spec.DuplicateCorrelation, q.rng)
	q.reorderCor.init(spec.ReorderCorrelation, q.rng)
	q.corruptCor.init(spec.CorruptCorrelation, q.rng)
	return q
}

// threshold converts a percentage as tc's set_percent does.
func threshold(percent float64) uint32 {
	return uint32(math.RoundToEven(percent / 100 * math.MaxUint32))
}

// crandom is netem's correlated random source (get_crandom): with rho
// the correlation, each value is (1-rho)·fresh + rho·previous.
type crandom struct {
	rho, last uint32
}

func (c *crandom) init(percent float64, rng *rand.Rand) {
	c.rho = threshold(percent)
	c.last = rng.Uint32()
}

func (c *crandom) next(rng *rand.Rand) uint32 {
	v := rng.Uint32()
	if c.rho == 0 {
		return v
	}
	rho := uint64(c.rho) + 1
	c.last = uint32((uint64(v)*(1<<32-rho) + uint64(c.last)*rho) >> 32)
	return c.last
}

// Enqueue offers p at time now. The impairment takes ownership of
// p.Data: it may flip a bit in it and may copy it for a duplicate.
func (q *Impairment) Enqueue(now time.Time, p Packet) {
	q.stats.offered++
	p.Enqueued = now
	q.enqueue(now, &p, true)
}

func (q *Impairment) enqueue(now time.Time, p *Packet, mayDuplicate bool) {
	count := 1
	if mayDuplicate && q.dup != 0 && q.dup >= q.dupCor.next(q.rng) {
		count++
	}
	if q.lossEvent() {
		count--
	}
	if count == 0 {
		q.stats.dropped++
		return
	}
	if count > 1 {
		d := *p
		d.Data = append([]byte(nil), p.Data...)
		d.Duplicate = true
		q.stats.duplicated++
		q.enqueue(now, &d, false) // as netem: the copy goes first, never duplicated again
	}
	if q.corrupt != 0 && q.corrupt >= q.corruptCor.next(q.rng) {
		if len(p.Data) > 0 {
			p.Data[q.rng.IntN(len(p.Data))] ^= 1 << q.rng.IntN(8)
		}
		p.Corrupted = true
		q.stats.corrupted++
	}
	if q.Len() >= q.limit {
		q.stats.overlimit++
		return
	}
	q.seq++
	p.seq = q.seq
	if q.spec.Gap == 0 || q.counter < q.spec.Gap-1 || q.reorder < q.reorderCor.next(q.rng) {
		delay := q.tabledist()
		at := now
		if q.spec.Rate != 0 {
			if q.Len() > 0 {
				// The last queued datagram is the reference: the time
				// until it leaves counts against this one's delay.
				delay = max(0, delay-int64(q.lastDue.Sub(now)))
				at = q.lastDue
			}
			delay += q.packetTime(len(p.Data))
		}
		p.Due = at.Add(time.Duration(delay))
		q.counter++
		heap.Push(&q.tfifo, p)
	} else {
		p.Due = now
		p.Reordered = true
		q.counter = 0
		q.head = append(q.head, p)
		q.stats.reordered++
	}
	if q.Len() == 1 || p.Due.After(q.lastDue) {
		q.lastDue = p.Due
	}
}

func (q *Impairment) lossEvent() bool {
	switch q.spec.Loss.Model {
	case LossRandom:
		return q.loss != 0 && q.loss >= q.lossCor.next(q.rng)
	case LossGE:
		// netem's loss_gilb_ell: the state changes for the next datagram;
		// this one is judged by the state it arrived in.
		if !q.geBad {
			if q.rng.Uint32() < q.geP {
				q.geBad = true
			}
			return q.rng.Uint32() < q.geK
		}
		if q.rng.Uint32() < q.geR {
			q.geBad = false
		}
		return q.rng.Uint32() > q.geH
	}
	return false
}

// tabledist is netem's: the delay in ns, uniform over [mu-sigma,
// mu+sigma) without a table, else mu + sigma·table[rnd]/scale.
func (q *Impairment) tabledist() int64 {
	mu, sigma := q.latency, q.jitter
	if sigma == 0 {
		return mu
	}
	rnd := q.delayCor.next(q.rng)
	if q.dist == nil {
		return int64(uint64(rnd)%uint64(2*sigma)) + mu - sigma
	}
	t := int64(q.dist[int(rnd)%len(q.dist)])
	x := (sigma % distScale) * t
	if x >= 0 {
		x += distScale / 2
	} else {
		x -= distScale / 2
	}
	return x/distScale + (sigma/distScale)*t + mu
}

// packetTime is the serialisation time of a datagram of n bytes.
func (q *Impairment) packetTime(n int) int64 {
	l := int64(n) + int64(q.spec.PacketOverhead)
	if cs := int64(q.spec.CellSize); cs > 0 {
		cells := l / cs
		if l > cells*cs {
			cells++
		}
		l = cells * (cs + int64(q.spec.CellOverhead))
	}
	l = max(l, 0)
	return int64(float64(l) * 1e9 / float64(q.spec.Rate))
}

// Len is the number of datagrams queued.
func (q *Impairment) Len() int { return len(q.head) + len(q.tfifo) }

// Next reports when the next datagram is due; ok is false when none is
// queued.
func (q *Impairment) Next() (due time.Time, ok bool) {
	if len(q.head) > 0 {
		return q.head[0].Due, true
	}
	if len(q.tfifo) > 0 {
		return q.tfifo[0].Due, true
	}
	return time.Time{}, false
}

// Dequeue returns the next datagram due at or before now: reordered
// datagrams first, then delayed ones by due time. It records the delay
// the datagram had (now minus when it was offered).
func (q *Impairment) Dequeue(now time.Time) (Packet, bool) {
	var p *Packet
	switch {
	case len(q.head) > 0:
		p = q.head[0]
		q.head[0] = nil
		q.head = q.head[1:]
		if len(q.head) == 0 {
			q.head = nil
		}
	case len(q.tfifo) > 0 && !q.tfifo[0].Due.After(now):
		p = heap.Pop(&q.tfifo).(*Packet)
	default:
		return Packet{}, false
	}
	if q.spec.Rate != 0 && q.Len() > 0 && p.Due.Equal(q.lastDue) {
		q.lastDue = q.maxDue()
	}
	q.stats.forward(now.Sub(p.Enqueued), len(p.Data))
	return *p, true
}

func (q *Impairment) maxDue() time.Time {
	var m time.Time
	for _, p := range q.head {
		if p.Due.After(m) {
			m = p.Due
		}
	}
	for _, p := range q.tfifo {
		if p.Due.After(m) {
			m = p.Due
		}
	}
	return m
}

// Stats returns the counters so far.
func (q *Impairment) Stats() Stats {
	s := q.stats.snapshot()
	s.Queued = q.Len()
	return s
}

// tfifo orders delayed datagrams by due time, then by arrival, like
// netem's time-sorted queue.
type tfifo []*Packet

func (h tfifo) Len() int { return len(h) }
func (h tfifo) Less(i, j int) bool {
	if !h[i].Due.Equal(h[j].Due) {
		return h[i].Due.Before(h[j].Due)
	}
	return h[i].seq < h[j].seq
}
func (h tfifo) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *tfifo) Push(x any)   { *h = append(*h, x.(*Packet)) }
func (h *tfifo) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
