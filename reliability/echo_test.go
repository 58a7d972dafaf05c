package reliability

import (
	"encoding/binary"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp/netem"
)

// TestReliableEchoLatency is the latency scenario in virtual time:
// 1 KiB messages at 60/s, echoed back, over delay 25 ms ± 5 ms and 5 %
// loss each way, one packet per 60 Hz tick each way. It reports the
// round-trip distribution (the lead's socket benchmark compares it with
// kcp-go's UDPSession) and guards against gross regressions.
func TestReliableEchoLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := netem.MustParse("delay 25ms 5ms loss 5%")
		a := newTestPeer("a", 1, ReliableConfig{})
		b := newTestPeer("b", 1, ReliableConfig{})
		a.packetsPerTk, b.packetsPerTk = 2, 2
		ab, ba := netem.NewImpairment(spec, 21), netem.NewImpairment(spec, 22)
		const n = 3000
		sentAt := make([]time.Time, n)
		var rtts []time.Duration
		msg := make([]byte, 1024)
		b.onMessage = func(_ time.Time, m []byte) error { return b.rel.Send(m) }
		a.onMessage = func(now time.Time, m []byte) error {
			rtts = append(rtts, now.Sub(sentAt[binary.LittleEndian.Uint32(m)]))
			return nil
		}
		next := 0
		runPair(t, a, b, ab, ba, time.Second/60, time.Hour,
			func(now time.Time) {
				if next < n {
					binary.LittleEndian.PutUint32(msg, uint32(next))
					sentAt[next] = now
					if err := a.rel.Send(msg); err != nil {
						t.Fatal(err)
					}
					next++
				}
			},
			func() bool { return len(rtts) == n })
		slices.Sort(rtts)
		p50, p99, pmax := rtts[n/2], rtts[n*99/100], rtts[n-1]
		t.Logf("echo RTT over 25±5 ms, 5%% loss each way, 60 Hz: p50 %v p99 %v max %v", p50, p99, pmax)
		if p50 > 90*time.Millisecond || p99 > 300*time.Millisecond {
			t.Errorf("p50 %v p99 %v", p50, p99)
		}
	})
}
