package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
)

// The reliable-messaging comparison: 1 KB messages sent at 60/s and
// echoed back, through a netem proxy with the same impairment each way,
// over tickwire's reliable channel and over a plain kcp-go UDPSession in
// fast mode (nodelay 1, interval 10, resend 2, no congestion control).
const (
	echoCount = 600 // 10 s at 60/s
	echoSize  = 1024
)

// echoProfiles are the impairments the comparison runs at, each way;
// noDelay makes tickwire flush every message at once (Send then Flush)
// instead of sending it with the next tick.
var echoProfiles = []struct {
	name, spec string
	noDelay    bool
}{
	{"loss=0", "delay 25ms 5ms", false},
	{"loss=5%", "delay 25ms 5ms loss 5%", false},
	{"loss=5%/nodelay", "delay 25ms 5ms loss 5%", true},
	{"loss=20%", "delay 50ms 10ms loss 20% duplicate 5% reorder 5%", false},
}

type echoResult struct {
	rtts       []time.Duration // in the order the echoes arrived
	elapsed    time.Duration
	p50, p99   time.Duration
	maxRTT     time.Duration
	msgsPerSec float64
	bytesOut   uint64 // datagram bytes both ends sent
}

func summarize(rtts []time.Duration, elapsed time.Duration) echoResult {
	sorted := slices.Sorted(slices.Values(rtts))
	n := len(sorted)
	return echoResult{rtts: rtts, elapsed: elapsed, p50: sorted[n/2], p99: sorted[n*99/100], maxRTT: sorted[n-1],
		msgsPerSec: float64(n) / elapsed.Seconds()}
}

func proxy(b testing.TB, upstream, impairment string) string {
	spec, err := netem.Parse(impairment)
	if err != nil {
		b.Fatal(err)
	}
	p, err := netem.ListenProxy("127.0.0.1:0", upstream, netem.ProxyConfig{Up: spec, Down: spec, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p.Addr().String()
}

// tickwirePair starts a tickwire Server with h and cfg behind a netem
// proxy with impairment each way, and dials it with cfg; stop closes
// both. ctx bounds the run.
func tickwirePair(b testing.TB, impairment string, cfg tickwire.Config, h tickwire.Handler) (ctx context.Context, s *tickwire.Server, c *tickwire.Client, stop func()) {
	key, _ := tickwire.GenerateKey()
	s, err := tickwire.NewServer(key, cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.Handle(h)
	uc, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(uc)
	via := proxy(b, uc.LocalAddr().String(), impairment)
	tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 1, ClientID: 1, Players: []uint16{1}, ServerAddrs: []string{via}}, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	d := tickwire.Dialer{Config: cfg}
	c, err = d.Dial(ctx, tok)
	if err != nil {
		cancel()
		s.Close()
		b.Fatal(err)
	}
	return ctx, s, c, func() { c.Close(); s.Close(); cancel() }
}

// echoTickwire runs the echo over a tickwire Server and Client.
func echoTickwire(b testing.TB, impairment string, noDelay bool) echoResult {
	ctx, s, c, stop := tickwirePair(b, impairment, tickwire.Config{}, echoHandler{noDelay})
	defer stop()
	r := runEcho(b, func(msg []byte) error {
		err := c.Send(tickwire.Reliable, 1, msg)
		if noDelay {
			c.Flush()
		}
		return err
	}, func() (int, error) {
		m, err := c.Receive(ctx)
		if err != nil {
			return 0, err
		}
		return int(binary.LittleEndian.Uint32(m.Data)), nil
	})
	r.bytesOut = c.Stats().BytesOut
	s.Do(func() { s.Each(func(sc *tickwire.Conn) { r.bytesOut += sc.Stats().BytesOut }) })
	return r
}

type echoHandler struct{ noDelay bool }

func (echoHandler) Connected(*tickwire.Conn) {}
func (h echoHandler) Message(c *tickwire.Conn, m *tickwire.Message) {
	c.Send(tickwire.Reliable, m.Channel, m.Data)
	if h.noDelay {
		c.Flush()
	}
}
func (echoHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

// tuneKCP sets fast mode: nodelay 1, interval 10 ms, resend 2, no
// congestion control; window 256, MTU 1200.
func tuneKCP(s *kcp.UDPSession) {
	s.SetNoDelay(1, 10, 2, 1)
	s.SetWindowSize(256, 256)
	s.SetMtu(1200)
}

// echoKCP runs the echo over kcp-go sessions in fast mode, with its
// Reed–Solomon FEC when dataShards and parityShards are not zero.
func echoKCP(b testing.TB, impairment string, dataShards, parityShards int) echoResult {
	ln, err := kcp.ListenWithOptions("127.0.0.1:0", nil, dataShards, parityShards)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			s, err := ln.AcceptKCP()
			if err != nil {
				return
			}
			tuneKCP(s)
			go func() {
				buf := make([]byte, echoSize)
				for {
					if _, err := io.ReadFull(s, buf); err != nil {
						return
					}
					s.Write(buf)
				}
			}()
		}
	}()
	via := proxy(b, ln.Addr().String(), impairment)
	c, err := kcp.DialWithOptions(via, nil, dataShards, parityShards)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tuneKCP(c)
	buf := make([]byte, echoSize)
	before := kcp.DefaultSnmp.Copy().OutBytes
	r := runEcho(b, func(msg []byte) error { _, err := c.Write(msg); return err }, func() (int, error) {
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, err
		}
		return int(binary.LittleEndian.Uint32(buf)), nil
	})
	r.bytesOut = kcp.DefaultSnmp.Copy().OutBytes - before
	return r
}

