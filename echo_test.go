package tickwire

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync/atomic"
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
func echoRTTs(t testing.TB, spec string, n int) echoRun {
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
// instead of sending it with the next tick.
type echoOpts struct{ noDelay bool }

// echoRun is an echo's round trips, sorted, and what it cost: the bytes
// both ends sent per message, and the reliable frames they sent again as
// copies.
type echoRun struct {
	rtts        []time.Duration
	bytesPerMsg float64
	repeats     uint64
}

// echoRTTsOver is echoRTTs over sockets from listen (the server's first).
// The first message goes phase after the client connected.
func echoRTTsOver(t testing.TB, listen func() udp.BatchConn, n int, phase time.Duration, o echoOpts) echoRun {
	h := newEchoHandler()
	h.noDelay = o.noDelay
	srv, key, addr := testServer(t, Config{}, h, listen())
	c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen()})
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
	run := echoRun{rtts: rtts, repeats: st.ReliableRepeats}
	bytes := st.BytesOut
	srv.Do(func() {
		srv.Each(func(sc *Conn) {
			st := sc.Stats()
			t.Logf("server: loss %.3f, repeats %d, packets out %d, bytes out %d", st.Loss, st.ReliableRepeats, st.PacketsOut, st.BytesOut)
			bytes += st.BytesOut
			run.repeats += st.ReliableRepeats
		})
	})
	run.bytesPerMsg = float64(bytes) / float64(n)
	return run
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
	rtts := echoRTTs(t, "delay 25ms 5ms loss 5%", n).rtts
	p50, p99, pmax := rtts[n/2], rtts[n*99/100], rtts[n-1]
	t.Logf("echo RTT over 25±5 ms, 5%% loss each way, 1 KB at 60/s: p50 %v p99 %v max %v", p50, p99, pmax)
}

// virtualListen returns a maker of sockets on a new in-memory network
// (inside a synctest bubble), each sending through spec (seeded).
func virtualListen(t *testing.T, spec string) func() udp.BatchConn {
	listen := virtualPacketListen(t, spec)
	return func() udp.BatchConn { return udp.FromPacketConn(listen()) }
}

// virtualPacketListen is virtualListen's sockets as net.PacketConns:
// the nth socket of either sends with the same seed.
func virtualPacketListen(t *testing.T, spec string) func() net.PacketConn {
	sp, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	nw := udptest.NewNetwork(udptest.Config{})
	seed := uint64(20)
	return func() net.PacketConn {
		pc, err := nw.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		seed++
		return netem.Wrap(pc, netem.Config{Egress: sp, Seed: seed})
	}
}

// virtualEchoRTTs is echoRTTsOver inside a synctest bubble, over the
// in-memory network with spec each way (seeded), n messages.
func virtualEchoRTTs(t *testing.T, spec string, n int, o echoOpts) echoRun {
	listen := virtualListen(t, spec)
	// In virtual time the client's loop ticks at the very instants a
	// ticker started with it would: send half a tick later, so which
	// goroutine runs first at a shared instant cannot decide whether a
	// message waits a tick.
	return echoRTTsOver(t, listen, n, time.Second/120, o)
}

// TestEchoLatencyVirtual is the same scenario in virtual time over the
// in-memory network, long enough (3,000 messages, 50 s) for a stable
// tail, beside kcp-go on the same seeded path (kcpEchoVirtual: p50 53
// ms, p99 157–178 ms, about 2,450 bytes per message). New reliable data
// is covered by parity frames at the rate the measured loss calls for
// (one per two packets of new data at 5 %), so a lost message waits for
// the next parity frame (a tick for half of them, none for the other
// half) and for a retransmission only when the parity frames could not
// rebuild it. It sends at most 1.5 times kcp-go's bytes per message
// (the target; 1.41–1.44), with p99 at most 0.75 times kcp-go's
// (0.55–0.68, median 0.64: the 0.6 is not met, see
// bench/README.md, "Reliable messaging"). Both run on KCP's core, which
// reads its clock in milliseconds since the process started, so the
// phase of its timers against the bubble's clock, and with it the
// figures, differ a little from one test process to the next (the
// ranges are of nineteen processes).
func TestEchoLatencyVirtual(t *testing.T) {
	const n = 3000
	const spec = "delay 25ms 5ms loss 5%"
	var kc echoRun
	synctest.Test(t, func(t *testing.T) { kc = kcpEchoVirtual(t, spec, n) })
	synctest.Test(t, func(t *testing.T) {
		run := virtualEchoRTTs(t, spec, n, echoOpts{})
		rtts := run.rtts
		p50, p99 := rtts[n/2], rtts[n*99/100]
		t.Logf("virtual echo RTT over 25±5 ms, 5%% loss each way: p50 %v p99 %v p99.9 %v max %v, %.0f bytes per message", p50, p99, rtts[n*999/1000], rtts[n-1], run.bytesPerMsg)
		t.Logf("kcp-go on the same path: p50 %v p99 %v p99.9 %v max %v, %.0f bytes per message", kc.rtts[n/2], kc.rtts[n*99/100], kc.rtts[n*999/1000], kc.rtts[n-1], kc.bytesPerMsg)
		ratio := float64(p99) / float64(kc.rtts[n*99/100])
		t.Logf("tickwire ÷ kcp-go: bytes %.2f, p99 %.2f", run.bytesPerMsg/kc.bytesPerMsg, ratio)
		// p50: the 50 ms base plus waiting for the next tick on each side.
		if p50 > 80*time.Millisecond || ratio > 0.75 {
			t.Errorf("p50 %v, p99 %.2f × kcp-go's; want p50 <= 80 ms, p99 <= 0.75 × kcp-go's", p50, ratio)
		}
		if run.bytesPerMsg > 1.5*kc.bytesPerMsg {
			t.Errorf("%.0f bytes per message, want at most 1.5 × kcp-go's %.0f", run.bytesPerMsg, kc.bytesPerMsg)
		}
	})
}

