package udp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

func listenPair(t testing.TB, network, addr string, cfg Config) (a, b *Conn) {
	t.Helper()
	var err error
	if a, err = Listen(network, addr, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Listen(network, addr, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// loopback returns c's address with the unspecified host replaced by the
// loopback address of the same family.
func loopback(c *Conn) netip.AddrPort {
	a := c.LocalAddr()
	if a.Addr().IsUnspecified() {
		if a.Addr().Is4() {
			return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), a.Port())
		}
		return netip.AddrPortFrom(netip.IPv6Loopback(), a.Port())
	}
	return a
}

// gsoKernel reports whether the kernel takes UDP_SEGMENT (Linux 4.18: Config.GSO).
func gsoKernel(t *testing.T) bool {
	c, err := Listen("udp4", "127.0.0.1:0", Config{GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Info().GSO
}

// readAll reads until want datagrams arrived, failing after a deadline.
func readAll(t testing.TB, c *Conn, msgs []Message, want int) []Message {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	got := 0
	for got < want {
		n, err := c.ReadBatch(msgs[got:])
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", got, want, err)
		}
		got += n
	}
	return msgs[:got]
}

func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{
		{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}, {"udp", ":0"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			// BatchSize 16 makes WriteBatch split 100 datagrams into 7 calls.
			a, b := listenPair(t, tc.network, tc.addr, Config{BatchSize: 16})
			const count = 100
			out := make([]Message, count)
			for i := range out {
				out[i] = Message{Buf: bytes.Repeat([]byte{byte(i)}, 1+i*7), Addr: loopback(b)}
			}
			if n, err := a.WriteBatch(out); n != count || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			var pool BufferPool
			in := make([]Message, count)
			pool.Fill(in)
			defer pool.Release(in)
			readAll(t, b, in, count)
			for i, m := range in {
				if want := out[i].Buf; !bytes.Equal(m.Buf[:m.N], want) {
					t.Fatalf("datagram %d: %d bytes %x..., want %d bytes of %x", i, m.N, m.Buf[:1], len(want), want[:1])
				}
				if m.Addr != loopback(a) {
					t.Fatalf("datagram %d from %v, want %v", i, m.Addr, loopback(a))
				}
			}
			ws, rs := a.Stats().Write, b.Stats().Read
			if ws.Datagrams != count || rs.Datagrams != count || ws.Bytes != rs.Bytes || ws.Errors+rs.Errors != 0 {
				t.Errorf("stats write %+v read %+v", ws, rs)
			}
			if ws.Syscalls != 7 || ws.BatchSizes[4] != 6 || ws.BatchSizes[2] != 1 {
				t.Errorf("write batches %d (sizes %v), want 6 of 16 and 1 of 4", ws.Syscalls, ws.BatchSizes)
			}
			if rs.MeanBatch() < 1 || rs.MeanBatch() > 16 {
				t.Errorf("mean read batch %.1f", rs.MeanBatch())
			}
		})
	}
}

func TestDualStackSourcesUnmapped(t *testing.T) {
	srv, err := Listen("udp", ":0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lo4 := netip.MustParseAddr("127.0.0.1")

	// IPv4 into a dual-stack socket: the source comes out plain IPv4.
	if _, err := cli.WriteBatch([]Message{{Buf: []byte("hi"), Addr: netip.AddrPortFrom(lo4, srv.LocalAddr().Port())}}); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, srv, []Message{{Buf: make([]byte, 64)}}, 1)[0]
	if got.Addr != cli.LocalAddr() {
		t.Fatalf("dual-stack socket saw source %v, want %v", got.Addr, cli.LocalAddr())
	}
	// The dual-stack socket reaches an IPv4 peer by plain and mapped address.
	for _, host := range []string{"127.0.0.1", "::ffff:127.0.0.1"} {
		dst := netip.AddrPortFrom(netip.MustParseAddr(host), cli.LocalAddr().Port())
		if _, err := srv.WriteBatch([]Message{{Buf: []byte(host), Addr: dst}}); err != nil {
			t.Fatalf("to %v: %v", dst, err)
		}
		got := readAll(t, cli, []Message{{Buf: make([]byte, 64)}}, 1)[0]
		if string(got.Buf[:got.N]) != host || got.Addr != netip.AddrPortFrom(lo4, srv.LocalAddr().Port()) {
			t.Fatalf("IPv4 socket got %q from %v", got.Buf[:got.N], got.Addr)
		}
	}
}

