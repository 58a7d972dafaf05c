//go:build linux

package udp

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// The benchmarks move 100-byte datagrams over IPv4 loopback; one
// iteration is one datagram. Besides ns/op and allocs/op they report
//
//	dgram/s          datagrams per second of wall time
//	cpu-ns/dgram     process CPU (user+system, all threads) per datagram
//	rx-cpu-ns/dgram  (receive) the receiving thread's CPU per datagram
//
// Send benchmarks send to a bound socket nobody reads (the kernel drops
// what overflows it), as scripts/sendmmsg-bench.c does. Receive
// benchmarks run a sender goroutine blasting batches of 64 while the
// benchmark goroutine, locked to its thread, receives.
const benchSize = 100

func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD (not in package syscall).
const rusageThread = 1

func report(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "dgram/s")
	b.ReportMetric(float64(cpuTime(syscall.RUSAGE_SELF)-cpu0)/float64(b.N), "cpu-ns/dgram")
}

func benchConns(b *testing.B, batch int, gso bool) (tx, rx *Conn) {
	var err error
	if tx, err = Listen("udp4", "127.0.0.1:0", Config{BatchSize: batch, GSO: gso}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tx.Close() })
	if rx, err = Listen("udp4", "127.0.0.1:0", Config{BatchSize: batch}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rx.Close() })
	return tx, rx
}

// BenchmarkSend's batches go to one address: one message a datagram,
// or with gso=on (Config.GSO) each batch one segmented message.
func BenchmarkSend(b *testing.B) {
	for _, c := range []struct {
		batch int
		gso   bool
	}{{256, false}, {256, true}, {64, false}, {64, true}, {8, false}, {8, true}, {1, false}} {
		name := fmt.Sprintf("batch=%d", c.batch)
		if c.gso {
			name += "/gso=on"
		}
		b.Run(name, func(b *testing.B) {
			tx, rx := benchConns(b, c.batch, c.gso)
			msgs := make([]Message, c.batch)
			for i := range msgs {
				msgs[i] = Message{Buf: make([]byte, benchSize), Addr: rx.LocalAddr()}
			}
			b.ReportAllocs()
			cpu0 := cpuTime(syscall.RUSAGE_SELF)
			k := 0
			for b.Loop() {
				if k++; k == c.batch {
					if _, err := tx.WriteBatch(msgs); err != nil {
						b.Fatal(err)
					}
					k = 0
				}
			}
			tx.WriteBatch(msgs[:k])
			report(b, cpu0)
		})
	}
	b.Run("stdlib-sendto", func(b *testing.B) {
		tx, rx := benchConns(b, 1, false)
		buf := make([]byte, benchSize)
		dst := rx.LocalAddr()
		b.ReportAllocs()
		cpu0 := cpuTime(syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, err := tx.uc.WriteToUDPAddrPort(buf, dst); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
	})
}

// blast sends batches of 64 datagrams to dst until its conn closes.
func blast(tx *Conn, dst *Conn, done chan<- struct{}) {
	defer close(done)
	msgs := make([]Message, 64)
	for i := range msgs {
		msgs[i] = Message{Buf: make([]byte, benchSize), Addr: dst.LocalAddr()}
	}
	for {
		if _, err := tx.WriteBatch(msgs); err != nil {
			return
		}
	}
}

// receive runs the benchmark loop around a receive function that fills
// up to len(msgs) messages.
func receive(b *testing.B, batch int, read func(rx *Conn, msgs []Message) (int, error)) {
	tx, rx := benchConns(b, batch, false)
	done := make(chan struct{})
	go blast(tx, rx, done)
	defer func() { tx.Close(); <-done }()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	msgs := make([]Message, batch)
	var pool BufferPool
	pool.Fill(msgs)
	defer pool.Release(msgs)
	rx.SetReadDeadline(time.Now().Add(time.Minute))

	b.ReportAllocs()
	cpu0, thread0 := cpuTime(syscall.RUSAGE_SELF), cpuTime(rusageThread)
	have := 0
	for b.Loop() {
		if have == 0 {
			n, err := read(rx, msgs)
			if err != nil {
				b.Fatal(err)
			}
			have = n
		}
		have--
	}
	b.ReportMetric(float64(cpuTime(rusageThread)-thread0)/float64(b.N), "rx-cpu-ns/dgram")
	report(b, cpu0)
}

func BenchmarkReceive(b *testing.B) {
	for _, batch := range []int{64, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			receive(b, batch, (*Conn).ReadBatch)
		})
	}
	b.Run("stdlib-recvfrom", func(b *testing.B) {
		receive(b, 1, func(rx *Conn, msgs []Message) (int, error) {
			n, addr, err := rx.uc.ReadFromUDPAddrPort(msgs[0].Buf)
			msgs[0].N, msgs[0].Addr = n, addr
			return 1, err
		})
	})
	// x/net's ReadBatch, which Conn does not use: it allocates per datagram.
	b.Run("xnet-batch=64", func(b *testing.B) {
		var xc *ipv4.PacketConn
		xmsgs := make([]ipv4.Message, 64)
		for i := range xmsgs {
			xmsgs[i].Buffers = [][]byte{make([]byte, BufferSize)}
		}
		receive(b, 64, func(rx *Conn, msgs []Message) (int, error) {
			if xc == nil {
				xc = ipv4.NewPacketConn(rx.uc)
			}
			return xc.ReadBatch(xmsgs, 0)
		})
	})
}
