package relay

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/tickwire/tickwire/udp"
)

// loopbackRelay serves a relay on 127.0.0.1 until the test ends and
// returns its control address.
func loopbackRelay(t testing.TB, cfg Config) (*Server, netip.AddrPort) {
	t.Helper()
	srv, err := NewServer(testKey, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctrl) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return srv, ctrl.LocalAddr()
}

func listenLoopback(t testing.TB) *net.UDPConn {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// echoLoop sends back every datagram pc receives, to where it came
// from, until pc is closed.
func echoLoop(pc *net.UDPConn) {
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err == nil {
			pc.WriteToUDPAddrPort(buf[:n], from)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRoundTrip is a 200-byte datagram's round trip on loopback
// to an echoing socket: direct, and through a relay (both ends bound to
// an allocation). The difference is what the relay adds: two forwarded
// datagrams per round trip. cpu-ns/op is the whole process's CPU time
// (client, echo and relay) per round trip.
func BenchmarkRoundTrip(b *testing.B) {
	for _, via := range []string{"direct", "relay"} {
		b.Run(via, func(b *testing.B) {
			client, echo := listenLoopback(b), listenLoopback(b)
			to := echo.LocalAddr().(*net.UDPAddr).AddrPort()
			if via == "relay" {
				_, ctrl := loopbackRelay(b, Config{Rate: 1 << 30})
				gj, gh, err := MintPair(testKey, time.Now().Add(time.Hour), 1<<50)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := Bind(ctx, echo, ctrl, gh); err != nil {
					b.Fatal(err)
				}
				if to, err = Bind(ctx, client, ctrl, gj); err != nil {
					b.Fatal(err)
				}
			}
			go echoLoop(echo)
			pkt, buf := twPacket(200), make([]byte, 2048)
			client.SetReadDeadline(time.Now().Add(time.Minute))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := client.WriteToUDPAddrPort(pkt, to); err != nil {
					b.Fatal(err)
				}
				if _, _, err := client.ReadFromUDPAddrPort(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
