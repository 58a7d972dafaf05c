package tickwire

import (
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// TestBuildWorkersAllocs: handing a tick's connections to two workers
// and writing their queues allocates nothing once warm (96 bare
// sessions: the build's own cost, without a game's).
func TestBuildWorkersAllocs(t *testing.T) {
	s, _, now := newBareServer(t, 2, 96)
	defer s.builder.stop()
	tick := func() {
		*now = now.Add(time.Second / 60)
		s.build(*now)
	}
	for range 120 {
		tick()
	}
	if n := testing.AllocsPerRun(120, tick); n != 0 {
		t.Fatalf("a tick allocates %v times", n)
	}
	if len(s.builder.workers) != 2 {
		t.Fatalf("%d workers", len(s.builder.workers))
	}
}

// stallFrames is a frame handler that counts the packets built; the one
// given block waits on it before its first.
type stallFrames struct {
	built *atomic.Int64
	block chan struct{}
	// after is called with the count after each packet.
	after func(n int64)
}

func (f *stallFrames) Frame(proto.FrameType, []byte, *PacketInfo) error { return nil }
func (f *stallFrames) Ticks() Ticks                                     { return Ticks{} }
func (f *stallFrames) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte {
	if f.block != nil {
		<-f.block
		f.block = nil
	}
	f.after(f.built.Add(1))
	return b
}

// TestBuildWorkerStalled: a worker held up on its first connection (as
// by a core shared with other work) does not hold the tick up: the other
// worker builds the rest of its share, all but the chunk it holds.
// Without that, this deadlocks (synctest reports it).
func TestBuildWorkerStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 96
		s, conns, now := newBareServer(t, 2, n)
		defer s.builder.stop()
		slices.SortFunc(conns, func(x, y *Conn) int { return int(x.id) - int(y.id) })
		var built atomic.Int64
		release := make(chan struct{})
		after := func(k int64) {
			if k == n-buildChunk { // everything but the stalled chunk
				close(release)
			}
		}
		for i, c := range conns {
			f := &stallFrames{built: &built, after: after}
			if i == n/2 { // the first of the second worker's share
				f.block = release
			}
			c.SetFrameHandler(f)
		}
		s.build(*now)
		if got := built.Load(); got != n {
			t.Fatalf("%d of %d connections built", got, n)
		}
	})
}

// newBareServer returns a server that writes to nowhere, with a clock
// that moves only when *now is set, and n bare connections (no handler).
func newBareServer(t testing.TB, workers, n int) (s *Server, conns []*Conn, now *time.Time) {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	dc := &discardConn{}
	s.conn, s.out.conn = dc, dc
	at := time.Now()
	s.now = func() time.Time { return at }
	for i := range n {
		conns = append(conns, addBareConn(t, s, i, at))
	}
	return s, conns, &at
}

// addBareConn connects client i (its player slot i+1, port 10000+i) to s
// at at, bare: no handler.
func addBareConn(t testing.TB, s *Server, i int, at time.Time) *Conn {
	var priv proto.TokenPrivate
	priv.ClientID, priv.PlayerCount, priv.Players[0] = uint64(i+1), 1, uint16(i+1)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10000+i))
	c, err := s.newConn(s.newConnID(), &priv, 1, addr, at, &priv.ClientToServerKey, &priv.ServerToClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeWatch is a BatchConn that counts the datagrams written, notes
// whether two writers were ever in WriteBatch at once, and calls written
// (if set) with the count after each batch.
type writeWatch struct {
	discardConn
	n, in   atomic.Int64
	overlap atomic.Bool
	written func(n int64)
}

func (w *writeWatch) WriteBatch(m []udp.Message) (int, error) {
	if w.in.Add(1) > 1 {
		w.overlap.Store(true)
	}
	defer w.in.Add(-1)
	n := w.n.Add(int64(len(m)))
	if w.written != nil {
		w.written(n)
	}
	return len(m), nil
}

// TestBuildWritesAsItGoes: the workers write their datagrams while they
// build, whenever their queue holds sendEvery, one writer at a time, not
// all after the build: the second worker is held on its first connection
// until the socket has had a batch, which only the first worker's
// writing during the build can give. Without it, this deadlocks
// (synctest reports it).
func TestBuildWritesAsItGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4 * sendEvery
		s, conns, now := newBareServer(t, 2, n)
		defer s.builder.stop()
		release := make(chan struct{})
		watch := &writeWatch{written: func(k int64) {
			if k >= sendEvery && release != nil {
				close(release)
				release = nil
			}
		}}
		s.conn, s.out.conn = watch, watch
		slices.SortFunc(conns, func(x, y *Conn) int { return int(x.id) - int(y.id) })
		var built atomic.Int64
		for i, c := range conns {
			f := &stallFrames{built: &built, after: func(int64) {}}
			if i == n/2 { // the first of the second worker's share
				f.block = release
			}
			c.SetFrameHandler(f)
		}
		s.build(*now)
		if got := watch.n.Load(); got != n {
			t.Errorf("%d datagrams written for %d connections", got, n)
		}
		if watch.overlap.Load() {
			t.Error("two workers wrote to the socket at once")
		}
	})
}

