package tickwire

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
	"github.com/tickwire/tickwire/udp/udptest"
)

// echoRTTs sends n 1 KB reliable messages at 60/s from a client to an
// echoing server, both directions impaired with spec over real loopback
// sockets, and returns each message's round trip, sorted.
func echoRTTs(t testing.TB, spec string, n int) []time.Duration {
	sp, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(20)
	listen := func() udp.BatchConn {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		seed++
		return udp.FromPacketConn(netem.Wrap(pc, netem.Config{Egress: sp, Seed: seed}))
	}
	return echoRTTsOver(t, listen, n, 0, echoOpts{})
}

// echoOpts: with noDelay both ends flush every message at once (Flush)
// instead of sending it with the next tick; with fec both ends protect
// reliable data with parity instead of copies (Config.ReliableFEC).
type echoOpts struct{ noDelay, fec bool }

// echoRTTsOver is echoRTTs over sockets from listen (the server's first).
// The first message goes phase after the client connected.
func echoRTTsOver(t testing.TB, listen func() udp.BatchConn, n int, phase time.Duration, o echoOpts) []time.Duration {
	h := newEchoHandler()
	h.noDelay = o.noDelay
	srv, key, addr := testServer(t, Config{ReliableFEC: o.fec}, h, listen())
	c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen(), Config: Config{ReliableFEC: o.fec}})
	sent := make([]time.Time, n)
	rtts := make([]time.Duration, 0, n)
	msg := make([]byte, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*time.Second/60+30*time.Second)
	defer cancel()
	got := make(chan int, n)
	go func() {
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				close(got)
				return
			}
			got <- int(binary.LittleEndian.Uint32(m.Data))
		}
	}()
	<-time.After(phase)
	tick := time.NewTicker(time.Second / 60)
	defer tick.Stop()
	next := 0
	for len(rtts) < n {
		select {
		case <-tick.C:
			if next < n {
				binary.LittleEndian.PutUint32(msg, uint32(next))
				sent[next] = time.Now()
				if err := c.Send(Reliable, 1, msg); err != nil {
					t.Fatal(err)
				}
				if o.noDelay {
					c.Flush()
				}
				next++
			}
		case i, ok := <-got:
			if !ok {
				t.Fatalf("after %d echoes: %v", len(rtts), ctx.Err())
			}
			if i != len(rtts) {
				t.Fatalf("echo %d arrived as number %d", i, len(rtts))
			}
			rtts = append(rtts, time.Since(sent[i]))
		}
	}
	slices.Sort(rtts)
	st := c.Stats()
	t.Logf("client: loss %.3f, repeats %d, packets out %d, bytes out %d", st.Loss, st.ReliableRepeats, st.PacketsOut, st.BytesOut)
	srv.Do(func() {
		srv.Each(func(sc *Conn) {
			st := sc.Stats()
			t.Logf("server: loss %.3f, repeats %d, packets out %d, bytes out %d", st.Loss, st.ReliableRepeats, st.PacketsOut, st.BytesOut)
		})
	})
	return rtts
}

// TestEchoLatency is the latency scenario end to end: 1 KB
// reliable messages at 60/s echoed through "delay 25ms 5ms loss 5%" each
// way, over real loopback sockets: every echo comes back, exactly once
// and in order (echoRTTs fails otherwise). The latencies are logged, not
// asserted: a loaded machine delays the loops whatever the protocol does,
// so the virtual-time test below holds the latency target, and
// BenchmarkReliableEcho (bench) measures it against kcp-go.
func TestEchoLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	const n = 600 // 10 s
	rtts := echoRTTs(t, "delay 25ms 5ms loss 5%", n)
	p50, p99, pmax := rtts[n/2], rtts[n*99/100], rtts[n-1]
	t.Logf("echo RTT over 25±5 ms, 5%% loss each way, 1 KB at 60/s: p50 %v p99 %v max %v", p50, p99, pmax)
}

// virtualEchoRTTs is echoRTTsOver inside a synctest bubble, over the
// in-memory network with spec each way (seeded), n messages.
func virtualEchoRTTs(t *testing.T, spec string, n int, o echoOpts) []time.Duration {
	sp, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	nw := udptest.NewNetwork(udptest.Config{})
	seed := uint64(20)
	listen := func() udp.BatchConn {
		pc, err := nw.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		seed++
		return udp.FromPacketConn(netem.Wrap(pc, netem.Config{Egress: sp, Seed: seed}))
	}
	// In virtual time the client's loop ticks at the very instants a
	// ticker started with it would: send half a tick later, so which
	// goroutine runs first at a shared instant cannot decide whether a
	// message waits a tick.
	return echoRTTsOver(t, listen, n, time.Second/120, o)
}