// TestEchoCleanVirtual: on a path that loses nothing the echo sends each
// message once, as kcp-go does: no copy, no parity frame once 32 packets
// showed the path clean, and about kcp-go's bytes per message (2,260 on
// this path in bench/README.md).
func TestEchoCleanVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		run := virtualEchoRTTs(t, "delay 25ms 5ms", n, echoOpts{})
		t.Logf("virtual echo RTT over 25±5 ms, no loss: p50 %v p99 %v, %.0f bytes per message", run.rtts[n/2], run.rtts[n*99/100], run.bytesPerMsg)
		if run.repeats != 0 || run.bytesPerMsg > 2300 {
			t.Errorf("%d copies, %.0f bytes per message; want none, and at most 2,300", run.repeats, run.bytesPerMsg)
		}
	})
}

// TestEchoLatencyVirtual20 is the reliable tail at 20 % loss, in virtual
// time: 3,000 echoes through "delay 50ms 10ms loss 20% duplicate 5%
// reorder 5%" each way, the issue's target p99 of 250 ms. Three parity
// frames go out per two packets of new data at this loss, and the ack
// of a segment that came past a gap leaves at once
// (reliability.Reliable.Urgent): p99 about 160 ms for about 6 KB per
// message, where four copies gave 196 ms for 10.7 KB.
func TestEchoLatencyVirtual20(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		run := virtualEchoRTTs(t, "delay 50ms 10ms loss 20% duplicate 5% reorder 5%", n, echoOpts{})
		rtts := run.rtts
		p50, p99 := rtts[n/2], rtts[n*99/100]
		t.Logf("virtual echo RTT over 50±10 ms, 20%% loss each way: p50 %v p99 %v p99.9 %v max %v, %.0f bytes per message", p50, p99, rtts[n*999/1000], rtts[n-1], run.bytesPerMsg)
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
// is about 68 ms. Every flush is followed by a parity frame at once.
func TestEchoNoDelayVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		run := virtualEchoRTTs(t, "delay 25ms 5ms loss 5%", n, echoOpts{noDelay: true})
		rtts := run.rtts
		p50, p99 := rtts[n/2], rtts[n*99/100]
		t.Logf("no-delay virtual echo RTT over 25±5 ms, 5%% loss each way: p50 %v p99 %v p99.9 %v max %v, %.0f bytes per message", p50, p99, rtts[n*999/1000], rtts[n-1], run.bytesPerMsg)
		if p50 > 60*time.Millisecond || p99 > 110*time.Millisecond {
			t.Errorf("p50 %v p99 %v, want p50 <= 60 ms, p99 <= 110 ms", p50, p99)
		}
	})
}

// messageCounter counts the messages a server receives.
type messageCounter struct {
	nopHandler
	n atomic.Int64
}

func (h *messageCounter) Message(*Conn, *Message) { h.n.Add(1) }

// TestUploadCleanVirtual: a client uploads 1 KB reliable messages as
// fast as its send queue takes them, for 10 s over a clean 25 ms path in
// virtual time. It sends each message once (no copy, no parity frame),
// so it moves about as many messages a second as the session sends
// packets (at most 16 a tick, 960 a second at 60 Hz, less KCP's
// retransmissions of segments that waited in the send queue past their
// timeout): at least 700 in the last 8 s, where copies of every segment
// would halve it. (Goroutine order varies between runs even in virtual
// time: eleven runs gave 797–960, most 831–847.)
func TestUploadCleanVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		listen := virtualListen(t, "delay 25ms")
		h := &messageCounter{}
		_, key, addr := testServer(t, Config{}, h, listen())
		c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen()})
		msg := make([]byte, 1024)
		tick := time.NewTicker(time.Second / 60)
		defer tick.Stop()
		start := time.Now()
		var at2s int64
		for time.Since(start) < 10*time.Second {
			<-tick.C
			if at2s == 0 && time.Since(start) >= 2*time.Second {
				at2s = h.n.Load()
			}
			for c.Send(Reliable, 1, msg) == nil {
			}
		}
		rate := float64(h.n.Load()-at2s) / 8
		st := c.Stats()
		t.Logf("%.0f messages a second; client: %d packets, %d copies, loss %.3f", rate, st.PacketsOut, st.ReliableRepeats, st.Loss)
		if st.ReliableRepeats != 0 || rate < 700 {
			t.Errorf("%.0f messages a second and %d copies, want at least 700 and none", rate, st.ReliableRepeats)
		}
	})
}
