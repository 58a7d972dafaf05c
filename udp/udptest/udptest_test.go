package udptest

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp"
)

func listen(t *testing.T, n *Network, addr string) *Conn {
	t.Helper()
	c, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLatencyAndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Config{Link: Link{Latency: 30 * time.Millisecond}})
		a := listen(t, n, "10.0.0.1:0")
		b := listen(t, n, "10.0.0.2:7777")
		c := listen(t, n, "10.0.0.3:0")
		n.SetLink(c.AddrPort().Addr(), b.AddrPort().Addr(), Link{Latency: 10 * time.Millisecond})

		start := time.Now()
		for i := range 3 {
			a.WriteToUDPAddrPort([]byte{'a', byte('0' + i)}, b.AddrPort())
		}
		c.WriteToUDPAddrPort([]byte("c0"), b.AddrPort())
		time.Sleep(5 * time.Millisecond) // virtual time
		c.WriteToUDPAddrPort([]byte("c1"), b.AddrPort())

		type arrival struct {
			data string
			from netip.AddrPort
			at   time.Duration
		}
		want := []arrival{
			{"c0", c.AddrPort(), 10 * time.Millisecond},
			{"c1", c.AddrPort(), 15 * time.Millisecond},
			{"a0", a.AddrPort(), 30 * time.Millisecond},
			{"a1", a.AddrPort(), 30 * time.Millisecond},
			{"a2", a.AddrPort(), 30 * time.Millisecond},
		}
		buf := make([]byte, 64)
		for _, w := range want {
			k, from, err := b.ReadFromUDPAddrPort(buf)
			got := arrival{string(buf[:k]), from, time.Since(start)}
			if err != nil || got != w {
				t.Fatalf("got %+v, %v; want %+v", got, err, w)
			}
		}
		if s := n.Stats(); s.Sent != 5 || s.Delivered != 5 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestMTU(t *testing.T) {
	n := NewNetwork(Config{})
	a4 := listen(t, n, "10.0.0.1:1")
	b4 := listen(t, n, "10.0.0.2:1")
	a6 := listen(t, n, "[fd00::1]:1")
	b6 := listen(t, n, "[fd00::2]:1")
	small := listen(t, n, "10.0.0.9:1")
	n.SetLink(a4.AddrPort().Addr(), small.AddrPort().Addr(), Link{MTU: 1280})
	for _, tc := range []struct {
		from *Conn
		to   netip.AddrPort
		size int
		ok   bool
	}{
		{a4, b4.AddrPort(), 1472, true},
		{a4, b4.AddrPort(), 1473, false},
		{a6, b6.AddrPort(), 1452, true},
		{a6, b6.AddrPort(), 1453, false},
		{a4, small.AddrPort(), 1252, true},
		{a4, small.AddrPort(), 1253, false},
	} {
		_, err := tc.from.WriteToUDPAddrPort(make([]byte, tc.size), tc.to)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("%d bytes to %v: %v", tc.size, tc.to, err)
		}
	}
	if s := n.Stats(); s.RejectedMTU != 3 || s.Delivered != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestCloseAndDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Config{})
		a := listen(t, n, "10.0.0.1:1")
		start := time.Now()
		a.SetReadDeadline(start.Add(time.Second))
		_, _, err := a.ReadFromUDPAddrPort(make([]byte, 8))
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("after %v: %v, want deadline exceeded at 1s", time.Since(start), err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%v is not a timeout net.Error", err)
		}
		a.SetReadDeadline(time.Time{})

		done := make(chan error)
		go func() {
			_, _, err := a.ReadFrom(make([]byte, 8))
			done <- err
		}()
		synctest.Wait() // the reader is blocked
		a.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("blocked read after Close: %v", err)
		}
		if _, err := a.WriteTo([]byte("x"), a.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after Close: %v", err)
		}
		if _, err := n.Listen("10.0.0.1:1"); err != nil {
			t.Fatalf("address not released by Close: %v", err)
		}
	})
}

func TestDrops(t *testing.T) {
	n := NewNetwork(Config{QueueLen: 4})
	a := listen(t, n, "10.0.0.1:1")
	b := listen(t, n, "10.0.0.2:1")
	for range 6 {
		a.WriteToUDPAddrPort([]byte("x"), b.AddrPort())
	}
	a.WriteToUDPAddrPort([]byte("x"), netip.MustParseAddrPort("10.0.0.3:1"))
	if s := n.Stats(); s.Sent != 7 || s.Delivered != 4 || s.QueueFull != 2 || s.NoListener != 1 {
		t.Fatalf("stats %+v", s)
	}
	// A short buffer truncates, like recvfrom.
	a.WriteToUDPAddrPort([]byte("hello"), a.AddrPort())
	buf := make([]byte, 2)
	for range 4 {
		b.ReadFromUDPAddrPort(buf)
	}
	if k, _, _ := a.ReadFromUDPAddrPort(buf); k != 2 || string(buf) != "he" {
		t.Fatalf("truncated read %d %q", k, buf[:k])
	}
	if _, err := n.Listen("0.0.0.0:1"); err == nil {
		t.Fatal("listening on an unspecified address succeeded")
	}
	if _, err := n.Listen("10.0.0.2:1"); err == nil {
		t.Fatal("listening twice on one address succeeded")
	}
}

// TestDeterministic runs the same exchange twice in virtual time and
// expects identical arrival times.
func TestDeterministic(t *testing.T) {
	run := func() []time.Duration {
		var got []time.Duration
		synctest.Test(t, func(t *testing.T) {
			n := NewNetwork(Config{Link: Link{Latency: 7 * time.Millisecond}})
			a := listen(t, n, "10.0.0.1:1")
			b := listen(t, n, "10.0.0.2:1")
			start := time.Now()
			go func() {
				for i := range 20 {
					a.WriteToUDPAddrPort([]byte{byte(i)}, b.AddrPort())
					time.Sleep(time.Duration(i%3) * time.Millisecond)
				}
			}()
			buf := make([]byte, 4)
			for range 20 {
				b.ReadFromUDPAddrPort(buf)
				got = append(got, time.Since(start))
			}
		})
		return got
	}
	first, second := run(), run()
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("arrival %d at %v then %v", i, first[i], second[i])
		}
	}
	if first[0] != 7*time.Millisecond {
		t.Fatalf("first arrival at %v, want 7ms", first[0])
	}
}

// TestBatchConnNoAllocs checks the udp.FromPacketConn path over the
// in-memory network allocates nothing per datagram.
func TestBatchConnNoAllocs(t *testing.T) {
	n := NewNetwork(Config{})
	a := udp.FromPacketConn(listen(t, n, "10.0.0.1:1"))
	b := udp.FromPacketConn(listen(t, n, "10.0.0.2:1"))
	out := []udp.Message{{Buf: make([]byte, 100), Addr: b.LocalAddr()}}
	in := []udp.Message{{Buf: make([]byte, 1500)}}
	step := func() {
		if _, err := a.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadBatch(in); err != nil || in[0].N != 100 || in[0].Addr != a.LocalAddr() {
			t.Fatalf("%v %+v", err, in[0])
		}
	}
	step()
	if allocs := testing.AllocsPerRun(100, step); allocs != 0 {
		t.Fatalf("%v allocations per datagram", allocs)
	}
}
