package tickwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
	"github.com/tickwire/tickwire/udp/udptest"
)

// stream produces and checks one direction's messages: n reliable
// messages of 1 B to 16 KB (log-uniform sizes, content derived from the
// index) and a sequenced counter.
type stream struct {
	mu       sync.Mutex
	n        int
	sizes    []int
	next     int    // next reliable message to send
	want     int    // next reliable message expected
	seqSent  uint32 // sequenced counter
	seqLast  uint32
	seqGot   int
	err      error
	finished chan struct{}
}

func newStream(n int, seed uint64) *stream {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &stream{n: n, sizes: make([]int, n), finished: make(chan struct{})}
	for i := range s.sizes {
		s.sizes[i] = int(math.Exp(r.Float64() * math.Log(16<<10)))
	}
	s.sizes[0], s.sizes[n-1] = 1, 16<<10
	return s
}

func fillMessage(b []byte, i int) []byte {
	for j := range b {
		b[j] = byte(i*7 + j*13)
	}
	if len(b) >= 4 {
		binary.LittleEndian.PutUint32(b, uint32(i))
	}
	return b
}

// pump queues messages until the send queue is full, plus one sequenced
// message.
func (s *stream) pump(send func(d Delivery, ch uint8, b []byte) error, buf []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.next < s.n {
		b := fillMessage(buf[:s.sizes[s.next]], s.next)
		if err := send(Reliable, 1, b); err != nil {
			if err != ErrQueueFull {
				s.fail(fmt.Errorf("send %d: %w", s.next, err))
			}
			break
		}
		s.next++
	}
	s.seqSent++
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], s.seqSent)
	send(Sequenced, 2, c[:])
}

// fail records the stream's first error and ends it (if it had not
// finished already: an extra message can come after the last). Called
// under mu.
func (s *stream) fail(err error) {
	if s.err == nil {
		s.err = err
		select {
		case <-s.finished:
		default:
			close(s.finished)
		}
	}
}

// check verifies one received message.
func (s *stream) check(m *Message, buf []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	switch m.Delivery {
	case Reliable:
		if s.want >= s.n {
			s.fail(fmt.Errorf("extra reliable message of %d bytes", len(m.Data)))
			return
		}
		want := fillMessage(buf[:s.sizes[s.want]], s.want)
		if string(m.Data) != string(want) {
			s.fail(fmt.Errorf("reliable message %d: got %d bytes, want %d (out of order, duplicated or corrupt)", s.want, len(m.Data), len(want)))
			return
		}
		s.want++
		if s.want == s.n {
			close(s.finished)
		}
	case Sequenced:
		v := binary.LittleEndian.Uint32(m.Data)
		if v <= s.seqLast {
			s.fail(fmt.Errorf("sequenced %d delivered after %d", v, s.seqLast))
			return
		}
		s.seqLast = v
		s.seqGot++
	}
}

type streamServer struct {
	nopHandler
	up, down *stream
	buf      []byte
	srv      atomic.Pointer[Server] // set once the server runs: it may tick before
}

func (h *streamServer) Message(c *Conn, m *Message) { h.up.check(m, h.buf) }
func (h *streamServer) Tick(time.Time, uint32) {
	if s := h.srv.Load(); s != nil {
		s.Each(func(c *Conn) { h.down.pump(c.Send, h.buf) })
	}
}

type streamClient struct {
	down *stream
	buf  []byte
}

func (h *streamClient) Message(_ *Client, m *Message)                { h.down.check(m, h.buf) }
func (h *streamClient) Disconnected(*Client, proto.DisconnectReason) {}

