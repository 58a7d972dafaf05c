package tickwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
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

func (s *stream) fail(err error) {
	if s.err == nil {
		s.err = err
		close(s.finished)
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
	srv      *Server
}

func (h *streamServer) Message(c *Conn, m *Message) { h.up.check(m, h.buf) }
func (h *streamServer) Tick(time.Time, uint32) {
	h.srv.Each(func(c *Conn) { h.down.pump(c.Send, h.buf) })
}

type streamClient struct {
	down *stream
	buf  []byte
}

func (h *streamClient) Message(_ *Client, m *Message)                { h.down.check(m, h.buf) }
func (h *streamClient) Disconnected(*Client, proto.DisconnectReason) {}

// TestReliableOverBadNetwork is the acceptance run: over real
// loopback sockets, both directions impaired with
// "delay 50ms 20ms loss 20% duplicate 5% reorder 10%", 10,000 reliable
// messages of 1 B to 16 KB each way arrive exactly once and in order,
// sequenced messages never go backwards, and each side's loss estimate is
// near the configured 20 %.
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
	s, key, addr := testServer(t, Config{TickRate: 120}, h, srvConn)
	h.srv = s
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
	for done := 0; done < 2; {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out: up %d/%d, down %d/%d", up.want, n, down.want, n)
		case <-up.finished:
			up.finished = nil
			done++
		case <-down.finished:
			down.finished = nil
			done++
		case <-ticker.C:
			up.pump(c.Send, sendBuf)
		case <-progress.C:
			up.mu.Lock()
			down.mu.Lock()
			t.Logf("%v: up %d/%d, down %d/%d", time.Since(start).Round(time.Second), up.want, n, down.want, n)
			down.mu.Unlock()
			up.mu.Unlock()
		}
	}
	for _, st := range []*stream{up, down} {
		if st.err != nil {
			t.Fatal(st.err)
		}
		if st.seqGot < 100 {
			t.Fatalf("only %d sequenced messages arrived", st.seqGot)
		}
	}
	t.Logf("transfer done in %v", time.Since(start).Round(time.Millisecond))

	// The loss estimate covers the last 1024 resolved packets. During the
	// bulk transfer each side sends up to 16 packets a tick, and with
	// ±20 ms of jitter a packet can arrive more than 32 packets late,
	// outside the peer's ack field: it is lost to the estimate although
	// it arrived. Game traffic is one packet a tick, so measure there:
	// ~9 s of sequenced messages only, more than 1024 packets each way.
	steady := time.NewTimer(9 * time.Second)
	defer steady.Stop()
	up.mu.Lock()
	up.n = up.next // no more reliable messages
	up.mu.Unlock()
	down.mu.Lock()
	down.n = down.next
	down.mu.Unlock()
steady:
	for {
		select {
		case <-steady.C:
			break steady
		case <-ticker.C:
			up.pump(c.Send, sendBuf)
		}
	}
	cs := c.Stats()
	var ss ConnStats
	s.Do(func() { s.Each(func(sc *Conn) { ss = sc.Stats() }) })
	t.Logf("%v; client: rtt %v jitter %v loss %.3f, %d packets out; server: rtt %v loss %.3f, %d packets out; sequenced delivered up %d/%d down %d/%d",
		time.Since(start).Round(time.Millisecond), cs.RTT, cs.Jitter, cs.Loss, cs.PacketsOut, ss.RTT, ss.Loss, ss.PacketsOut, up.seqGot, up.seqSent, down.seqGot, down.seqSent)
	for _, loss := range []float64{cs.Loss, ss.Loss} {
		if math.Abs(loss-0.20) > 0.05 {
			t.Errorf("loss estimate %.3f, configured 0.20", loss)
		}
	}
}
