//go:build linux

package udp

import (
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// encodeSockaddr is the kernel's side of decodeSockaddr, for the fuzz
// target: IPv4 as AF_INET, everything else as AF_INET6.
func encodeSockaddr(ap netip.AddrPort) unix.RawSockaddrInet6 {
	var sa unix.RawSockaddrInet6
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	if ap.Addr().Is4() {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
		sa4.Family = unix.AF_INET
		sa4.Addr = ap.Addr().As4()
		p = (*[2]byte)(unsafe.Pointer(&sa4.Port))
	} else {
		sa.Family = unix.AF_INET6
		sa.Addr = ap.Addr().As16()
	}
	p[0], p[1] = byte(ap.Port()>>8), byte(ap.Port())
	return sa
}

func FuzzSockaddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, uint16(7777))
	f.Add(netip.IPv6Loopback().AsSlice(), uint16(1))
	f.Add(netip.MustParseAddr("::ffff:10.1.2.3").AsSlice(), uint16(65535))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, ip []byte, port uint16) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			// Any bytes the kernel might hand over must decode without panicking.
			var sa unix.RawSockaddrInet6
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet6), ip)
			decodeSockaddr(&sa)
			return
		}
		ap := netip.AddrPortFrom(a, port)
		sa := encodeSockaddr(ap)
		got := decodeSockaddr(&sa)
		if want := unmap(ap); got != want {
			t.Fatalf("decode(encode(%v)) = %v, want %v", ap, got, want)
		}
	})
}
