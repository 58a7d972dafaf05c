package tickwire

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// outQueue collects the datagrams a loop builds between two sends and
// writes them in one batch. Buffers are reused: a loop asks next for an
// empty one, fills it and queues it.
type outQueue struct {
	conn udp.BatchConn
	log  *slog.Logger
	msgs []udp.Message // queued for the next WriteBatch
	bufs [][]byte      // their buffers, reused
	// chunk is the most datagrams flush hands to one WriteBatch (0:
	// writeChunk).
	chunk int
	// what was sent
	packets, bytes, errors uint64
}

// next returns an empty buffer for the next queued datagram.
func (q *outQueue) next() []byte {
	i := len(q.msgs)
	if i == len(q.bufs) {
		q.bufs = append(q.bufs, make([]byte, 0, proto.MaxPacketSizeLimit))
	}
	return q.bufs[i][:0]
}

// queue schedules b (which must come from next) for sending to addr.
func (q *outQueue) queue(b []byte, addr netip.AddrPort) {
	if len(b) == 0 {
		return
	}
	q.msgs = append(q.msgs, udp.Message{Buf: b, Addr: addr})
}

// writeChunk is the most datagrams flush hands to one WriteBatch: a
// system call that writes more on loopback outlasts the Go runtime's
// 20 µs check of threads in system calls, which, with every P busy (a
// build on all cores), hands the writer's P to another thread and makes
// the writer wait for one on its return. In the capacity run at 800–900
// players (bench/README.md, stop 37) writing 8 at a time, not 64, gave a
// lower tick p99 in five of six pairs of runs, the same in the sixth.
const writeChunk = 8

// flush sends every queued datagram, counting what went and logging a
// failed write (a closed socket is not a failure).
func (q *outQueue) flush() {
	if len(q.msgs) == 0 {
		return
	}
	chunk := q.chunk
	if chunk <= 0 {
		chunk = writeChunk
	}
	n := 0
	var err error
	for n < len(q.msgs) && err == nil {
		var k int
		k, err = q.conn.WriteBatch(q.msgs[n:min(n+chunk, len(q.msgs))])
		n += k
	}
	for _, m := range q.msgs[:n] {
		q.packets++
		q.bytes += uint64(len(m.Buf))
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		q.errors++
		q.log.Warn("send", "err", err, "sent", n, "queued", len(q.msgs))
	}
	for i := range q.msgs {
		q.bufs[i] = q.msgs[i].Buf[:0]
	}
	q.msgs = q.msgs[:0]
}

// connOutput is a server session's Output: to the session's current
// address, within what path validation allows.
type connOutput struct {
	q    *outQueue
	sess *session.Session
}

func (o *connOutput) Buffer() []byte { return o.q.next() }
func (o *connOutput) Emit(b []byte) {
	if o.sess.Allow(len(b)) {
		o.q.queue(b, o.sess.Addr())
	}
}

// peerOutput is a session's Output towards one address through a queue.
type peerOutput struct {
	q    *outQueue
	addr netip.AddrPort
}

func (o *peerOutput) Buffer() []byte { return o.q.next() }
func (o *peerOutput) Emit(b []byte)  { o.q.queue(b, o.addr) }
