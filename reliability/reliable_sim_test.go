package reliability

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp/netem"
)

// testMessage returns message i of stream dir: 1 B to 16 KiB, log-uniform,
// with sizes 1 and 16384 forced at the ends.
func testMessage(dst []byte, dir, i int) []byte {
	rng := rand.New(rand.NewPCG(uint64(dir), uint64(i)))
	var n int
	switch i % 1000 {
	case 0:
		n = 1
	case 999:
		n = 16 << 10
	default:
		n = int(math.Exp(rng.Float64() * math.Log(16<<10)))
		n = min(max(n, 1), 16<<10)
	}
	dst = dst[:0]
	for range n {
		dst = append(dst, byte(rng.Uint32()))
	}
	return dst
}

// messageStream sends messages 0..total-1 of one direction and checks the
// other end receives exactly them, once each, in order.
type messageStream struct {
	dir, total  int
	sent, recvd int
	scratch     []byte
	want        []byte
}

func (s *messageStream) pump(p *testPeer) {
	for s.sent < s.total {
		s.scratch = testMessage(s.scratch, s.dir, s.sent)
		if err := p.rel.Send(s.scratch); err != nil {
			if err != ErrQueueFull {
				p.fail(err)
			}
			return
		}
		s.sent++
	}
}

func (s *messageStream) check(_ time.Time, msg []byte) error {
	if s.recvd >= s.total {
		return fmt.Errorf("stream %d: extra message of %d bytes after all %d", s.dir, len(msg), s.total)
	}
	s.want = testMessage(s.want, s.dir, s.recvd)
	if !bytes.Equal(msg, s.want) {
		return fmt.Errorf("stream %d: message %d: got %d bytes, want %d (lost, duplicated or reordered)", s.dir, s.recvd, len(msg), len(s.want))
	}
	s.recvd++
	return nil
}

// runPair ticks two peers over two simulated links until done or limit.
func runPair(t *testing.T, a, b *testPeer, ab, ba *netem.Impairment, tick, limit time.Duration, each func(now time.Time), done func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		now := time.Now()
		for p, ok := ab.Dequeue(now); ok; p, ok = ab.Dequeue(now) {
			b.receive(now, p.Data)
		}
		for p, ok := ba.Dequeue(now); ok; p, ok = ba.Dequeue(now) {
			a.receive(now, p.Data)
		}
		if each != nil {
			each(now)
		}
		a.sendTick(now, ab)
		b.sendTick(now, ba)
		if a.err != nil || b.err != nil {
			t.Fatalf("peer error: %v / %v", a.err, b.err)
		}
		if done() {
			return time.Since(start)
		}
		time.Sleep(tick)
	}
	t.Fatalf("not done after %v of virtual time", limit)
	return 0
}

// TestReliableBadNetwork is the acceptance scenario without
// sockets: 10,000 messages of 1 B to 16 KiB each way over delay 50 ms ±
// 20 ms, 20 % loss, 5 % duplication, 10 % reordering, in virtual time.
func TestReliableBadNetwork(t *testing.T) {
	total := 10000
	if testing.Short() {
		total = 1000
	}
	spec := netem.MustParse("delay 50ms 20ms loss 20% duplicate 5% reorder 10%")
	synctest.Test(t, func(t *testing.T) {
		a := newTestPeer("a", 7, ReliableConfig{})
		b := newTestPeer("b", 7, ReliableConfig{})
		a.packetsPerTk, b.packetsPerTk = 1, 1
		ab, ba := netem.NewImpairment(spec, 1), netem.NewImpairment(spec, 2)
		sa := &messageStream{dir: 1, total: total}
		sb := &messageStream{dir: 2, total: total}
		b.onMessage = sa.check
		a.onMessage = sb.check
		elapsed := runPair(t, a, b, ab, ba, 10*time.Millisecond, time.Hour,
			func(time.Time) { sa.pump(a); sb.pump(b) },
			func() bool { return sa.recvd == total && sb.recvd == total })

		for _, p := range []*testPeer{a, b} {
			st := p.acks.Stats()
			rs := p.rel.Stats()
			t.Logf("%s: %v virtual; rtt %v ±%v (min %v), loss %.3f over %d, sent %d pkts %d B, lost %d, spurious %d; reliable %+v; seq msgs %d (%d out of order)",
				p.name, elapsed, st.RTT, st.RTTVar, st.MinRTT, st.Loss, st.LossSamples, st.PacketsSent, st.BytesSent, st.PacketsLost, st.SpuriousLosses, rs, p.seqReceived, p.seqOutOfOrdr)
			if want, tol := wantLoss(spec); math.Abs(st.Loss-want) > tol {
				t.Errorf("%s: ack-derived loss %.4f, want %.4f ± %.4f", p.name, st.Loss, want, tol)
			}
			// Mean path RTT is ~90 ms (netem's reorder sends 10 % of
			// packets at once, the rest take 50 ± 20 ms) plus up to a tick
			// held at the peer; samples come from the first ack of the
			// newest packet, which favours fast paths, so expect less.
			if st.RTT < 60*time.Millisecond || st.RTT > 140*time.Millisecond {
				t.Errorf("%s: smoothed RTT %v, link RTT ~90 ms", p.name, st.RTT)
			}
			if p.seqOutOfOrdr != 0 {
				t.Errorf("%s: %d sequenced messages delivered out of order", p.name, p.seqOutOfOrdr)
			}
			if p.seqReceived == 0 {
				t.Errorf("%s: no sequenced message delivered", p.name)
			}
		}
		t.Logf("link a→b: %v", ab.Stats())
	})
}
