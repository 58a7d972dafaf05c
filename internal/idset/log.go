package idset

import "github.com/tickwire/tickwire/proto"

// Log is a circular log of entity ids that in-flight packet records point
// into, so recording what a packet carried allocates nothing once the log
// has its size. A record whose ids were overwritten (more than the log's
// capacity of ids appended since) is stale: Valid reports it and callers
// treat the record as unknown. The zero value is an empty log.
type Log struct {
	buf  []proto.NetworkID // len is 0 or a power of two
	head uint64            // total ids ever appended
}

// Span is a record's position in a Log.
type Span struct {
	start uint64
	n     int32
}

// Len is the number of ids in the record.
func (s Span) Len() int { return int(s.n) }

// minLog is the smallest capacity of a Log, in ids.
const minLog = 4096

// Begin starts a record of up to n ids at the log's head, making sure the
// log keeps at least 8 such records' worth of history. Append the record's
// ids with Append before beginning another.
func (l *Log) Begin(n int) Span {
	if want := max(minLog, 8*n); len(l.buf) < want {
		size := minLog
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
	return Span{start: l.head}
}

// Append adds id to s, the record begun last.
func (l *Log) Append(s *Span, id proto.NetworkID) {
	l.buf[l.head&uint64(len(l.buf)-1)] = id
	l.head++
	s.n++
}

// Valid reports whether s is still fully in the log.
func (l *Log) Valid(s Span) bool {
	return len(l.buf) > 0 && l.head-s.start <= uint64(len(l.buf))
}

// At is the k-th id of s, which must be Valid.
func (l *Log) At(s Span, k int) proto.NetworkID {
	return l.buf[(s.start+uint64(k))&uint64(len(l.buf)-1)]
}
