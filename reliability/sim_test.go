package reliability

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// linkProfile is a netem-like impairment: delay ± jitter (uniform), loss,
// duplication and reordering (a reordered packet skips the base delay,
// overtaking the ones in flight).
type linkProfile struct {
	Delay     time.Duration
	Jitter    time.Duration
	Loss      float64
	Duplicate float64
	Reorder   float64
}

// simLink is a deterministic one-way link in virtual time.
type simLink struct {
	prof  linkProfile
	rng   *rand.Rand
	q     packetHeap
	order uint64

	sent, dropped, duplicated, reordered int
}

func newSimLink(p linkProfile, seed uint64) *simLink {
	return &simLink{prof: p, rng: rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1))}
}

type inflight struct {
	at    time.Time
	order uint64
	data  []byte
}

type packetHeap []inflight

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].order < h[j].order
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(inflight)) }
func (h *packetHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (l *simLink) delay() time.Duration {
	d := l.prof.Delay
	if l.prof.Jitter > 0 {
		d += time.Duration(l.rng.Int64N(int64(2*l.prof.Jitter)+1)) - l.prof.Jitter
	}
	if l.prof.Reorder > 0 && l.rng.Float64() < l.prof.Reorder {
		l.reordered++
		d = l.prof.Delay / 4
	}
	return max(d, 0)
}

// send puts a copy of pkt on the link at now.
func (l *simLink) send(now time.Time, pkt []byte) {
	l.sent++
	if l.rng.Float64() < l.prof.Loss {
		l.dropped++
		return
	}
	copies := 1
	if l.rng.Float64() < l.prof.Duplicate {
		copies = 2
		l.duplicated++
	}
	for range copies {
		l.order++
		heap.Push(&l.q, inflight{at: now.Add(l.delay()), order: l.order, data: append([]byte(nil), pkt...)})
	}
}

// receive pops the next packet due by now.
func (l *simLink) receive(now time.Time) ([]byte, bool) {
	if len(l.q) == 0 || l.q[0].at.After(now) {
		return nil, false
	}
	return heap.Pop(&l.q).(inflight).data, true
}
