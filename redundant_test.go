package tickwire

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
)

type tickSink struct {
	at   map[int]int
	tick *int
}

func (c *tickSink) message(m *Message) { c.at[int(m.Data[0])|int(m.Data[1])<<8] = *c.tick }

// TestRedundantReliableDelivery runs two sessions in virtual time over a
// link with 2 ticks of one-way delay and 5 % loss each way, a 1 KB
// reliable message every tick, and checks the repeat of new reliable data
// (reliableCopies): a single loss costs one tick, so at least 98 % of
// messages arrive within one tick of the base delay (the rest wait behind
// a message whose both copies were lost).
func TestRedundantReliableDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k1, k2 [32]byte
		k1[0], k2[0] = 1, 2
		now := time.Now()
		a, _ := newSession(7, 1200, &k1, &k2, now)
		b, _ := newSession(7, 1200, &k2, &k1, now)
		r := rand.New(rand.NewPCG(1, 2))
		tick := 0
		got := &tickSink{at: map[int]int{}, tick: &tick}
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		// one-way delay of 2 ticks
		type inflight struct {
			p   []byte
			due int
		}
		var ab, ba []inflight
		deliver := func(q []inflight, to *session, sink *tickSink) []inflight {
			rest := q[:0]
			for _, f := range q {
				if f.due > tick {
					rest = append(rest, f)
					continue
				}
				h, _, _ := proto.ParseHeader(f.p)
				pn, payload, d := to.open(f.p, &h)
				if d >= 0 {
					continue
				}
				to.receive(time.Now(), &h, pn, len(f.p), payload, sink)
			}
			return rest
		}
		sentAt := map[int]int{}
		for tick = 0; tick < 3000; tick++ {
			time.Sleep(time.Second / 60)
			now := time.Now()
			if tick < 2900 {
				msg := make([]byte, 1024)
				msg[0], msg[1] = byte(tick), byte(tick>>8)
				a.send(Reliable, 1, false, 0, msg)
				sentAt[tick] = tick
			}
			a.tick(now, packetFields{}, time.Second, false, func() []byte { return make([]byte, 0, 1500) }, func(p []byte) {
				if r.IntN(100) >= 5 {
					ab = append(ab, inflight{p, tick + 2})
				}
			})
			b.tick(now, packetFields{}, time.Second, false, func() []byte { return make([]byte, 0, 1500) }, func(p []byte) {
				if r.IntN(100) >= 5 {
					ba = append(ba, inflight{p, tick + 2})
				}
			})
			ab = deliver(ab, b, got)
			ba = deliver(ba, a, nop)
		}
		hist := map[int]int{}
		for i := range 2900 {
			d, ok := got.at[i]
			if !ok {
				t.Fatalf("message %d never arrived", i)
			}
			hist[d-i]++
		}
		t.Logf("delivery delay in ticks: %v; repeats %d", hist, a.stats.ReliableRepeats)
		if fast := hist[2] + hist[3]; fast < 2900*98/100 {
			t.Fatalf("%d of 2900 messages within 3 ticks, want 98 %%: %v", fast, hist)
		}
	})
}
