// Package inbox is the receive side shared by tickwire's in-memory and
// impaired PacketConns: a bounded FIFO of datagrams that readers block on,
// with deadlines and close, built only from channels and Go timers so it
// runs in virtual time inside a testing/synctest bubble.
package inbox

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Datagram is one received datagram.
type Datagram struct {
	Data []byte
	From netip.AddrPort // the source, when it is an IP address and port
	Addr net.Addr       // the source as the underlying conn reported it, if any
}

// Inbox is a bounded FIFO of datagrams. Any number of goroutines may push
// and read at once.
type Inbox struct {
	limit   int
	release func([]byte)

	mu     sync.Mutex
	q      []Datagram // q[head:] is unread
	head   int
	notify chan struct{} // a token when q may be non-empty
	closed chan struct{}
	once   sync.Once

	deadline Deadline
}

// New returns an inbox that holds at most limit datagrams. release, if
// not nil, gets every datagram's Data once the inbox is done with it
// (read, dropped or discarded on Close), for recycling.
func New(limit int, release func([]byte)) *Inbox {
	return &Inbox{
		limit: limit, release: release,
		notify: make(chan struct{}, 1), closed: make(chan struct{}),
		deadline: MakeDeadline(),
	}
}

// Push queues d and reports whether it was taken; it is dropped when the
// inbox is full or closed.
func (ib *Inbox) Push(d Datagram) bool {
	ib.mu.Lock()
	if ib.isClosed() || len(ib.q)-ib.head >= ib.limit {
		ib.mu.Unlock()
		ib.free(d.Data)
		return false
	}
	if ib.head > 0 && len(ib.q) == cap(ib.q) {
		k := copy(ib.q, ib.q[ib.head:]) // reuse the read prefix
		clear(ib.q[k:])
		ib.q, ib.head = ib.q[:k], 0
	}
	ib.q = append(ib.q, d)
	ib.mu.Unlock()
	ib.wake()
	return true
}

func (ib *Inbox) wake() {
	select {
	case ib.notify <- struct{}{}:
	default:
	}
}

func (ib *Inbox) free(b []byte) {
	if ib.release != nil && b != nil {
		ib.release(b)
	}
}

func (ib *Inbox) isClosed() bool {
	select {
	case <-ib.closed:
		return true
	default:
		return false
	}
}

// Read blocks until a datagram is queued, copies it into b (truncating
// it if b is short, like recvfrom) and returns the copied length and the
// datagram's source (Data nil). It returns net.ErrClosed after Close and
// os.ErrDeadlineExceeded once the deadline has passed.
func (ib *Inbox) Read(b []byte) (int, Datagram, error) {
	for {
		select {
		case <-ib.closed:
			return 0, Datagram{}, net.ErrClosed
		case <-ib.deadline.Wait():
			return 0, Datagram{}, os.ErrDeadlineExceeded
		default:
		}
		ib.mu.Lock()
		if ib.head < len(ib.q) {
			d := ib.q[ib.head]
			ib.q[ib.head] = Datagram{}
			ib.head++
			more := ib.head < len(ib.q)
			if !more {
				ib.q, ib.head = ib.q[:0], 0
			}
			ib.mu.Unlock()
			if more {
				ib.wake() // for another reader
			}
			n := copy(b, d.Data)
			ib.free(d.Data)
			d.Data = nil
			return n, d, nil
		}
		ib.mu.Unlock()
		select {
		case <-ib.notify:
		case <-ib.closed:
		case <-ib.deadline.Wait():
		}
	}
}

// Len is the number of queued datagrams.
func (ib *Inbox) Len() int {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return len(ib.q) - ib.head
}

// SetDeadline sets the read deadline; zero clears it.
func (ib *Inbox) SetDeadline(t time.Time) { ib.deadline.Set(t) }

// Close wakes every reader with net.ErrClosed and discards what is
// queued. It reports whether this call closed the inbox.
func (ib *Inbox) Close() bool {
	first := false
	ib.once.Do(func() {
		first = true
		ib.mu.Lock()
		close(ib.closed)
		q := ib.q[ib.head:]
		ib.q, ib.head = nil, 0
		ib.mu.Unlock()
		for _, d := range q {
			ib.free(d.Data)
		}
		ib.deadline.Set(time.Time{})
	})
	return first
}

// Closed is closed once Close has been called.
func (ib *Inbox) Closed() <-chan struct{} { return ib.closed }

// Deadline is a channel that is closed when a settable point in time
// passes. Use MakeDeadline; it is safe for concurrent use.
type Deadline struct {
	mu     *sync.Mutex
	timer  *time.Timer
	passed chan struct{}
}

// MakeDeadline returns a deadline that never passes until Set.
func MakeDeadline() Deadline {
	return Deadline{mu: new(sync.Mutex), passed: make(chan struct{})}
}

// Set moves the deadline to t; zero means never. A time in the past
// closes the channel at once.
func (d *Deadline) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer fired: wait until it has closed the channel
	}
	d.timer = nil
	closed := isClosed(d.passed)
	if t.IsZero() {
		if closed {
			d.passed = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.passed = make(chan struct{})
		}
		ch := d.passed
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.passed)
	}
}

// Wait returns a channel closed when the deadline has passed.
func (d *Deadline) Wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}

// Passed reports whether the deadline has passed.
func (d *Deadline) Passed() bool { return isClosed(d.Wait()) }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
