package netem

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

func listen(t *testing.T, n *udptest.Network, addr string) *udptest.Conn {
	t.Helper()
	c, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type arrival struct {
	idx int
	at  time.Duration
}

// exchange sends count datagrams from a to b, every interval, and
// returns what b received until readTimeout of silence (virtual time).
func exchange(t *testing.T, a net.PacketConn, b net.PacketConn, to net.Addr, count int, interval time.Duration) []arrival {
	start := time.Now()
	go func() {
		for i := range count {
			var buf [8]byte
			binary.BigEndian.PutUint32(buf[:], uint32(i))
			if _, err := a.WriteTo(buf[:], to); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(interval)
		}
	}()
	var got []arrival
	buf := make([]byte, 64)
	for {
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := b.ReadFrom(buf)
		if isTimeout(err) {
			return got
		}
		if err != nil || n != 8 {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		got = append(got, arrival{int(binary.BigEndian.Uint32(buf)), time.Since(start)})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestConnDelayInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 5 * time.Millisecond}})
		a := Wrap(listen(t, n, "10.0.0.1:1"), Config{Egress: MustParse("delay 50ms")})
		defer a.Close()
		b := listen(t, n, "10.0.0.2:1")
		got := exchange(t, a, b, b.LocalAddr(), 10, time.Millisecond)
		if len(got) != 10 {
			t.Fatalf("received %d of 10", len(got))
		}
		for i, g := range got {
			if want := (arrival{i, time.Duration(i)*time.Millisecond + 55*time.Millisecond}); g != want {
				t.Fatalf("arrival %d = %+v, want %+v", i, g, want)
			}
		}
		eg, in := a.Stats()
		if eg.Forwarded != 10 || eg.DelayMean != 50*time.Millisecond || eg.DelayP99 != 50*time.Millisecond || in.Offered != 0 {
			t.Fatalf("stats egress %v ingress %v", eg, in)
		}
	})
}

func TestConnIngressInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{})
		a := listen(t, n, "10.0.0.1:1")
		b := Wrap(listen(t, n, "10.0.0.2:1"), Config{Ingress: MustParse("delay 20ms loss 10%"), Seed: 3})
		defer b.Close()
		const count = 20000
		got := exchange(t, a, b, b.LocalAddr(), count, 100*time.Microsecond)
		within(t, "loss rate", 1-float64(len(got))/count, 0.1, binomialTol(0.1, count))
		for _, g := range got {
			if g.at != time.Duration(g.idx)*100*time.Microsecond+20*time.Millisecond {
				t.Fatalf("datagram %d arrived at %v", g.idx, g.at)
			}
		}
		_, in := b.Stats()
		if in.Offered != count || in.Forwarded != uint64(len(got)) || in.Dropped != uint64(count-len(got)) {
			t.Fatalf("ingress stats %v, %d received", in, len(got))
		}
	})
}

// TestConnDeterministic runs an impaired exchange twice in virtual time:
// the same seed gives the same arrivals, another seed does not.
func TestConnDeterministic(t *testing.T) {
	spec := MustParse("delay 40ms 15ms distribution normal loss gemodel 3% 25% duplicate 5% reorder 10% corrupt 1% rate 2mbit")
	run := func(seed uint64) []arrival {
		var got []arrival
		synctest.Test(t, func(t *testing.T) {
			n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 3 * time.Millisecond}})
			a := Wrap(listen(t, n, "10.0.0.1:1"), Config{Egress: spec, Seed: seed})
			defer a.Close()
			b := listen(t, n, "10.0.0.2:1")
			got = exchange(t, a, b, b.LocalAddr(), 2000, 500*time.Microsecond)
		})
		return got
	}
	first, second, other := run(7), run(7), run(8)
	if !slices.Equal(first, second) {
		t.Fatal("same seed, different arrivals")
	}
	if slices.Equal(first, other) {
		t.Fatal("different seeds, identical arrivals")
	}
	inversions := 0
	for i := 1; i < len(first); i++ {
		if first[i].idx < first[i-1].idx {
			inversions++
		}
	}
	t.Logf("%d arrivals of 2000, %d out of order", len(first), inversions)
	if inversions == 0 || len(first) == 2000 {
		t.Fatal("the spec impaired nothing")
	}
}

func TestConnAsBatchConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{})
		a := udp.FromPacketConn(Wrap(listen(t, n, "10.0.0.1:1"), Config{Egress: MustParse("delay 10ms")}))
		defer a.Close()
		b := udp.FromPacketConn(listen(t, n, "10.0.0.2:1"))
		start := time.Now()
		if _, err := a.WriteBatch([]udp.Message{{Buf: []byte("hi"), Addr: b.LocalAddr()}}); err != nil {
			t.Fatal(err)
		}
		in := []udp.Message{{Buf: make([]byte, 16)}}
		if n, err := b.ReadBatch(in); n != 1 || err != nil || string(in[0].Buf[:in[0].N]) != "hi" || in[0].Addr != a.LocalAddr() {
			t.Fatalf("ReadBatch %d %v %+v", n, err, in[0])
		}
		if time.Since(start) != 10*time.Millisecond {
			t.Fatalf("arrived after %v", time.Since(start))
		}
	})
}

func TestConnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{})
		inner := listen(t, n, "10.0.0.1:1")
		c := Wrap(inner, Config{Egress: MustParse("delay 1s"), Ingress: MustParse("delay 1s")})
		done := make(chan error)
		go func() {
			_, _, err := c.ReadFrom(make([]byte, 8))
			done <- err
		}()
		c.WriteToUDPAddrPort([]byte("queued"), netip.MustParseAddrPort("10.0.0.2:1"))
		synctest.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("blocked ReadFrom after Close: %v", err)
		}
		if _, err := c.WriteTo([]byte("x"), inner.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("WriteTo after Close: %v", err)
		}
		if _, err := inner.WriteTo([]byte("x"), inner.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("wrapped conn not closed: %v", err)
		}
	})
}

// TestConnRealSockets impairs real loopback sockets: every datagram is
// duplicated and none arrives before its delay.
func TestConnRealSockets(t *testing.T) {
	mk := func() *net.UDPConn {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc.(*net.UDPConn)
	}
	a := Wrap(mk(), Config{Egress: MustParse("delay 20ms duplicate 100%")})
	defer a.Close()
	b := mk()
	const count = 50
	sent := make([]time.Time, count)
	for i := range count {
		sent[i] = time.Now()
		if _, err := a.WriteTo([]byte{byte(i)}, b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]int, count)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 8)
	for range 2 * count {
		n, _, err := b.ReadFrom(buf)
		if err != nil || n != 1 {
			t.Fatalf("read: %d, %v", n, err)
		}
		i := int(buf[0])
		if d := time.Since(sent[i]); d < 20*time.Millisecond {
			t.Fatalf("datagram %d arrived after %v, before its 20ms delay", i, d)
		}
		seen[i]++
	}
	for i, k := range seen {
		if k != 2 {
			t.Fatalf("datagram %d arrived %d times, want 2", i, k)
		}
	}
	eg, _ := a.Stats()
	if eg.Forwarded != 2*count || eg.Duplicated != count || eg.DelayMean < 20*time.Millisecond {
		t.Fatalf("stats %v", eg)
	}
}