// runEcho sends echoCount numbered messages at 60/s and times each echo.
func runEcho(b testing.TB, send func([]byte) error, recv func() (int, error)) echoResult {
	sent := make([]time.Time, echoCount)
	rtts := make([]time.Duration, 0, echoCount)
	got := make(chan int, echoCount)
	errs := make(chan error, 1)
	go func() {
		for range echoCount {
			i, err := recv()
			if err != nil {
				errs <- err
				return
			}
			got <- i
		}
	}()
	msg := make([]byte, echoSize)
	tick := time.NewTicker(time.Second / 60)
	defer tick.Stop()
	start := time.Now()
	next := 0
	timeout := time.After(2 * time.Minute)
	for len(rtts) < echoCount {
		select {
		case <-tick.C:
			if next < echoCount {
				binary.LittleEndian.PutUint32(msg, uint32(next))
				sent[next] = time.Now()
				if err := send(msg); err != nil {
					b.Fatal(err)
				}
				next++
			}
		case i := <-got:
			if i < 0 || i >= echoCount {
				b.Fatalf("echo number %d", i)
			}
			rtts = append(rtts, time.Since(sent[i]))
		case err := <-errs:
			b.Fatal(err)
		case <-timeout:
			b.Fatalf("%d of %d echoes after 2 minutes", len(rtts), echoCount)
		}
	}
	return summarize(rtts, time.Since(start))
}

// BenchmarkReliableEcho compares the two in one run per impairment
// profile; one iteration is a whole 10 s exchange each, so run it with
// -benchtime=1x. bytes/msg is what both ends put on the wire per echoed
// message (the cost of parity frames, copies and retransmissions).
func BenchmarkReliableEcho(b *testing.B) {
	for _, p := range echoProfiles {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				tw := echoTickwire(b, p.spec, p.noDelay)
				kc := echoKCP(b, p.spec, 0, 0)
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
				b.ReportMetric(ms(tw.p50), "tickwire-p50-ms")
				b.ReportMetric(ms(tw.p99), "tickwire-p99-ms")
				b.ReportMetric(ms(tw.maxRTT), "tickwire-max-ms")
				b.ReportMetric(ms(kc.p50), "kcp-p50-ms")
				b.ReportMetric(ms(kc.p99), "kcp-p99-ms")
				b.ReportMetric(ms(kc.maxRTT), "kcp-max-ms")
				b.ReportMetric(tw.msgsPerSec, "tickwire-msg/s")
				b.ReportMetric(kc.msgsPerSec, "kcp-msg/s")
				b.ReportMetric(float64(tw.bytesOut)/echoCount, "tickwire-bytes/msg")
				b.ReportMetric(float64(kc.bytesOut)/echoCount, "kcp-bytes/msg")
				b.ReportMetric(ms(tw.p99)/ms(kc.p99), "p99-ratio")
			}
		})
	}
}

