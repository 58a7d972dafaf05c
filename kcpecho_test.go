package tickwire

import (
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname, for kcpFlush

	kcp "github.com/xtaci/kcp-go/v5"
)

// kcpFlush is kcp-go's (*KCP).flush, which its UDPSession calls on
// every Write and from its update timer, but which the library does not
// export (Update flushes at most once per interval, so a write would
// wait for it).
//
//go:linkname kcpFlush github.com/xtaci/kcp-go/v5.(*KCP).flush
func kcpFlush(k *kcp.KCP, flushType kcp.FlushType) uint32

// kcpEnd is one end of the kcp-go reference echo: a kcp-go KCP core
// driven as kcp-go's UDPSession drives it in the fast mode of
// bench.BenchmarkReliableEcho (nodelay 1, interval 10 ms, resend 2, no
// congestion window, window 256, MTU 1200, no FEC, no encryption): each
// output buffer is one datagram; a write is sent and flushed at once;
// input is acknowledged by the next flush (ackNoDelay false); a timer
// flushes again after the interval flush returns.
type kcpEnd struct {
	mu    sync.Mutex
	k     *kcp.KCP
	pc    net.PacketConn
	peer  net.Addr
	bytes uint64 // datagram bytes sent
}

func newKCPEnd(pc net.PacketConn) *kcpEnd {
	e := &kcpEnd{pc: pc}
	e.k = kcp.NewKCP(1, func(buf []byte, size int) {
		if e.peer != nil {
			e.pc.WriteTo(buf[:size], e.peer)
			e.bytes += uint64(size)
		}
	})
	e.k.NoDelay(1, 10, 2, 1)
	e.k.WndSize(256, 256)
	e.k.SetMtu(1200)
	return e
}

// write is UDPSession.Write: send, then flush at once.
func (e *kcpEnd) write(msg []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.k.Send(msg)
	kcpFlush(e.k, kcp.IKCP_FLUSH_FULL)
}

// run flushes on kcp-go's update timer and feeds received datagrams to
// the core, handing each complete message to got (under the lock), until
// done is closed.
func (e *kcpEnd) run(done chan struct{}, got func(msg []byte)) {
	go func() {
		for {
			e.mu.Lock()
			next := kcpFlush(e.k, kcp.IKCP_FLUSH_FULL)
			e.mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Duration(next) * time.Millisecond):
			}
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		msg := make([]byte, 2048)
		for {
			n, from, err := e.pc.ReadFrom(buf)
			if err != nil {
				return
			}
			e.mu.Lock()
			if e.peer == nil {
				e.peer = from
			}
			e.k.Input(buf[:n], kcp.IKCP_PACKET_REGULAR, false)
			for e.k.PeekSize() > 0 {
				got(msg[:e.k.Recv(msg)])
			}
			e.mu.Unlock()
		}
	}()
}

// kcpEchoVirtual is virtualEchoRTTs's echo (n 1 KB messages at 60/s,
// sent half a tick into the client's ticks, spec each way over the same
// seeded sockets) between two kcp-go ends: the reference tickwire's
// reliable channel is held to in virtual time, as
// bench.BenchmarkReliableEcho holds it to a kcp-go UDPSession over real
// sockets.
func kcpEchoVirtual(t *testing.T, spec string, n int) echoRun {
	listen := virtualPacketListen(t, spec)
	srv, cli := newKCPEnd(listen()), newKCPEnd(listen())
	defer srv.pc.Close()
	defer cli.pc.Close()
	cli.peer = srv.pc.LocalAddr()
	done := make(chan struct{})
	defer close(done)
	srv.run(done, func(msg []byte) {
		srv.k.Send(msg)
		kcpFlush(srv.k, kcp.IKCP_FLUSH_FULL)
	})
	sent := make([]time.Time, n)
	rtts := make([]time.Duration, 0, n)
	back := make(chan struct{}, n)
	cli.run(done, func(msg []byte) {
		i := int(binary.LittleEndian.Uint32(msg))
		if i != len(rtts) {
			t.Errorf("echo %d arrived as number %d", i, len(rtts))
		}
		rtts = append(rtts, time.Since(sent[i]))
		back <- struct{}{}
	})
	time.Sleep(time.Second / 120)
	tick := time.NewTicker(time.Second / 60)
	defer tick.Stop()
	msg := make([]byte, 1024)
	for i := range n {
		<-tick.C
		binary.LittleEndian.PutUint32(msg, uint32(i))
		cli.mu.Lock()
		sent[i] = time.Now()
		cli.mu.Unlock()
		cli.write(msg)
	}
	for range n {
		select {
		case <-back:
		case <-time.After(30 * time.Second):
			t.Fatalf("kcp-go echo: %d of %d echoes", len(rtts), n)
		}
	}
	cli.mu.Lock()
	srv.mu.Lock()
	defer cli.mu.Unlock()
	defer srv.mu.Unlock()
	slices.Sort(rtts)
	return echoRun{rtts: rtts, bytesPerMsg: float64(cli.bytes+srv.bytes) / float64(n)}
}
