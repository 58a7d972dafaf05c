package reliability

import (
	"encoding/binary"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

const testTick = time.Second / 60

// sparseEcho sends a message from a to b every third tick over spec and
// returns each message's delivery latency. Between messages the ticks
// have nothing new to send: whether KCP's flush runs then is up to the
// flush timer (or, with flushAlways, it runs at every tick as it did
// before the timer).
func sparseEcho(t *testing.T, spec string, seed uint64, flushAlways bool) []time.Duration {
	const total = 600
	var lat []time.Duration
	synctest.Test(t, func(t *testing.T) {
		a := newTestPeer("a", 9, ReliableConfig{})
		b := newTestPeer("b", 9, ReliableConfig{})
		a.flushAlways, b.flushAlways = flushAlways, flushAlways
		sp := netem.MustParse(spec)
		ab, ba := netem.NewImpairment(sp, seed), netem.NewImpairment(sp, seed+100)
		sent := make([]time.Time, 0, total)
		b.onMessage = func(now time.Time, msg []byte) error {
			lat = append(lat, now.Sub(sent[binary.LittleEndian.Uint32(msg)]))
			return nil
		}
		tick := 0
		runPair(t, a, b, ab, ba, testTick, 5*time.Minute, func(now time.Time) {
			if tick%3 == 0 && len(sent) < total {
				var m [64]byte
				binary.LittleEndian.PutUint32(m[:], uint32(len(sent)))
				if err := a.rel.Send(m[:]); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, now)
			}
			tick++
		}, func() bool { return len(lat) == total })
	})
	return lat
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// TestUpdateRetransmitsInTime: leaving KCP alone between messages must
// not delay its retransmissions: over lossy links the delivery latency
// with the flush timer is no worse (within a tick) than with KCP flushed
// at every tick. Single runs diverge chaotically once one retransmission
// leaves a tick apart (every later random draw of the link changes), so
// the latencies of several seeds are pooled.
func TestUpdateRetransmitsInTime(t *testing.T) {
	for _, spec := range []string{"delay 25ms 5ms loss 10%", "delay 50ms 10ms loss 25% reorder 5%"} {
		var timer, every []time.Duration
		for seed := uint64(1); seed <= 8; seed++ {
			timer = append(timer, sparseEcho(t, spec, seed, false)...)
			every = append(every, sparseEcho(t, spec, seed, true)...)
		}
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			got, ref := quantile(timer, q), quantile(every, q)
			t.Logf("%s: q%.3f %v with the timer, %v flushing every tick", spec, q, got, ref)
			if got > ref+testTick {
				t.Errorf("%s: q%.3f latency %v with the flush timer, %v flushing every tick", spec, q, got, ref)
			}
		}
	}
}

// TestUpdateLeavesFlushFree: a tick's Update with data in flight and no
// retransmission due does not flush, so a no-delay send right after it
// leaves at once instead of waiting for KCP's 10 ms interval.
func TestUpdateLeavesFlushFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := NewReliable(5, ReliableConfig{})
		if err != nil {
			t.Fatal(err)
		}
		take := func() int {
			n := r.Pending()
			r.AppendFrame(nil, 1<<12)
			return n
		}
		if err := r.Send([]byte("first")); err != nil {
			t.Fatal(err)
		}
		r.Update(time.Now())
		if take() == 0 {
			t.Fatal("a sent message did not leave at the tick's Update")
		}
		if !r.timer.inFlight() {
			t.Fatal("the timer does not see the segment in flight")
		}
		time.Sleep(testTick)
		r.Update(time.Now()) // in flight, not due: no flush
		if take() != 0 {
			t.Fatal("Update flushed with nothing new and nothing due")
		}
		time.Sleep(3 * time.Millisecond)
		if err := r.Send([]byte("now")); err != nil {
			t.Fatal(err)
		}
		r.Flush(time.Now())
		if take() == 0 {
			t.Fatal("a no-delay send 3 ms after a tick waited for KCP's interval")
		}
		if _, due := r.FlushDue(); due {
			t.Fatal("FlushDue after the message left")
		}
		// With nothing acknowledged, the first segment's timeout (200 ms
		// before any RTT sample) makes Update flush again.
		time.Sleep(200 * time.Millisecond)
		r.Update(time.Now())
		if take() == 0 {
			t.Fatal("no retransmission at the timeout")
		}
	})
}

// TestFlushTimerEstimator: the timer's RTO follows kcp-go's update_ack.
func TestFlushTimerEstimator(t *testing.T) {
	ft := newFlushTimer(time.Now(), 32, 10*time.Millisecond)
	if ft.rto != 200*time.Millisecond {
		t.Fatalf("initial rto %v, want KCP's 200 ms", ft.rto)
	}
	ft.sample(80) // srtt 80, rttvar 40: 80 + 160
	if ft.rto != 240*time.Millisecond {
		t.Fatalf("rto %v after one 80 ms sample, want 240 ms", ft.rto)
	}
	for range 200 {
		ft.sample(80)
	}
	// rttvar decays towards 0 (1/32 steps below srtt−rttvar... then 1/4):
	// the interval floors the variance term.
	if ft.rto != 90*time.Millisecond {
		t.Fatalf("rto %v after steady 80 ms samples, want 80 + 10 ms", ft.rto)
	}
	ft.sample(5)
	for range 200 {
		ft.sample(5)
	}
	if ft.rto != kcpMinRTO*time.Millisecond {
		t.Fatalf("rto %v on a 5 ms path, want the 30 ms floor", ft.rto)
	}
}

// TestUrgent: an Input that acknowledges a segment which came past a gap
// is urgent, once; in-order traffic is not.
func TestUrgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := NewReliable(3, ReliableConfig{})
		b, _ := NewReliable(3, ReliableConfig{})
		frames := func(r *Reliable) [][]byte {
			var out [][]byte
			for r.Pending() > 0 {
				fb, _ := r.AppendFrame(nil, 1<<12)
				f, _, err := proto.ParseReliableFrame(fb)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, f.Data)
			}
			return out
		}
		send := func(msg string) [][]byte {
			if err := a.Send([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			a.Flush(time.Now())
			return frames(a)
		}
		in := func(r *Reliable, fs [][]byte) {
			for _, f := range fs {
				if err := r.Input(time.Now(), f); err != nil {
					t.Fatal(err)
				}
			}
		}
		in(b, send("one"))
		if b.Urgent() {
			t.Fatal("an in-order segment is urgent")
		}
		in(a, frames(b))
		time.Sleep(11 * time.Millisecond) // past KCP's interval, within its 30 ms minimum timeout
		send("two")                       // lost
		time.Sleep(11 * time.Millisecond)
		in(b, send("three"))
		if !b.Urgent() {
			t.Fatal("the ack of a segment past a gap is not urgent")
		}
		if b.Urgent() {
			t.Fatal("Urgent reported twice")
		}
		if st := b.Stats(); st.GapAcks != 1 {
			t.Fatalf("GapAcks %d, want 1", st.GapAcks)
		}
	})
}
