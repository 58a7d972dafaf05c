package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Conn is a DSCP-marked UDP socket that reads and writes datagrams in
// batches (recvmmsg/sendmmsg on Linux, one datagram per call elsewhere).
// It implements BatchConn.
//
// One goroutine may call ReadBatch while another calls WriteBatch;
// concurrent readers (or writers) must synchronise themselves. Stats,
// Info, LocalAddr, the deadline setters and Close are safe at any time.
type Conn struct {
	uc     *net.UDPConn
	raw    syscall.RawConn
	local  netip.AddrPort
	info   SocketInfo
	batch  int
	gso    bool        // Config.GSO
	gsoOff atomic.Bool // the writer stopped segmenting (SocketInfo.GSO)

	rx, tx counters
	r      reader // platform-specific receive state, owned by the reader
	w      writer // platform-specific send state, owned by the writer
}

// SocketInfo reports how the kernel set up a Conn's socket.
type SocketInfo struct {
	// IPv6 is true for an AF_INET6 socket; DualStack when it also
	// carries IPv4 (IPV6_V6ONLY off).
	IPv6, DualStack bool
	// TrafficClass is the TOS / traffic class byte requested
	// (dscp<<2 | ecn), or -1 when marking is off.
	TrafficClass int
	// MarkedIPv4 and MarkedIPv6 report which families the kernel
	// accepted the marking for: IP_TOS for IPv4 datagrams (also those an
	// AF_INET6 dual-stack socket sends), IPV6_TCLASS for IPv6.
	MarkedIPv4, MarkedIPv6 bool
	// ReadBuffer and WriteBuffer are the socket buffer sizes the kernel
	// reports (getsockopt SO_RCVBUF/SO_SNDBUF; 0 where unknown). Linux
	// reports twice the usable size: it reserves half for bookkeeping.
	ReadBuffer, WriteBuffer int
	// ReadBufferRequested and WriteBufferRequested are what was asked
	// for (0: the kernel default was kept).
	ReadBufferRequested, WriteBufferRequested int
	// BatchSize is the most datagrams moved per system call.
	BatchSize int
	// GSO reports that runs of datagrams to one address are written as
	// one segmented message (Config.GSO, and the kernel takes
	// UDP_SEGMENT: Linux 4.18). It turns false if the kernel refuses a
	// segmented message that then goes through as separate datagrams.
	GSO bool
}

// Listen opens a UDP socket on address ("host:port", port 0 picks one)
// for network "udp", "udp4" or "udp6", and configures it per cfg. With
// network "udp" and an unspecified host the socket is dual-stack and both
// families are marked.
func Listen(network, address string, cfg Config) (*Conn, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, fmt.Errorf("udp: network %q: want udp, udp4 or udp6", network)
	}
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	pc, err := net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	c, err := NewConn(pc.(*net.UDPConn), cfg)
	if err != nil {
		pc.Close()
		return nil, err
	}
	return c, nil
}

// NewConn configures an already open UDP socket (for example one bound
// with SO_REUSEPORT through a net.ListenConfig) and takes ownership of
// it: Close closes uc.
func NewConn(uc *net.UDPConn, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	la, ok := uc.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("udp: local address %v is not UDP", uc.LocalAddr())
	}
	c := &Conn{uc: uc, raw: raw, local: unmap(la.AddrPort()), gso: cfg.GSO}
	c.info.IPv6, c.info.DualStack = socketFamily(raw, la)

	if err := c.setBuffers(cfg); err != nil {
		return nil, err
	}
	if err := c.mark(cfg); err != nil {
		return nil, err
	}
	c.batch = platformBatch(cfg.BatchSize)
	c.info.BatchSize = c.batch
	c.r.init(c)
	c.w.init(c)
	return c, nil
}

func (c *Conn) setBuffers(cfg Config) error {
	if cfg.ReadBuffer > 0 {
		c.info.ReadBufferRequested = cfg.ReadBuffer
		if err := setBuffer(c.uc, c.raw, cfg.ReadBuffer, true); err != nil {
			return fmt.Errorf("udp: set receive buffer to %d bytes: %w", cfg.ReadBuffer, err)
		}
	}
	if cfg.WriteBuffer > 0 {
		c.info.WriteBufferRequested = cfg.WriteBuffer
		if err := setBuffer(c.uc, c.raw, cfg.WriteBuffer, false); err != nil {
			return fmt.Errorf("udp: set send buffer to %d bytes: %w", cfg.WriteBuffer, err)
		}
	}
	c.info.ReadBuffer, c.info.WriteBuffer = bufferSizes(c.raw)
	return nil
}

