//go:build linux

package udp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

func platformBatch(n int) int { return n }

// socketFamily asks the kernel for the socket's domain and, for IPv6,
// whether it also carries IPv4.
func socketFamily(raw syscall.RawConn, la *net.UDPAddr) (v6, dual bool) {
	domain, v6only := -1, 1
	raw.Control(func(fd uintptr) {
		if d, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN); err == nil {
			domain = d
		}
		if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err == nil {
			v6only = v
		}
	})
	if domain == -1 {
		v6 = len(la.IP) == net.IPv6len
	} else {
		v6 = domain == unix.AF_INET6
	}
	return v6, v6 && v6only == 0
}

// setBuffer tries the privileged SO_RCVBUFFORCE/SO_SNDBUFFORCE first (not
// capped by net.core.rmem_max/wmem_max), then the ordinary option.
func setBuffer(uc *net.UDPConn, raw syscall.RawConn, size int, read bool) error {
	force, plain := unix.SO_SNDBUFFORCE, unix.SO_SNDBUF
	if read {
		force, plain = unix.SO_RCVBUFFORCE, unix.SO_RCVBUF
	}
	var err error
	cerr := raw.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, force, size) == nil {
			return
		}
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, plain, size)
	})
	if cerr != nil {
		return cerr
	}
	return err
}

func bufferSizes(raw syscall.RawConn) (read, write int) {
	raw.Control(func(fd uintptr) {
		read, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		write, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	})
	return read, write
}

// reader receives with recvmmsg directly rather than through x/net's
// ReadBatch, which allocates a net.UDPAddr and its net.IP for every
// datagram it returns (internal/socket parseInetAddr). The mmsghdrs,
// iovecs and sockaddrs are allocated once and reused; sources are decoded
// straight into netip.AddrPort.
type reader struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6

	// The system call's arguments and results, so that recvFn, bound
	// once, needs no closure per call.
	count  int
	got    int
	errno  syscall.Errno
	recvFn func(fd uintptr) bool
}

func (r *reader) init(c *Conn) {
	r.hdrs = make([]unix.Mmsghdr, c.batch)
	r.iovs = make([]unix.Iovec, c.batch)
	r.names = make([]unix.RawSockaddrInet6, c.batch)
	for i := range r.hdrs {
		h := &r.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	r.recvFn = r.recvmmsg
}

func (r *reader) recvmmsg(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd,
			uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(r.count), 0, 0, 0)
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false // wait until readable
		}
		r.got, r.errno = int(n), errno
		return true
	}
}

func (r *reader) read(c *Conn, msgs []Message) (int, error) {
	for {
		for i := range msgs {
			b := msgs[i].Buf[:cap(msgs[i].Buf)]
			if len(b) > 0 {
				r.iovs[i].Base = &b[0]
			} else {
				r.iovs[i].Base = nil
			}
			r.iovs[i].SetLen(len(b))
			r.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
			r.hdrs[i].Hdr.Flags = 0
		}
		r.count, r.got, r.errno = len(msgs), 0, 0
		err := c.raw.Read(r.recvFn)
		for i := range msgs {
			r.iovs[i].Base = nil // keep no caller buffer alive
		}
		if err == nil && r.errno != 0 {
			err = os.NewSyscallError("recvmmsg", r.errno)
		}
		if err != nil {
			c.rx.fail(err)
			return 0, &net.OpError{Op: "read", Net: "udp", Addr: net.UDPAddrFromAddrPort(c.local), Err: err}
		}

		// Compact: drop truncated datagrams, keeping every buffer with
		// some message (swap, never lose, the caller's buffers).
		n, total := 0, 0
		for i := 0; i < r.got; i++ {
			h := &r.hdrs[i]
			if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
				c.rx.dropped.Add(1)
				continue
			}
			m := &msgs[i]
			m.N = int(h.Len)
			m.Addr = decodeSockaddr(&r.names[i])
			total += m.N
			if n != i {
				msgs[n], msgs[i] = msgs[i], msgs[n]
			}
			n++
		}
		c.rx.batch(n, total)
		if n > 0 {
			return n, nil
		}
	}
}

// decodeSockaddr turns a kernel sockaddr into a netip.AddrPort without
// allocating (except to name a link-local zone, which interns a string).
func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), portOf(sa4.Port))
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if a.Is4In6() {
			a = a.Unmap()
		} else if sa.Scope_id != 0 {
			a = a.WithZone(zoneName(sa.Scope_id))
		}
		return netip.AddrPortFrom(a, portOf(sa.Port))
	}
	return netip.AddrPort{}
}

