package tickwire

import (
	"time"

	"github.com/tickwire/tickwire/udp"
)

// A server runs either on goroutines of its own (Serve) or on its
// caller's loop (Drive), as ENet's host service or a game engine's main
// loop that owns the socket: the caller reads datagrams and hands them
// to Receive, and calls Step once per tick. The server's clock is then
// the time the caller passes: Server.Now reads the last one. Everything
// else (handshakes, connections, handlers, workers, writes to conn) is
// the same code as under Serve.

// Drive makes the caller's loop run the server on conn, which it writes
// to; the caller reads conn (or any source of datagrams) itself. now is
// the server's time until the first Receive or Step. Close ends it and
// closes conn. Receive, Step and Close must not run concurrently with one
// another; Do and the loop-side methods may run from other goroutines as
// under Serve.
func (s *Server) Drive(conn udp.BatchConn, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.conn != nil {
		return ErrClosed
	}
	s.conn, s.out.conn = conn, conn
	s.driven, s.at = true, now
	s.now = func() time.Time { return s.at }
	return nil
}

// Receive handles the datagrams b holds (b.Msgs[:b.N], received at b.At)
// as the server's own loop does a batch it read: opened on the workers
// when there are enough, handshakes answered, packets delivered, and the
// acknowledgements owed sent. The server keeps no reference to b.
func (s *Server) Receive(b *udp.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.driven || s.closed {
		return ErrClosed
	}
	s.at = b.At
	s.backlog = append(s.backlog[:0], b)
	s.receiveBatches(s.backlog)
	s.backlog[0] = nil
	s.backlog = s.backlog[:0]
	s.sendDueAcks(b.At)
	s.out.flush()
	return nil
}

// Step runs one server tick at now: silent connections time out, the
// handler ticks (Ticker), and every connection's packet is built and
// written to the Drive socket.
func (s *Server) Step(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.driven || s.closed {
		return ErrClosed
	}
	s.at = now
	s.step(now)
	return nil
}
