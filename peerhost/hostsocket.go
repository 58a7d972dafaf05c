package peerhost

import (
	"net"
	"net/netip"
	"sync"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// hostSocket is a player's host socket (Config.HostConn), served by one
// game server after another: a host that stepped down follows its
// successor and may be elected again, and a server closes the socket it
// serves when it stops. So each server gets a lease, a udp.BatchConn
// whose Close ends the lease, not the socket; one goroutine reads the
// socket for the player's whole game and hands each datagram to the
// lease of the moment (none: dropped, as a closed socket would). The
// socket itself closes with the player (close).
type hostSocket struct {
	conn  udp.BatchConn
	start sync.Once
	mu    sync.Mutex
	cur   *hostLease
	free  chan []byte // datagram buffers
}

// leaseQueue is how many datagrams a lease holds unread before it drops
// arrivals (a socket buffer's part).
const leaseQueue = 1024

type leased struct {
	b    []byte
	addr netip.AddrPort
}

// hostLease is one server's use of the host socket.
type hostLease struct {
	s    *hostSocket
	in   chan leased
	done chan struct{}
	once sync.Once
}

func newHostSocket(conn udp.BatchConn) *hostSocket {
	return &hostSocket{conn: conn, free: make(chan []byte, leaseQueue)}
}

// lease ends the current lease, if any, and returns a new one.
func (s *hostSocket) lease() *hostLease {
	s.start.Do(func() { go s.read() })
	l := &hostLease{s: s, in: make(chan leased, leaseQueue), done: make(chan struct{})}
	s.swap(l)
	return l
}

// close closes the socket: the player's game is over.
func (s *hostSocket) close() {
	s.swap(nil)
	s.conn.Close()
}

// swap makes l the current lease (nil: none), ending the one before.
func (s *hostSocket) swap(l *hostLease) {
	s.mu.Lock()
	old := s.cur
	s.cur = l
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// read reads the socket until it is closed, handing each datagram to
// the current lease.
func (s *hostSocket) read() {
	msgs := make([]udp.Message, 16)
	for i := range msgs {
		msgs[i].Buf = make([]byte, proto.MaxPacketSizeLimit+1)
	}
	for {
		n, err := s.conn.ReadBatch(msgs)
		for _, m := range msgs[:n] {
			s.deliver(m.Buf[:m.N], m.Addr)
		}
		if err != nil {
			return
		}
	}
}

// deliver hands a copy of datagram b from addr to the current lease.
func (s *hostSocket) deliver(b []byte, addr netip.AddrPort) {
	s.mu.Lock()
	l := s.cur
	s.mu.Unlock()
	if l == nil {
		return
	}
	var buf []byte
	select {
	case buf = <-s.free:
	default:
		buf = make([]byte, 0, proto.MaxPacketSizeLimit+1)
	}
	select {
	case l.in <- leased{b: append(buf[:0], b...), addr: addr}:
	case <-l.done:
	default: // the server fell behind: dropped, as by a full socket buffer
	}
}

// ReadBatch waits for a datagram and fills msgs with those waiting.
func (l *hostLease) ReadBatch(msgs []udp.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	var d leased
	select {
	case d = <-l.in:
	case <-l.done:
		return 0, net.ErrClosed
	}
	n := 0
	for {
		msgs[n].N, msgs[n].Addr = copy(msgs[n].Buf[:cap(msgs[n].Buf)], d.b), d.addr
		select {
		case l.s.free <- d.b:
		default:
		}
		if n++; n == len(msgs) {
			return n, nil
		}
		select {
		case d = <-l.in:
		default:
			return n, nil
		}
	}
}

// WriteBatch sends msgs from the host socket.
func (l *hostLease) WriteBatch(msgs []udp.Message) (int, error) {
	select {
	case <-l.done:
		return 0, net.ErrClosed
	default:
	}
	return l.s.conn.WriteBatch(msgs)
}

func (l *hostLease) LocalAddr() netip.AddrPort { return l.s.conn.LocalAddr() }

// Close ends the lease; the socket stays open.
func (l *hostLease) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}
