package reliability

// segmentQueue holds whole KCP segments waiting to be put into packets, in
// order. Positions are absolute (bytes ever appended), so they survive
// compaction.
//
// The buffer grows as the live bytes need it, up to max plus one segment,
// rather than being allocated at that bound: a connection's queue is
// usually drained by every packet, and the bound (a whole window of
// segments, over 100 KB by default) would be most of a connection's
// memory.
type segmentQueue struct {
	buf   []byte // live bytes: buf[head:]
	head  int
	base  int64 // absolute position of buf[0]
	max   int   // bound on live bytes; the oldest segments are dropped beyond it
	limit int   // bound on the buffer: max plus the longest segment

	dropped uint64
}

// minQueueBuf is a segment queue's first buffer size.
const minQueueBuf = 2048

func newSegmentQueue(max, extra int) segmentQueue {
	return segmentQueue{max: max, limit: max + extra}
}

func (q *segmentQueue) len() int { return len(q.buf) - q.head }

// headPos is the absolute position of the first live byte.
func (q *segmentQueue) headPos() int64 { return q.base + int64(q.head) }

// at returns the live bytes from absolute position pos on.
func (q *segmentQueue) at(pos int64) []byte { return q.buf[pos-q.base:] }

// push appends one whole segment and returns its absolute position.
func (q *segmentQueue) push(seg []byte) int64 {
	for q.len() > 0 && q.len()+len(seg) > q.max {
		q.head += segmentLen(q.buf[q.head:])
		q.dropped++
	}
	if len(q.buf)+len(seg) > cap(q.buf) {
		q.compact()
		// Below the bound, double while the live bytes fill over half
		// the buffer, so that compactions stay rare.
		if need := len(q.buf) + len(seg); 2*need > cap(q.buf) && cap(q.buf) < q.limit {
			size := min(max(2*cap(q.buf), minQueueBuf), q.limit)
			q.buf = append(make([]byte, 0, max(size, need)), q.buf...)
		}
	}
	pos := q.base + int64(len(q.buf))
	q.buf = append(q.buf, seg...)
	return pos
}

func (q *segmentQueue) compact() {
	if q.head == 0 {
		return
	}
	n := copy(q.buf, q.buf[q.head:])
	q.buf = q.buf[:n]
	q.base += int64(q.head)
	q.head = 0
}

// take moves whole segments totalling at most room bytes from the front of
// the queue to dst.
func (q *segmentQueue) take(dst []byte, room int) []byte {
	n := 0
	live := q.buf[q.head:]
	for n < len(live) {
		next := n + segmentLen(live[n:])
		if next > room {
			break
		}
		n = next
	}
	dst = append(dst, live[:n]...)
	q.head += n
	if q.head == len(q.buf) {
		q.base += int64(len(q.buf))
		q.buf, q.head = q.buf[:0], 0
	}
	return dst
}
