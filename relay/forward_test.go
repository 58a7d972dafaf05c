package relay

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire/udp"
)

// nullConn is a relayed port that counts what it is asked to send.
type nullConn struct {
	local   netip.AddrPort
	written int
}

func (c *nullConn) ReadBatch([]udp.Message) (int, error) { return 0, nil }
func (c *nullConn) WriteBatch(m []udp.Message) (int, error) {
	c.written += len(m)
	return len(m), nil
}
func (c *nullConn) LocalAddr() netip.AddrPort { return c.local }
func (c *nullConn) Close() error              { return nil }

var (
	joinerAddr = netip.MustParseAddrPort("192.0.2.1:5000")
	hostAddr   = netip.MustParseAddrPort("198.51.100.7:6000")
)

// newTestPump returns the joiner side's pump of an allocation whose two
// sides are bound, on nullConns, with no effective rate limit, and a
// batch of n datagrams of size bytes from the joiner.
func newTestPump(t testing.TB, n, size int) (*pump, []udp.Message, *nullConn) {
	s, err := NewServer(testKey, Config{Rate: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	a := &allocation{srv: s, id: 1, budget: 1 << 62, limiter: rate.NewLimiter(rate.Limit(s.cfg.Rate), s.cfg.Burst)}
	out := &nullConn{local: netip.MustParseAddrPort("203.0.113.1:40001")}
	a.sides[0] = side{conn: &nullConn{local: netip.MustParseAddrPort("203.0.113.1:40000")}, port: 40000, bound: joinerAddr}
	a.sides[1] = side{conn: out, port: 40001, bound: hostAddr}
	p := newPump(a, 0)
	msgs := p.msgs[:n]
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = size, joinerAddr
		copy(msgs[i].Buf, twPacket(size))
	}
	return p, msgs, out
}

// TestForwardAllocatesNothing: forwarding a batch from a bound side,
// and dropping one from an unbound address, allocate nothing.
func TestForwardAllocatesNothing(t *testing.T) {
	p, msgs, out := newTestPump(t, readBatch, 200)
	msgs[3].Addr = netip.MustParseAddrPort("192.0.2.99:1")
	now := time.Unix(1e9, 0)
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		p.handle(msgs, now)
	}); n != 0 {
		t.Fatalf("%v allocations per batch", n)
	}
	st := p.a.srv.Stats()
	if st.Forwarded != uint64(out.written) || out.written != 1001*(readBatch-1) || st.Dropped[DropUnbound] != 1001 {
		t.Fatalf("forwarded %d, written %d, stats %+v", st.Forwarded, out.written, st)
	}
}

// BenchmarkForward is the relay's work per forwarded datagram of 200
// bytes, without the system calls: the checks, the rate limit, the
// budget and the counters (cpu-ns/datagram is the process's CPU time,
// which a loaded machine does not inflate as it does the wall time).
func BenchmarkForward(b *testing.B) {
	for _, n := range []int{1, readBatch} {
		b.Run(map[int]string{1: "batch=1", readBatch: "batch=32"}[n], func(b *testing.B) {
			p, msgs, _ := newTestPump(b, n, 200)
			now := time.Unix(1e9, 0)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				now = now.Add(time.Millisecond)
				p.handle(msgs, now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/datagram")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/datagram")
		})
	}
}
