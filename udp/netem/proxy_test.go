package netem

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp/udptest"
)

// echo answers every datagram until its conn closes.
func echo(pc net.PacketConn) {
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		pc.WriteTo(buf[:n], from)
	}
}

func TestProxyInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: time.Millisecond}})
		srv := listen(t, n, "10.0.0.2:7777")
		seen := make(chan netip.AddrPort, 16)
		go func() {
			buf := make([]byte, 2048)
			for {
				k, from, err := srv.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				seen <- from
				srv.WriteToUDPAddrPort(buf[:k], from)
			}
		}()
		ln := listen(t, n, "10.0.0.3:7000")
		dial := func() (net.PacketConn, error) { return n.Listen("10.0.0.3:0") }
		p := NewProxy(ln, srv.LocalAddr(), dial, ProxyConfig{
			Up: MustParse("delay 20ms"), Down: MustParse("delay 30ms"), IdleTimeout: time.Second,
		})
		defer p.Close()

		c1 := listen(t, n, "10.0.0.1:1")
		c2 := listen(t, n, "10.0.0.1:2")
		buf := make([]byte, 64)
		var sources []netip.AddrPort
		for _, c := range []*udptest.Conn{c1, c2, c1} {
			start := time.Now()
			c.WriteTo([]byte("ping"), p.Addr())
			k, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil || string(buf[:k]) != "ping" || from != ln.AddrPort() {
				t.Fatalf("reply %q from %v: %v", buf[:k], from, err)
			}
			// 4 links of 1ms, 20ms up, 30ms down.
			if rtt := time.Since(start); rtt != 54*time.Millisecond {
				t.Fatalf("round trip %v, want 54ms", rtt)
			}
			sources = append(sources, <-seen)
		}
		if sources[0] == sources[1] || sources[0] != sources[2] {
			t.Fatalf("upstream saw clients as %v: want one socket per client", sources)
		}
		up, down := p.Stats()
		if up.Forwarded != 3 || down.Forwarded != 3 || up.DelayMean != 20*time.Millisecond || down.DelayMean != 30*time.Millisecond {
			t.Fatalf("up %v\ndown %v", up, down)
		}
		if p.Clients() != 2 {
			t.Fatalf("%d clients", p.Clients())
		}
		time.Sleep(2 * time.Second) // virtual: both clients idle out
		synctest.Wait()
		if p.Clients() != 0 {
			t.Fatalf("%d clients after the idle timeout", p.Clients())
		}
	})
}

func TestProxyRealSockets(t *testing.T) {
	srv, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go echo(srv)
	p, err := ListenProxy("127.0.0.1:0", srv.LocalAddr().String(), ProxyConfig{
		Up: MustParse("delay 10ms"), Down: MustParse("delay 15ms"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cli, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cli.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for i := range 5 {
		start := time.Now()
		if _, err := cli.WriteTo([]byte{byte(i)}, p.Addr()); err != nil {
			t.Fatal(err)
		}
		n, _, err := cli.ReadFrom(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("echo %d: %v", i, err)
		}
		if rtt := time.Since(start); rtt < 25*time.Millisecond {
			t.Fatalf("round trip %v, shorter than the 25ms configured", rtt)
		}
	}
	up, down := p.Stats()
	if up.Forwarded != 5 || down.Forwarded != 5 {
		t.Fatalf("up %v down %v", up, down)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestListenProxyErrors(t *testing.T) {
	if _, err := ListenProxy("127.0.0.1:0", "no-such-host.invalid:1", ProxyConfig{}); err == nil {
		t.Error("bad upstream accepted")
	}
	if _, err := ListenProxy("256.0.0.1:0", "127.0.0.1:1", ProxyConfig{}); err == nil {
		t.Error("bad listen address accepted")
	}
}