// BenchmarkReliableEchoFEC measures kcp-go's own forward error
// correction on the echo: kcp-go with its Reed–Solomon FEC (data+parity
// shards per group, klauspost/reedsolomon) at both loss profiles, for
// p99 and bytes per message beside tickwire's parity frames
// (BenchmarkReliableEcho). Run it with -benchtime=1x.
func BenchmarkReliableEchoFEC(b *testing.B) {
	for _, p := range echoProfiles {
		if p.noDelay || p.name == "loss=0" {
			continue
		}
		for _, fec := range [][2]int{{1, 1}, {2, 1}, {3, 2}, {10, 3}, {1, 3}, {2, 3}, {4, 4}} {
			b.Run(fmt.Sprintf("%s/fec=%d+%d", p.name, fec[0], fec[1]), func(b *testing.B) {
				for b.Loop() {
					kc := echoKCP(b, p.spec, fec[0], fec[1])
					ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
					b.ReportMetric(ms(kc.p50), "kcp-p50-ms")
					b.ReportMetric(ms(kc.p99), "kcp-p99-ms")
					b.ReportMetric(ms(kc.maxRTT), "kcp-max-ms")
					b.ReportMetric(kc.msgsPerSec, "kcp-msg/s")
					b.ReportMetric(float64(kc.bytesOut)/echoCount, "kcp-bytes/msg")
				}
			})
		}
	}
}

// The upload comparison: 1 KB reliable messages sent as fast as each
// side accepts them for uploadTime over a clean path, tickwire's client
// against a kcp-go UDPSession (fast mode, as in the echo). Only the
// receiver counts.
const uploadTime = 5 * time.Second

type uploadResult struct {
	msgs     int64   // messages the receiver got
	kbPerSec float64 // of message data
	bytesOut uint64  // datagram bytes both ends sent
}

func uploadSummary(msgs int64, elapsed time.Duration, bytesOut uint64) uploadResult {
	return uploadResult{msgs: msgs, kbPerSec: float64(msgs) * echoSize / 1000 / elapsed.Seconds(), bytesOut: bytesOut}
}

// uploadCounter counts the messages a tickwire server receives.
type uploadCounter struct{ n atomic.Int64 }

func (*uploadCounter) Connected(*tickwire.Conn)                            {}
func (u *uploadCounter) Message(*tickwire.Conn, *tickwire.Message)         { u.n.Add(1) }
func (*uploadCounter) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

func uploadTickwire(b testing.TB, impairment string) uploadResult {
	var count uploadCounter
	_, s, c, stop := tickwirePair(b, impairment, tickwire.Config{}, &count)
	defer stop()
	msg := make([]byte, echoSize)
	start := time.Now()
	for time.Since(start) < uploadTime {
		switch err := c.Send(tickwire.Reliable, 1, msg); {
		case errors.Is(err, tickwire.ErrQueueFull):
			time.Sleep(time.Millisecond)
		case err != nil:
			b.Fatal(err)
		}
	}
	got := count.n.Load()
	r := uploadSummary(got, time.Since(start), c.Stats().BytesOut)
	s.Do(func() { s.Each(func(sc *tickwire.Conn) { r.bytesOut += sc.Stats().BytesOut }) })
	return r
}

func uploadKCP(b testing.TB, impairment string) uploadResult {
	ln, err := kcp.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	go func() {
		s, err := ln.AcceptKCP()
		if err != nil {
			return
		}
		tuneKCP(s)
		buf := make([]byte, echoSize)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	via := proxy(b, ln.Addr().String(), impairment)
	c, err := kcp.DialWithOptions(via, nil, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tuneKCP(c)
	before := kcp.DefaultSnmp.Copy().OutBytes
	msg := make([]byte, echoSize)
	start := time.Now()
	c.SetWriteDeadline(start.Add(uploadTime))
	for time.Since(start) < uploadTime {
		if _, err := c.Write(msg); err != nil {
			break // the deadline
		}
	}
	return uploadSummary(got.Load(), time.Since(start), kcp.DefaultSnmp.Copy().OutBytes-before)
}

// BenchmarkReliableUpload measures upload throughput on a clean path
// (25 ms each way, no loss, no jitter: jitter reorders back-to-back
// packets, which both KCPs take for losses): 1 KB messages as fast as
// the sender takes them for 5 s, tickwire's reliable channel against
// kcp-go. On a clean path tickwire sends new data once, as kcp-go does,
// so its throughput is bounded by its packets per tick (16 a tick at
// 60 Hz: about 0.98 MB/s of messages) and not by copies or parity. Run
// it with -benchtime=1x.
func BenchmarkReliableUpload(b *testing.B) {
	const spec = "delay 25ms"
	for b.Loop() {
		tw := uploadTickwire(b, spec)
		kc := uploadKCP(b, spec)
		b.ReportMetric(tw.kbPerSec, "tickwire-KB/s")
		b.ReportMetric(kc.kbPerSec, "kcp-KB/s")
		b.ReportMetric(float64(tw.bytesOut)/float64(tw.msgs), "tickwire-bytes/msg")
		b.ReportMetric(float64(kc.bytesOut)/float64(kc.msgs), "kcp-bytes/msg")
	}
}
