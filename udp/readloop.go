package udp

import (
	"errors"
	"net"
	"time"
)

// Batch is one ReadBatch worth of datagrams with the time they were read.
// Msgs[:N] hold them.
type Batch struct {
	Msgs []Message
	N    int
	At   time.Time
}

// ReadLoopConfig sizes a ReadLoop. Zero fields take the defaults.
type ReadLoopConfig struct {
	BatchSize int // datagrams per ReadBatch; default 32
	Batches   int // batches in flight between reader and owner; default 16
	// BufSize is each datagram buffer's size: one more than the largest
	// datagram accepted, so an oversize one shows as N == BufSize.
	// Default 1500.
	BufSize int
	// Now stamps each batch; default time.Now.
	Now func() time.Time
}

// ReadLoop reads a BatchConn on its own goroutine and hands the batches to
// the goroutine that owns the state (a server or client loop). Batches
// cycle between the two through channels, so receiving allocates nothing;
// when the owner falls behind, the reader waits for a free batch and the
// socket buffer absorbs the backlog.
type ReadLoop struct {
	conn BatchConn
	now  func() time.Time
	free chan *Batch
	full chan *Batch
	done chan struct{}
	err  error
}

// NewReadLoop prepares a read loop on conn; Run starts it.
func NewReadLoop(conn BatchConn, cfg ReadLoopConfig) *ReadLoop {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	if cfg.Batches <= 0 {
		cfg.Batches = 16
	}
	if cfg.BufSize <= 0 {
		cfg.BufSize = 1500
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &ReadLoop{
		conn: conn,
		now:  cfg.Now,
		free: make(chan *Batch, cfg.Batches),
		full: make(chan *Batch, cfg.Batches),
		done: make(chan struct{}),
	}
	for range cfg.Batches {
		b := &Batch{Msgs: make([]Message, cfg.BatchSize)}
		for i := range b.Msgs {
			b.Msgs[i].Buf = make([]byte, cfg.BufSize)
		}
		r.free <- b
	}
	return r
}

// Run reads until the connection is closed or fails.
func (r *ReadLoop) Run() {
	defer close(r.done)
	for b := range r.free {
		n, err := r.conn.ReadBatch(b.Msgs)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.err = err
			}
			return
		}
		b.N, b.At = n, r.now()
		r.full <- b
	}
}

// Batches delivers the batches read, oldest first.
func (r *ReadLoop) Batches() <-chan *Batch { return r.full }

// Release hands a batch back once its datagrams were processed.
func (r *ReadLoop) Release(b *Batch) { r.free <- b }

// Done is closed when the reader has stopped.
func (r *ReadLoop) Done() <-chan struct{} { return r.done }

// Err is why the reader stopped: nil when the connection was closed.
// Read it after Done.
func (r *ReadLoop) Err() error { return r.err }

// Drain releases every batch until the reader stops: call it after
// closing the connection so a reader waiting for a free batch sees the
// close.
func (r *ReadLoop) Drain() {
	for {
		select {
		case b := <-r.full:
			r.free <- b
		case <-r.done:
			return
		}
	}
}