// TestEchoLatencyVirtual is the same scenario in virtual time over the
// in-memory network, long enough (3,000 messages, 50 s) for a stable
// tail: the target is p99 at most 110 ms over the 50 ms base
// round trip. New reliable data goes out as many times as the measured
// loss calls for (3 copies at 5 %: twice in its tick, once in the next),
// so a message waits for a retransmission timeout only when every copy
// was lost.
func TestEchoLatencyVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		rtts := virtualEchoRTTs(t, "delay 25ms 5ms loss 5%", n, echoOpts{})
		p50, p99, pmax := rtts[n/2], rtts[n*99/100], rtts[n-1]
		t.Logf("virtual echo RTT over 25±5 ms, 5%% loss each way: p50 %v p99 %v p99.9 %v max %v", p50, p99, rtts[n*999/1000], pmax)
		// p50: the 50 ms base plus waiting for the next tick on each side.
		if p50 > 80*time.Millisecond || p99 > 110*time.Millisecond {
			t.Errorf("p50 %v p99 %v, want p50 <= 80 ms, p99 <= 110 ms", p50, p99)
		}
	})
}

// TestEchoLatencyVirtual20 is the reliable tail at 20 % loss, in virtual
// time: 3,000 echoes through "delay 50ms 10ms loss 20% duplicate 5%
// reorder 5%" each way, the issue's target p99 of 250 ms. Four copies of
// new data still lose all four in 0.16 % of sends per direction, and the
// messages behind such a segment wait for its retransmission, so the
// retransmission is copied too, copies go out from the first 32 measured
// packets, a burst of them is not cut, and the first copy leaves in the
// same tick (see copies.go), and the ack of a segment that came past a
// gap leaves at once (reliability.Reliable.Urgent): p99 190 ms on this
// seed, 167 ms pooled over 8 seeds (289 ms before the last four).
func TestEchoLatencyVirtual20(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		rtts := virtualEchoRTTs(t, "delay 50ms 10ms loss 20% duplicate 5% reorder 5%", n, echoOpts{})
		p50, p99 := rtts[n/2], rtts[n*99/100]
		t.Logf("virtual echo RTT over 50±10 ms, 20%% loss each way: p50 %v p99 %v p99.9 %v max %v", p50, p99, rtts[n*999/1000], rtts[n-1])
		if p99 > 250*time.Millisecond {
			t.Errorf("p99 %v, want <= 250 ms", p99)
		}
	})
}

// TestEchoNoDelayVirtual: with Flush after every Send on both ends (the
// no-delay send), an echo over "delay 25ms 5ms loss 5%" each way no
// longer waits for the next tick on either side, nor for KCP's 10 ms
// flush interval (the reliable channel's flush timer leaves KCP ready):
// the median is the path's (about 47 ms), where the tick-aligned echo's
// is about 68 ms.
func TestEchoNoDelayVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		rtts := virtualEchoRTTs(t, "delay 25ms 5ms loss 5%", n, echoOpts{noDelay: true})
		p50, p99 := rtts[n/2], rtts[n*99/100]
		t.Logf("no-delay virtual echo RTT over 25±5 ms, 5%% loss each way: p50 %v p99 %v p99.9 %v max %v", p50, p99, rtts[n*999/1000], rtts[n-1])
		if p50 > 60*time.Millisecond || p99 > 110*time.Millisecond {
			t.Errorf("p50 %v p99 %v, want p50 <= 60 ms, p99 <= 110 ms", p50, p99)
		}
	})
}

// TestEchoFECVirtual: with Config.ReliableFEC on both ends, parity over
// groups of packets replaces the copies; the echo's tail grows by about
// the tick a group waits for its parity, for fewer bytes (bench/README.md,
// issue 20's FEC table), and stays bounded at both loss profiles.
func TestEchoFECVirtual(t *testing.T) {
	for _, c := range []struct {
		spec string
		p99  time.Duration
	}{
		{"delay 25ms 5ms loss 5%", 130 * time.Millisecond},
		{"delay 50ms 10ms loss 20% duplicate 5% reorder 5%", 300 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			const n = 3000
			rtts := virtualEchoRTTs(t, c.spec, n, echoOpts{fec: true})
			p50, p99 := rtts[n/2], rtts[n*99/100]
			t.Logf("FEC virtual echo RTT over %s each way: p50 %v p99 %v p99.9 %v max %v", c.spec, p50, p99, rtts[n*999/1000], rtts[n-1])
			if p99 > c.p99 {
				t.Errorf("p99 %v, want <= %v", p99, c.p99)
			}
		})
	}
}