func TestTruncatedDatagramsDropped(t *testing.T) {
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	big := make([]byte, 3000)
	out := []Message{
		{Buf: []byte("first"), Addr: loopback(b)},
		{Buf: big, Addr: loopback(b)},
		{Buf: []byte("last"), Addr: loopback(b)},
	}
	if n, err := a.WriteBatch(out); n != 3 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	in := make([]Message, 3)
	var pool BufferPool
	pool.Fill(in)
	defer pool.Release(in)
	got := readAll(t, b, in, 2)
	if string(got[0].Buf[:got[0].N]) != "first" || string(got[1].Buf[:got[1].N]) != "last" {
		t.Fatalf("got %q, %q", got[0].Buf[:got[0].N], got[1].Buf[:got[1].N])
	}
	if d := b.Stats().Read.Dropped; d != 1 {
		t.Fatalf("Dropped = %d, want 1", d)
	}
	// Every buffer is still owned by some message.
	seen := map[*byte]bool{}
	for _, m := range in {
		if cap(m.Buf) != BufferSize || seen[&m.Buf[:1][0]] {
			t.Fatalf("buffers lost or duplicated: %v", in)
		}
		seen[&m.Buf[:1][0]] = true
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	c, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.ReadBatch([]Message{{Buf: make([]byte, 64)}})
		done <- err
	}()
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadBatch after Close: %v, want net.ErrClosed", err)
	}
	_, err = c.WriteBatch([]Message{{Buf: []byte("x"), Addr: netip.MustParseAddrPort("127.0.0.1:9")}})
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteBatch after Close: %v, want net.ErrClosed", err)
	}
	if s := c.Stats(); s.Read.Errors != 0 || s.Write.Errors != 0 {
		t.Fatalf("Close counted as an error: %+v", s)
	}
}

func TestReadDeadline(t *testing.T) {
	c, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err = c.ReadBatch([]Message{{Buf: make([]byte, 64)}})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadBatch past deadline: %v", err)
	}
}

func TestWriteErrorReportsIndex(t *testing.T) {
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	out := []Message{
		{Buf: []byte("ok"), Addr: loopback(b)},
		{Buf: make([]byte, 70000), Addr: loopback(b)}, // larger than any UDP datagram
		{Buf: []byte("after"), Addr: loopback(b)},
	}
	n, err := a.WriteBatch(out)
	if n != 1 || err == nil {
		t.Fatalf("WriteBatch = %d, %v; want 1 and an error for the oversize datagram", n, err)
	}
	if e := a.Stats().Write.Errors; e != 1 {
		t.Fatalf("write errors %d, want 1", e)
	}
	if n, err := a.WriteBatch(out[2:]); n != 1 || err != nil {
		t.Fatalf("resume: %d, %v", n, err)
	}
	in := readAll(t, b, []Message{{Buf: make([]byte, 64)}, {Buf: make([]byte, 64)}}, 2)
	if string(in[0].Buf[:in[0].N]) != "ok" || string(in[1].Buf[:in[1].N]) != "after" {
		t.Fatalf("received %q, %q", in[0].Buf[:in[0].N], in[1].Buf[:in[1].N])
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{{DSCP: 64}, {ECN: 4}, {BatchSize: -1}, {BatchSize: MaxBatchSize + 1}} {
		if _, err := Listen("udp4", "127.0.0.1:0", cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Listen(%+v): %v, want ErrConfig", cfg, err)
		}
	}
	if _, err := Listen("tcp", "127.0.0.1:0", Config{}); err == nil {
		t.Error("Listen tcp succeeded")
	}
}

func TestFromPacketConn(t *testing.T) {
	for _, generic := range []bool{false, true} {
		t.Run(fmt.Sprint("generic=", generic), func(t *testing.T) {
			mk := func() BatchConn {
				pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pc.Close() })
				if generic {
					return FromPacketConn(plainPacketConn{pc})
				}
				return FromPacketConn(pc)
			}
			a, b := mk(), mk()
			out := []Message{{Buf: []byte("one"), Addr: b.LocalAddr()}, {Buf: []byte("two"), Addr: b.LocalAddr()}}
			if n, err := a.WriteBatch(out); n != 2 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			for _, want := range []string{"one", "two"} {
				in := []Message{{Buf: make([]byte, 64)}, {Buf: make([]byte, 64)}}
				n, err := b.ReadBatch(in)
				if n != 1 || err != nil || string(in[0].Buf[:in[0].N]) != want || in[0].Addr != a.LocalAddr() {
					t.Fatalf("ReadBatch = %d, %v, %q from %v", n, err, in[0].Buf[:in[0].N], in[0].Addr)
				}
			}
			a.Close()
			if _, err := a.ReadBatch([]Message{{Buf: make([]byte, 8)}}); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// plainPacketConn hides *net.UDPConn's AddrPort methods.
type plainPacketConn struct{ net.PacketConn }