// mark writes the traffic class for every family the socket carries. The
// socket's own family must accept it; on a dual-stack socket IPv4
// marking is best effort and reported in Info.
func (c *Conn) mark(cfg Config) error {
	c.info.TrafficClass = -1
	if cfg.DSCP == DSCPOff {
		return nil
	}
	tc := TrafficClass(cfg.DSCP, cfg.ECN)
	c.info.TrafficClass = tc
	if !c.info.IPv6 {
		if err := ipv4.NewConn(c.uc).SetTOS(tc); err != nil {
			return fmt.Errorf("udp: set IPv4 TOS %#02x: %w", tc, err)
		}
		c.info.MarkedIPv4 = true
		return nil
	}
	if err := ipv6.NewConn(c.uc).SetTrafficClass(tc); err != nil {
		return fmt.Errorf("udp: set IPv6 traffic class %#02x: %w", tc, err)
	}
	c.info.MarkedIPv6 = true
	if c.info.DualStack {
		c.info.MarkedIPv4 = ipv4.NewConn(c.uc).SetTOS(tc) == nil
	}
	return nil
}

// LocalAddr is the address the socket is bound to.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// Info reports how the socket was set up.
func (c *Conn) Info() SocketInfo {
	info := c.info
	info.GSO = info.GSO && !c.gsoOff.Load()
	return info
}

// SocketDrops is how many datagrams the kernel dropped for this socket
// so far — most of them because its receive buffer was full: the reader
// fell behind. ok is false where the platform does not tell (it reads
// /proc on Linux, so it costs a file read; call it at scrape time, not per
// datagram).
func (c *Conn) SocketDrops() (n uint64, ok bool) { return socketDrops(c.raw) }

// Stats returns the counters so far.
func (c *Conn) Stats() Stats {
	return Stats{Read: c.rx.snapshot(), Write: c.tx.snapshot()}
}

// SetReadDeadline makes a blocked or later ReadBatch fail with an error
// for which errors.Is(err, os.ErrDeadlineExceeded) holds; zero clears it.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.uc.SetReadDeadline(t) }

// SetWriteDeadline is SetReadDeadline for WriteBatch.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.uc.SetWriteDeadline(t) }

// Close closes the socket; blocked and later calls fail with an error
// for which errors.Is(err, net.ErrClosed) holds.
func (c *Conn) Close() error { return c.uc.Close() }

// ReadBatch reads at least one datagram, blocking until one arrives, and
// at most min(len(msgs), BatchSize). For each filled message Buf[:N] is
// the datagram (cap(Buf) is the largest accepted; larger datagrams are
// dropped and counted in Stats().Read.Dropped) and Addr its source, with
// IPv4-mapped IPv6 sources unmapped to plain IPv4. It returns how many
// messages it filled. It does not allocate.
func (c *Conn) ReadBatch(msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	return c.r.read(c, msgs[:min(len(msgs), c.batch)])
}

// WriteBatch sends msgs[i].Buf to msgs[i].Addr in order, in as few system
// calls as BatchSize allows, and returns how many were sent. If that is
// fewer than len(msgs) the error says why msgs[n] could not be sent; a
// caller that wants to skip a bad datagram resumes with msgs[n+1:]. It
// does not allocate.
func (c *Conn) WriteBatch(msgs []Message) (int, error) {
	sent := 0
	for sent < len(msgs) {
		n, err := c.w.write(c, msgs[sent:min(len(msgs), sent+c.batch)])
		sent += n
		if err != nil {
			return sent, err
		}
		if n == 0 {
			return sent, errors.New("udp: send made no progress")
		}
	}
	return sent, nil
}

// unmap turns an IPv4-mapped IPv6 address into plain IPv4, so a peer has
// one address whichever kind of socket heard from it.
func unmap(ap netip.AddrPort) netip.AddrPort {
	if ap.Addr().Is4In6() {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return ap
}
