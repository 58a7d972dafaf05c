package session

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// tickSink records the tick at which each numbered message arrived.
type tickSink struct {
	at   map[int]int
	tick *int
}

func (c *tickSink) Message(m *Message, _ *PacketInfo) {
	c.at[int(m.Data[0])|int(m.Data[1])<<8] = *c.tick
}
func (c *tickSink) Frame(proto.FrameType, []byte, *PacketInfo) error   { return nil }
func (c *tickSink) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte { return b }
func (c *tickSink) Delivered(uint64)                                   {}
func (c *tickSink) Lost(uint64)                                        {}

// lossyOutput puts a session's packets on a one-way link of 2 ticks
// that loses 5 % of them.
type lossyOutput struct {
	r    *rand.Rand
	tick *int
	q    *[]inflight
}

type inflight struct {
	p   []byte
	due int
}

func (o lossyOutput) Buffer() []byte { return make([]byte, 0, 1500) }
func (o lossyOutput) Emit(p []byte) {
	if o.r.IntN(100) >= 5 {
		*o.q = append(*o.q, inflight{p, *o.tick + 2})
	}
}

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
		r := rand.New(rand.NewPCG(1, 2))
		tick := 0
		got := &tickSink{at: map[int]int{}, tick: &tick}
		nop := &tickSink{at: map[int]int{}, tick: &tick}
		a, _ := New(Config{ID: 7, MaxPacket: 1200, TxKey: &k1, RxKey: &k2, Heartbeat: time.Second, Timeout: time.Minute, Handler: nop}, now)
		b, _ := New(Config{ID: 7, MaxPacket: 1200, TxKey: &k2, RxKey: &k1, Heartbeat: time.Second, Timeout: time.Minute, Handler: got}, now)
		var ab, ba []inflight
		deliver := func(q []inflight, to *Session) []inflight {
			rest := q[:0]
			for _, f := range q {
				if f.due > tick {
					rest = append(rest, f)
					continue
				}
				h, _, _ := proto.ParseHeader(f.p)
				pn, payload, _, ok := to.Open(f.p, &h)
				if !ok {
					continue
				}
				to.Receive(time.Now(), &h, pn, len(f.p), payload)
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
				a.Send(Reliable, 1, false, 0, msg)
				sentAt[tick] = tick
			}
			a.Tick(now, Ticks{}, false, lossyOutput{r, &tick, &ab})
			b.Tick(now, Ticks{}, false, lossyOutput{r, &tick, &ba})
			ab = deliver(ab, b)
			ba = deliver(ba, a)
		}
		hist := map[int]int{}
		for i := range 2900 {
			d, ok := got.at[i]
			if !ok {
				t.Fatalf("message %d never arrived", i)
			}
			hist[d-i]++
		}
		t.Logf("delivery delay in ticks: %v; repeats %d", hist, a.Stats().ReliableRepeats)
		if fast := hist[2] + hist[3]; fast < 2900*98/100 {
			t.Fatalf("%d of 2900 messages within 3 ticks, want 98 %%: %v", fast, hist)
		}
	})
}