// TestBuildFollowsConnections: the builder lists the connections again
// when one came or went: a closed connection is not built from the next
// tick on, a new one is, every one once a tick.
func TestBuildFollowsConnections(t *testing.T) {
	s, conns, now := newBareServer(t, 2, 70)
	defer s.builder.stop()
	built := make(map[*Conn]*atomic.Int64)
	watch := func(c *Conn) {
		n := new(atomic.Int64)
		built[c] = n
		c.SetFrameHandler(&stallFrames{built: n, after: func(int64) {}})
	}
	for _, c := range conns {
		watch(c)
	}
	s.build(*now)
	for _, c := range conns[:3] {
		s.disconnect(c, proto.DisconnectClosed, *now, false)
	}
	s.build(*now)
	for i := range 2 {
		watch(addBareConn(t, s, 1000+i, *now))
	}
	s.build(*now)
	for c, n := range built {
		want := int64(3)
		if slices.Contains(conns[:3], c) || !slices.Contains(conns, c) {
			want = 1 // before it closed, or since it came
		}
		if got := n.Load(); got != want {
			t.Errorf("connection %d built %d times, want %d", c.id, got, want)
		}
	}
}

// BenchmarkTransportTick is the transport's part of a server tick for n
// connections: each connection's packet built with a 200-byte frame from
// its frame handler (as a game's snapshot delta), sealed, and written in
// batches, by one worker and by two (Config.Workers). The game's part is
// BenchmarkServerTick in package game.
func BenchmarkTransportTick(b *testing.B) {
	for _, n := range []int{256, 1000} {
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("conns=%d/workers=%d", n, w), func(b *testing.B) {
				s, conns, now := newBareServer(b, w, n)
				defer s.builder.stop()
				for _, c := range conns {
					c.SetFrameHandler(fixedFrames{})
				}
				// build, not tick: the bare connections hear nothing, and
				// tick would time them out.
				tick := func() {
					*now = now.Add(time.Second / 60)
					s.build(*now)
					s.out.flush()
				}
				for range 120 {
					tick()
				}
				b.ReportAllocs()
				for b.Loop() {
					tick()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/conn")
				if st := s.Stats(); st.PacketsOut < uint64(b.N*n) {
					b.Fatalf("%d packets sent in %d ticks of %d connections", st.PacketsOut, b.N, n)
				}
			})
		}
	}
}

// fixedFrames writes a 200-byte frame into every packet.
type fixedFrames struct{}

var fixedFrame = func() []byte {
	f := proto.MessageFrame{Channel: 1, Data: make([]byte, 196)}
	b, _ := f.Append(nil)
	return b
}()

func (fixedFrames) Frame(proto.FrameType, []byte, *PacketInfo) error { return nil }
func (fixedFrames) Ticks() Ticks                                     { return Ticks{} }
func (fixedFrames) AppendFrames(b []byte, room int, _ *PacketInfo) []byte {
	if len(fixedFrame) > room {
		return b
	}
	return append(b, fixedFrame...)
}
