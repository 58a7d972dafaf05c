package udp

import (
	"errors"
	"fmt"
)

// Config configures a Conn. The zero value is the default: DSCP EF,
// 4 MiB socket buffers each way, up to 64 datagrams per system call.
type Config struct {
	// DSCP is the code point on every datagram, for IPv4 and IPv6 alike.
	// Zero selects DSCPEF (46); DSCPOff leaves datagrams unmarked.
	DSCP DSCP

	// ECN is written to the low two bits next to the DSCP. Zero is
	// Not-ECT.
	ECN ECN

	// ReadBuffer and WriteBuffer are the socket receive and send buffer
	// sizes requested, in bytes (SO_RCVBUF, SO_SNDBUF; on Linux the
	// privileged SO_*BUFFORCE is tried first so root is not capped by
	// net.core.rmem_max). Zero selects 4 MiB; a negative value keeps the
	// kernel's default. Conn.Info reports what the kernel granted.
	ReadBuffer, WriteBuffer int

	// BatchSize is the most datagrams one recvmmsg or sendmmsg call
	// moves; longer slices passed to WriteBatch are sent in several
	// calls, ReadBatch fills at most BatchSize messages. Zero selects
	// DefaultBatchSize. It is 1 on platforms without batch system calls.
	BatchSize int
	// GSO writes, on Linux, each run of datagrams to one address, all of
	// one size but the last, as one segmented message (UDP generic
	// segmentation offload, where the kernel has it: SocketInfo.GSO).
	// It costs the sender a fraction of a datagram each (BenchmarkSend)
	// and the receiver sees ordinary datagrams, but a capture on the
	// sending host (or on loopback) holds each run as one frame, which
	// a dissector reads as one datagram. Off by default: it pays where
	// one socket sends many datagrams to one address (a load
	// generator's clients, tickwire.ClientGroup, turn it on).
	GSO bool
}

const (
	// DefaultBatchSize is Config.BatchSize's default.
	DefaultBatchSize = 64
	// MaxBatchSize bounds Config.BatchSize (Linux UIO_MAXIOV).
	MaxBatchSize = 1024
	// DefaultBufferSize is the default socket buffer request each way.
	DefaultBufferSize = 4 << 20
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("udp: invalid config")

// withDefaults validates c and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	if c.DSCP == 0 {
		c.DSCP = DSCPEF
	}
	if c.DSCP != DSCPOff && c.DSCP > dscpMax {
		return c, fmt.Errorf("%w: DSCP %d is not a 6-bit code point (0..63) or DSCPOff", ErrConfig, uint8(c.DSCP))
	}
	if c.ECN > ECNCE {
		return c, fmt.Errorf("%w: ECN %d is not a 2-bit value", ErrConfig, uint8(c.ECN))
	}
	if c.ReadBuffer == 0 {
		c.ReadBuffer = DefaultBufferSize
	}
	if c.WriteBuffer == 0 {
		c.WriteBuffer = DefaultBufferSize
	}
	switch {
	case c.BatchSize == 0:
		c.BatchSize = DefaultBatchSize
	case c.BatchSize < 0 || c.BatchSize > MaxBatchSize:
		return c, fmt.Errorf("%w: BatchSize %d outside 1..%d", ErrConfig, c.BatchSize, MaxBatchSize)
	}
	return c, nil
}
