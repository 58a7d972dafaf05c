package udp

import (
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/tickwire/tickwire/internal/race"
)

// TestZeroAllocsPerDatagram sends and receives batches over real loopback
// sockets and requires no allocation at all in steady state, for each
// family and for batched (also as one GSO run) and one-datagram-per-call
// configurations.
func TestZeroAllocsPerDatagram(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not asserted under -race")
	}
	for _, tc := range []struct {
		name, network, addr string
		batch               int
		gso                 bool
	}{
		{"v4 batch 32", "udp4", "127.0.0.1:0", 32, false},
		{"v4 batch 32 GSO", "udp4", "127.0.0.1:0", 32, true},
		{"v6 batch 32", "udp6", "[::1]:0", 32, false},
		{"dual-stack batch 32", "udp", ":0", 32, false},
		{"v4 single", "udp4", "127.0.0.1:0", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := listenPair(t, tc.network, tc.addr, Config{BatchSize: tc.batch, GSO: tc.gso})
			const count = 32
			var pool BufferPool
			out, in := make([]Message, count), make([]Message, count)
			pool.Fill(out)
			pool.Fill(in)
			for i := range out {
				out[i].Buf = out[i].Buf[:100]
				out[i].Addr = loopback(b)
			}
			b.SetReadDeadline(time.Now().Add(time.Minute))
			roundTrip := func() {
				if n, err := a.WriteBatch(out); n != count || err != nil {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				for got := 0; got < count; {
					n, err := b.ReadBatch(in[got:])
					if err != nil {
						t.Fatal(err)
					}
					got += n
				}
			}
			roundTrip() // warm up x/net's pooled headers
			if allocs := testing.AllocsPerRun(200, roundTrip); allocs != 0 {
				t.Fatalf("%v allocations per round trip of %d datagrams, want 0", allocs, count)
			}
		})
	}
}

// TestXNetReadBatchAllocates documents why Conn reads with its own
// recvmmsg: x/net's ReadBatch allocates for every datagram it returns (a
// net.UDPAddr and its net.IP). If this starts failing, x/net has fixed
// that and the reader could go back to it.
func TestXNetReadBatchAllocates(t *testing.T) {
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	xb := ipv4.NewPacketConn(b.uc)
	const count = 32
	out := make([]Message, count)
	xin := make([]ipv4.Message, count)
	for i := range out {
		out[i] = Message{Buf: make([]byte, 100), Addr: loopback(b)}
		xin[i].Buffers = [][]byte{make([]byte, 1500)}
	}
	b.SetReadDeadline(time.Now().Add(time.Minute))
	roundTrip := func() {
		if _, err := a.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < count; {
			n, err := xb.ReadBatch(xin[got:], 0)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	roundTrip()
	allocs := testing.AllocsPerRun(50, roundTrip)
	t.Logf("x/net ReadBatch: %.1f allocations per %d datagrams received", allocs, count)
	if allocs < count {
		t.Fatalf("x/net ReadBatch made %.1f allocations for %d datagrams; it no longer allocates per datagram", allocs, count)
	}
}
