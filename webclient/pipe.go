package webclient

import (
	"net"
	"net/netip"
	"sync"

	"github.com/tickwire/tickwire/udp"
)

// pipeQueue is how many received packets may wait for the client's
// reader; more are dropped, as a full socket buffer drops datagrams.
const pipeQueue = 256

// peerAddr is the one address a Pipe talks to (in the discard-only
// prefix 100::/64: it names no host).
var peerAddr = netip.AddrPortFrom(netip.AddrFrom16([16]byte{0: 0x01, 15: 1}), 1)

// Pipe is a udp.BatchConn whose datagrams something else carries: a
// page's WebTransport session or WebSocket. It has one peer, Peer():
// every datagram written goes to send whatever its address, every
// datagram pushed arrives from Peer.
type Pipe struct {
	send func(b []byte)
	in   chan []byte
	done chan struct{}
	once sync.Once
}

// NewPipe returns a pipe that hands each datagram written to send (b is
// valid during the call only).
func NewPipe(send func(b []byte)) *Pipe {
	return &Pipe{send: send, in: make(chan []byte, pipeQueue), done: make(chan struct{})}
}

// Peer is the address the pipe's datagrams come from: pass it as the
// client's server address (tickwire.Dialer.Resolve).
func (p *Pipe) Peer() netip.AddrPort { return peerAddr }

// Push hands the pipe one received datagram; it keeps b. It never
// blocks: with the queue full the datagram is dropped.
func (p *Pipe) Push(b []byte) {
	select {
	case p.in <- b:
	default:
	}
}

// ReadBatch blocks until a datagram arrives or the pipe closes.
func (p *Pipe) ReadBatch(msgs []udp.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	n := 0
	select {
	case b := <-p.in:
		p.fill(&msgs[0], b)
		n++
	case <-p.done:
		return 0, net.ErrClosed
	}
	for n < len(msgs) {
		select {
		case b := <-p.in:
			p.fill(&msgs[n], b)
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (p *Pipe) fill(m *udp.Message, b []byte) {
	if m.N = copy(m.Buf[:cap(m.Buf)], b); m.N < len(b) {
		m.N = cap(m.Buf) + 1 // oversize, as a socket reports it
	}
	m.Addr = peerAddr
}

// WriteBatch sends every datagram to the peer.
func (p *Pipe) WriteBatch(msgs []udp.Message) (int, error) {
	select {
	case <-p.done:
		return 0, net.ErrClosed
	default:
	}
	for i := range msgs {
		p.send(msgs[i].Buf)
	}
	return len(msgs), nil
}

// LocalAddr is the zero address: the page's transport has the real one.
func (p *Pipe) LocalAddr() netip.AddrPort { return netip.AddrPort{} }

// Close ends the pipe: reads and writes fail with net.ErrClosed.
func (p *Pipe) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}
