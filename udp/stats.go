package udp

import (
	"errors"
	"math/bits"
	"net"
	"os"
	"sync/atomic"
)

// BatchBuckets is the number of batch-size histogram buckets.
const BatchBuckets = 8

// Stats counts what a Conn moved, per direction.
type Stats struct {
	Read, Write DirectionStats
}

// DirectionStats counts one direction of a Conn.
type DirectionStats struct {
	Datagrams uint64 // datagrams delivered to the caller (read) or to the kernel (write)
	Bytes     uint64 // their payload bytes
	Syscalls  uint64 // system calls that moved at least one datagram
	Errors    uint64 // calls that failed, excluding deadlines and Close
	// Dropped counts datagrams received larger than the buffer they were
	// read into; they are discarded, never delivered truncated (read only).
	Dropped uint64
	// Segmented counts datagrams written as segments of a UDP GSO
	// message: several datagrams to one address handed to the kernel as
	// one (write only; SocketInfo.GSO).
	Segmented uint64
	// BatchSizes[i] counts system calls that moved between 2^i and
	// 2^(i+1)-1 datagrams; the last bucket is open-ended (128 and more).
	BatchSizes [BatchBuckets]uint64
}

// MeanBatch is the mean number of datagrams per system call.
func (s DirectionStats) MeanBatch() float64 {
	if s.Syscalls == 0 {
		return 0
	}
	return float64(s.Datagrams) / float64(s.Syscalls)
}

// counters is the live, concurrently updated form of DirectionStats.
type counters struct {
	datagrams, bytes, syscalls, errors, dropped, segmented atomic.Uint64
	batches                                                [BatchBuckets]atomic.Uint64
}

// batch records one system call that moved n datagrams of size total.
func (c *counters) batch(n, total int) {
	if n <= 0 {
		return
	}
	c.datagrams.Add(uint64(n))
	c.bytes.Add(uint64(total))
	c.syscalls.Add(1)
	c.batches[min(bits.Len(uint(n))-1, BatchBuckets-1)].Add(1)
}

// fail counts err unless it only reports a deadline or a closed socket.
func (c *counters) fail(err error) {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	c.errors.Add(1)
}

func (c *counters) snapshot() DirectionStats {
	s := DirectionStats{
		Datagrams: c.datagrams.Load(),
		Bytes:     c.bytes.Load(),
		Syscalls:  c.syscalls.Load(),
		Errors:    c.errors.Load(),
		Dropped:   c.dropped.Load(),
		Segmented: c.segmented.Load(),
	}
	for i := range c.batches {
		s.BatchSizes[i] = c.batches[i].Load()
	}
	return s
}
