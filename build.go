package tickwire

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// builder builds every connection's packets of a tick — the frame
// handler's AppendFrames (a game's interest scheduling and delta
// encoding), the session's reliable data, sealing — on Config.Workers
// goroutines. Each worker owns a share of the connections (a stretch of
// them in id order) and queues its datagrams in its own queue, so no
// lock sits on the hot path. A worker writes its queue to the socket
// whenever it holds sendEvery datagrams and the socket is free (the
// other worker not writing), and the rest when its work is done: the
// system calls and the kernel's delivery of the datagrams are spread
// over the build, on both cores, not left to the loop after it, and the
// buffers go out while they are still in the core's cache. A worker
// claims its share in chunks of buildChunk (an atomic add each) and,
// done with it, claims what the other shares have left: a worker the OS
// set aside (its core shared with other work) does not hold the tick up.
// A connection's packets depend on its own state only, so they are the
// same whatever the worker count, and whichever worker builds them.
//
// Between ticks the same workers open the backlog of datagrams the loop
// receives together (open, backlog.go).
type builder struct {
	conns []*Conn // the server's connections, by id
	// stale: a connection came or went since conns was listed.
	stale   bool
	workers []*buildWorker
	wg      sync.WaitGroup
	now     time.Time
	n       int       // workers building this tick
	home    *outQueue // the server's queue, every connection's outside the build
	// send is held by the worker writing to the socket: a BatchConn
	// takes one writer at a time.
	send sync.Mutex
	// opening: the workers started open the server's backlog of
	// received datagrams (Server.openShare), not build.
	opening bool
}

type buildWorker struct {
	q     outQueue
	start chan struct{}
	// next is the first connection of its share not claimed yet, end
	// the share's end (positions in builder.conns).
	next atomic.Int64
	end  int
}

// buildChunk is how many connections a worker claims at a time.
const buildChunk = 8

// sendEvery is how many datagrams a worker's queue holds before it is
// written during the build, in system calls of writeChunk each (the
// figure the capacity runs of bench/README.md were measured with).
const sendEvery = 64

// changed tells the builder that a connection came or went: the next
// build lists them again.
func (b *builder) changed() { b.stale = true }

// build builds the packets of s's connections at now and writes them.
func (b *builder) build(s *Server, now time.Time) {
	if b.stale {
		clear(b.conns) // no closed connection kept alive
		b.conns = b.conns[:0]
		for _, c := range s.conns {
			b.conns = append(b.conns, c)
		}
		slices.SortFunc(b.conns, func(x, y *Conn) int { return cmp.Compare(x.id, y.id) })
		b.stale = false
	}
	n := min(s.cfg.Workers, len(b.conns)/minConnsPerWorker)
	b.home = &s.out
	if n <= 1 {
		b.buildAll(now)
		return
	}
	b.start(s, n)
	b.now = now
	per := (len(b.conns) + n - 1) / n
	for i, w := range b.workers[:n] {
		lo := min(i*per, len(b.conns))
		w.next.Store(int64(lo))
		w.end = min(lo+per, len(b.conns))
	}
	b.run(s, n, false)
}

// open has n workers (the loop the first) open s's backlog of received
// datagrams (Server.openShare) and waits for them.
func (b *builder) open(s *Server, n int) {
	b.start(s, n)
	b.run(s, n, true)
}

// run has n started workers, the loop the first, do this job (build, or
// open when opening) and waits for them.
func (b *builder) run(s *Server, n int, opening bool) {
	b.n, b.opening = n, opening
	b.wg.Add(n - 1)
	for _, w := range b.workers[1:n] {
		w.start <- struct{}{}
	}
	b.job(s, b.workers[0], 0)
	b.wg.Wait()
}

// job is worker w's (i's) part of the job run started.
func (b *builder) job(s *Server, w *buildWorker, i int) {
	if b.opening {
		s.openShare(i, b.n)
	} else {
		b.shareTo(w, i)
	}
}

// minConnsPerWorker: below this many connections per worker, handing
// them out costs more than it saves.
const minConnsPerWorker = 32

// start makes sure n workers run (the first is the loop itself): they
// build the connections' packets, or open a backlog of datagrams.
func (b *builder) start(s *Server, n int) {
	for len(b.workers) < n {
		w := &buildWorker{q: outQueue{conn: s.out.conn, log: s.cfg.Logger}, start: make(chan struct{})}
		i := len(b.workers)
		b.workers = append(b.workers, w)
		if i == 0 {
			continue
		}
		go func() {
			for range w.start {
				b.job(s, w, i)
				b.wg.Done()
			}
		}()
	}
}

// shareTo builds worker i's share of this tick into its queue, then
// what the other shares have left.
func (b *builder) shareTo(w *buildWorker, i int) {
	for k := range b.n {
		from := b.workers[(i+k)%b.n]
		for {
			lo := int(from.next.Add(buildChunk)) - buildChunk
			if lo >= from.end {
				break
			}
			for _, c := range b.conns[lo:min(lo+buildChunk, from.end)] {
				c.out.q, c.worker = &w.q, i
				c.sess.Tick(b.now, c.ticks(), c.handler.sendMode(c.srv.tickNum), &c.out)
				c.out.q, c.worker = b.home, 0
				c.ackQueued = false
			}
			if len(w.q.msgs) >= sendEvery && b.send.TryLock() {
				w.q.flush()
				b.send.Unlock()
			}
		}
	}
	b.send.Lock()
	w.q.flush()
	b.send.Unlock()
}

// buildAll builds every connection on the loop, into the server's queue,
// writing it every sendEvery datagrams.
func (b *builder) buildAll(now time.Time) {
	for _, c := range b.conns {
		c.sess.Tick(now, c.ticks(), c.handler.sendMode(c.srv.tickNum), &c.out)
		c.ackQueued = false
		if len(b.home.msgs) >= sendEvery {
			b.home.flush()
		}
	}
}

// stop ends the workers.
func (b *builder) stop() {
	for _, w := range b.workers[min(1, len(b.workers)):] {
		close(w.start)
	}
	b.workers = nil
}
