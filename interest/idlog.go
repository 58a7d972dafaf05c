package interest

import "github.com/tickwire/tickwire/proto"

// idLog is a circular log of entity ids that in-flight packet records
// point into, so recording what a packet carried allocates nothing once
// the log has its size. A record whose ids were overwritten (more than the
// log's capacity of ids sent since) is stale: callers treat it as unknown (a loss then re-prioritises everything).
type idLog struct {
	buf  []proto.NetworkID
	head uint64 // total ids ever appended
}

// span is a record's position in the log.
type span struct {
	start uint64
	n     int32
}

const minIDLog = 4096

// begin returns the position the next ids will be appended at, making
// sure a record of up to n ids keeps at least 8 such records' worth of
// history.
func (l *idLog) begin(n int) uint64 {
	if want := max(minIDLog, 8*n); len(l.buf) < want {
		size := minIDLog
		for size < want {
			size *= 2
		}
		nb := make([]proto.NetworkID, size)
		// Keep what is still readable.
		keep := min(uint64(len(l.buf)), l.head)
		for p := l.head - keep; p < l.head; p++ {
			nb[p&uint64(size-1)] = l.buf[p&uint64(len(l.buf)-1)]
		}
		l.buf = nb
	}
	return l.head
}

func (l *idLog) append(id proto.NetworkID) {
	l.buf[l.head&uint64(len(l.buf)-1)] = id // the size is a power of two
	l.head++
}

// valid reports whether s is still fully in the log.
func (l *idLog) valid(s span) bool {
	return len(l.buf) > 0 && l.head-s.start <= uint64(len(l.buf))
}

func (l *idLog) at(s span, k int) proto.NetworkID {
	return l.buf[(s.start+uint64(k))&uint64(len(l.buf)-1)]
}