// TestReliableOverBadNetwork is the reliable channel's acceptance run
// over real loopback sockets, both directions impaired with
// "delay 50ms 20ms loss 20% duplicate 5% reorder 10%": 10,000 reliable
// messages of 1 B to 16 KB each way arrive exactly once and in order, and
// sequenced messages never go backwards. It asserts only what must hold
// however loaded the machine is; the estimates are checked in virtual
// time (TestLossEstimateVirtual).
func TestReliableOverBadNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	const n = 10_000
	spec, err := netem.Parse("delay 50ms 20ms loss 20% duplicate 5% reorder 10%")
	if err != nil {
		t.Fatal(err)
	}
	listen := func(seed uint64) udp.BatchConn {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return udp.FromPacketConn(netem.Wrap(pc, netem.Config{Egress: spec, Seed: seed}))
	}
	up, down := newStream(n, 1), newStream(n, 2)
	h := &streamServer{up: up, down: down, buf: make([]byte, 16<<10)}
	// 120 Hz doubles the packets per second (and so the bandwidth) the
	// test can use, to keep it short; the protocol does not care.
	srvConn := listen(11)
	// This run is about delivery, not liveness: a machine busy enough to
	// starve a loop for the default 1.5 s must not end the session.
	s, key, addr := testServer(t, Config{TickRate: 120, Heartbeat: time.Second, Timeout: 30 * time.Second}, h, srvConn)
	h.srv.Store(s)
	ch := &streamClient{down: down, buf: make([]byte, 16<<10)}
	c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen(12), Handler: ch})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ticker := time.NewTicker(time.Second / 120)
	defer ticker.Stop()
	sendBuf := make([]byte, 16<<10)
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	start := time.Now()
	// The streams are checked on the loops of the server and the client:
	// what the test reads of them it reads under their locks.
	got := func() string {
		up.mu.Lock()
		down.mu.Lock()
		defer down.mu.Unlock()
		defer up.mu.Unlock()
		return fmt.Sprintf("up %d/%d, down %d/%d", up.want, n, down.want, n)
	}
	upDone, downDone := up.finished, down.finished
	for done := 0; done < 2; {
		select {
		case <-ctx.Done():
			var ss []ConnStats
			s.Do(func() { s.Each(func(sc *Conn) { ss = append(ss, sc.Stats()) }) })
			t.Fatalf("timed out: %s; client err %v, stats %+v, dropped %v; server %+v, conns %+v",
				got(), c.Err(), c.Stats(), c.Dropped(), s.Stats(), ss)
		case <-c.Done():
			t.Fatalf("the session ended: %v (%s)", c.Err(), got())
		case <-upDone:
			upDone = nil
			done++
		case <-downDone:
			downDone = nil
			done++
		case <-ticker.C:
			up.pump(c.Send, sendBuf)
		case <-progress.C:
			t.Logf("%v: %s", time.Since(start).Round(time.Second), got())
		}
	}
	for _, st := range []*stream{up, down} {
		st.mu.Lock()
		err, seqGot := st.err, st.seqGot
		st.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if seqGot < 100 {
			t.Fatalf("only %d sequenced messages arrived", seqGot)
		}
	}
	t.Logf("transfer done in %v", time.Since(start).Round(time.Millisecond))
}

// TestLossEstimateVirtual checks the path estimates in virtual time: a
// client and a server exchange one packet a tick (a sequenced message
// each way, as game traffic does) for 30 s over a 30 ms link with
// "delay 50ms 20ms loss 20% duplicate 5% reorder 10%" each way. Each
// side's loss estimate is near the configured 20 %, and its RTT is of the
// path's order: 2 × 80 ms on average, less for the packets that overtake
// (10 % skip netem's delay, and jitter lets later packets arrive first,
// which the newest-acknowledged sample favours).
func TestLossEstimateVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec, err := netem.Parse("delay 50ms 20ms loss 20% duplicate 5% reorder 10%")
		if err != nil {
			t.Fatal(err)
		}
		nw := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 30 * time.Millisecond}})
		listen := func(addr string, seed uint64) udp.BatchConn {
			pc, err := nw.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			return udp.FromPacketConn(netem.Wrap(pc, netem.Config{Egress: spec, Seed: seed}))
		}
		up, down := newStream(1, 1), newStream(1, 2)
		up.n, down.n = 0, 0 // sequenced messages only
		h := &streamServer{up: up, down: down, buf: make([]byte, 16)}
		s, key, addr := testServer(t, Config{}, h, listen("10.0.0.1:7777", 11))
		h.srv.Store(s)
		c := dial(t, mintFor(t, key, addr, 1), Dialer{Conn: listen("10.0.1.1:5000", 12), Handler: &streamClient{down: down, buf: make([]byte, 16)}})
		ticker := time.NewTicker(time.Second / 60)
		defer ticker.Stop()
		sendBuf := make([]byte, 16)
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
			<-ticker.C
			up.pump(c.Send, sendBuf)
		}
		cs := c.Stats()
		var ss ConnStats
		s.Do(func() { s.Each(func(sc *Conn) { ss = sc.Stats() }) })
		t.Logf("client: rtt %v jitter %v loss %.3f, %d packets out; server: rtt %v jitter %v loss %.3f, %d packets out; sequenced delivered up %d/%d down %d/%d",
			cs.RTT, cs.Jitter, cs.Loss, cs.PacketsOut, ss.RTT, ss.Jitter, ss.Loss, ss.PacketsOut, up.seqGot, up.seqSent, down.seqGot, down.seqSent)
		for _, st := range []ConnStats{cs, ss} {
			if math.Abs(st.Loss-0.20) > 0.04 {
				t.Errorf("loss estimate %.3f, configured 0.20", st.Loss)
			}
			if st.RTT < 110*time.Millisecond || st.RTT > 200*time.Millisecond {
				t.Errorf("RTT estimate %v, want 110..200 ms for a 160 ms ± 40 ms path", st.RTT)
			}
			if st.Jitter <= 0 || st.Jitter > 60*time.Millisecond {
				t.Errorf("jitter estimate %v, want 0..60 ms for ±20 ms each way", st.Jitter)
			}
		}
		for _, st := range []*stream{up, down} {
			if st.err != nil {
				t.Fatal(st.err)
			}
			// 20 % are lost, and a message overtaken by a newer one (a
			// reordered packet, or ±20 ms of jitter at 16.7 ms a tick) is
			// dropped as old: about 60 % arrive.
			if st.seqGot < int(st.seqSent)/2 {
				t.Errorf("%d of %d sequenced messages arrived", st.seqGot, st.seqSent)
			}
		}
	})
}
