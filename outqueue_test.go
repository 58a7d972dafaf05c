package tickwire

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/udp"
)

// chunkConn is a BatchConn that records the size of each WriteBatch and
// fails the one numbered failAt (1-based; 0: none) after sending half.
type chunkConn struct {
	discardConn
	sizes  []int
	failAt int
}

func (c *chunkConn) WriteBatch(m []udp.Message) (int, error) {
	c.sizes = append(c.sizes, len(m))
	if len(c.sizes) == c.failAt {
		return len(m) / 2, errors.New("no buffer space")
	}
	return len(m), nil
}

// TestFlushWritesInChunks: a queue goes out writeChunk datagrams per
// WriteBatch (or its own chunk), all of them counted; a failed write
// stops the flush, and only what went is counted.
func TestFlushWritesInChunks(t *testing.T) {
	fill := func(q *outQueue, n int) {
		to := netip.MustParseAddrPort("127.0.0.1:9000")
		for range n {
			q.queue(append(q.next(), 1, 2, 3), to)
		}
	}
	c := &chunkConn{}
	q := &outQueue{conn: c, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	fill(q, 2*writeChunk+3)
	q.flush()
	if want := []int{writeChunk, writeChunk, 3}; !slices.Equal(c.sizes, want) {
		t.Fatalf("WriteBatch sizes %v, want %v", c.sizes, want)
	}
	if q.packets != 2*writeChunk+3 || q.bytes != 3*(2*writeChunk+3) || q.errors != 0 || len(q.msgs) != 0 {
		t.Fatalf("after the flush: %d packets, %d bytes, %d errors, %d queued", q.packets, q.bytes, q.errors, len(q.msgs))
	}

	c.sizes, c.failAt = nil, 2
	fill(q, 3*writeChunk)
	q.flush()
	if want := []int{writeChunk, writeChunk}; !slices.Equal(c.sizes, want) {
		t.Fatalf("WriteBatch sizes %v with the second failing, want %v", c.sizes, want)
	}
	if sent := uint64(2*writeChunk + 3 + writeChunk + writeChunk/2); q.packets != sent || q.errors != 1 || len(q.msgs) != 0 {
		t.Fatalf("after a failed write: %d packets (want %d), %d errors, %d queued", q.packets, sent, q.errors, len(q.msgs))
	}

	c.sizes, c.failAt = nil, 0
	q.chunk = 64
	fill(q, 70)
	q.flush()
	if want := []int{64, 6}; !slices.Equal(c.sizes, want) {
		t.Fatalf("WriteBatch sizes %v with a chunk of 64, want %v", c.sizes, want)
	}
}