// portOf reads a port the kernel stored in network byte order.
func portOf(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

func zoneName(index uint32) string {
	if ifi, err := net.InterfaceByIndex(int(index)); err == nil {
		return ifi.Name
	}
	return fmt.Sprint(index)
}

// writer sends through x/net's WriteBatch (sendmmsg), which reuses its
// own pooled mmsghdrs. Each slot's net.UDPAddr and IP bytes are owned
// here and rewritten in place, so no destination is allocated.
// With Config.GSO a run goes as one message (doc.go, "Segmentation
// offload"): its datagrams are the message's iovecs, so a message
// carries as many datagrams as it has Buffers.
type writer struct {
	msgs  []ipv4.Message
	bufs  [][]byte // the datagrams of this write, in order; msgs' Buffers slice it
	addrs []net.UDPAddr
	ips   [][net.IPv6len]byte
	oob   [][]byte // per message: its UDP_SEGMENT control message
	send  func([]ipv4.Message, int) (int, error)
	// gso: runs go as one segmented message. Cleared for good when the
	// kernel refuses a segmented message that then goes through as
	// separate datagrams (a device without checksum offload answers EIO).
	gso bool
}

const (
	// maxSegments is the most datagrams one segmented message carries:
	// 64, the kernel's UDP_MAX_SEGMENTS on older kernels.
	maxSegments = 64
	// maxSegmentedBytes bounds a segmented message's payload, which must
	// fit one IP datagram's length field with its headers.
	maxSegmentedBytes = 65000
)

func (w *writer) init(c *Conn) {
	w.msgs = make([]ipv4.Message, c.batch)
	w.bufs = make([][]byte, c.batch)
	w.addrs = make([]net.UDPAddr, c.batch)
	w.ips = make([][net.IPv6len]byte, c.batch)
	w.oob = make([][]byte, c.batch)
	space := unix.CmsgSpace(2)
	oob := make([]byte, c.batch*space)
	for i := range w.msgs {
		w.msgs[i].Addr = &w.addrs[i]
		w.oob[i] = oob[i*space : (i+1)*space : (i+1)*space]
		h := (*unix.Cmsghdr)(unsafe.Pointer(&w.oob[i][0]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
	}
	if c.info.IPv6 {
		w.send = ipv6.NewPacketConn(c.uc).WriteBatch
	} else {
		w.send = ipv4.NewPacketConn(c.uc).WriteBatch
	}
	w.gso = c.batch > 1 && c.gso && gsoSupported(c.raw)
	c.info.GSO = w.gso
}

// gsoSupported reports whether the kernel takes UDP_SEGMENT on the
// socket: it answers the option's read from 4.18 on.
func gsoSupported(raw syscall.RawConn) bool {
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		_, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	}); cerr != nil {
		return false
	}
	return err == nil
}

func (w *writer) write(c *Conn, msgs []Message) (int, error) {
	for i := range msgs {
		w.bufs[i] = msgs[i].Buf
	}
	n, err := w.sendRuns(c, msgs, 0, w.gso)
	if err != nil && w.gso && gsoRefused(err) {
		if k := w.segmented(msgs[n:]); k > 1 {
			// The kernel may refuse segmentation itself: try the run's
			// datagrams one by one. If they go, segmentation was the
			// trouble, and this socket sends without it from now on.
			var m int
			m, err = w.sendRuns(c, msgs[:n+k], n, false)
			n += m
			if err == nil {
				w.gso = false
				c.gsoOff.Store(true)
				m, err = w.sendRuns(c, msgs, n, false)
				n += m
			}
		}
	}
	clear(w.bufs[:len(msgs)]) // keep no caller buffer alive
	return n, err
}

// gsoRefused reports an error the kernel gives a segmented message it
// cannot send as such.
func gsoRefused(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)
}

// segmented is how many datagrams at the start of msgs go as one
// message: a run to one address of one size (the last may be shorter),
// or 1.
func (w *writer) segmented(msgs []Message) int {
	if len(msgs) == 0 {
		return 0
	}
	size := len(msgs[0].Buf)
	if size == 0 {
		return 1
	}
	total, j := size, 1
	for j < len(msgs) && j < maxSegments {
		m := &msgs[j]
		if m.Addr != msgs[0].Addr || len(m.Buf) > size || len(m.Buf) == 0 || total+len(m.Buf) > maxSegmentedBytes {
			break
		}
		total += len(m.Buf)
		j++
		if len(m.Buf) < size {
			break // a shorter datagram ends the run
		}
	}
	return j
}

// sendRuns sends msgs[from:] (whose buffers w.bufs holds at the same
// indices), with gso each run as one segmented message, and returns how
// many datagrams went: the datagrams of the messages the kernel took.
func (w *writer) sendRuns(c *Conn, msgs []Message, from int, gso bool) (int, error) {
	g := 0
	for i := from; i < len(msgs); {
		k := 1
		if gso {
			k = w.segmented(msgs[i:])
		}
		m := &w.msgs[g]
		m.Buffers = w.bufs[i : i+k : i+k]
		m.OOB = nil
		if k > 1 {
			binary.NativeEndian.PutUint16(w.oob[g][unix.CmsgLen(0):], uint16(len(msgs[i].Buf)))
			m.OOB = w.oob[g]
		}
		setUDPAddr(&w.addrs[g], &w.ips[g], msgs[i].Addr)
		i += k
		g++
	}
	sent, err := w.send(w.msgs[:g], 0)
	sent = max(sent, 0) // x/net reports -1 with some errors
	n, total, segs := 0, 0, 0
	for _, m := range w.msgs[:sent] {
		for _, b := range m.Buffers {
			total += len(b)
		}
		if len(m.Buffers) > 1 {
			segs += len(m.Buffers)
		}
		n += len(m.Buffers)
	}
	c.tx.batch(n, total)
	c.tx.segmented.Add(uint64(segs))
	if err != nil {
		c.tx.fail(err)
	}
	return n, err
}

// setUDPAddr rewrites ua in place to ap, with ip as its IP's storage.
func setUDPAddr(ua *net.UDPAddr, ip *[net.IPv6len]byte, ap netip.AddrPort) {
	a := ap.Addr()
	if a.Is4() {
		v4 := a.As4()
		copy(ip[:], v4[:])
		ua.IP = ip[:net.IPv4len]
	} else {
		*ip = a.As16()
		ua.IP = ip[:]
	}
	ua.Port = int(ap.Port())
	ua.Zone = a.Zone()
}
