//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tosReceiver is a plain socket that reports each datagram's TOS byte or
// traffic class through IP_RECVTOS / IPV6_RECVTCLASS control messages.
type tosReceiver struct {
	uc *net.UDPConn
}

func newTOSReceiver(t *testing.T, network, addr string) *tosReceiver {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	uc := pc.(*net.UDPConn)
	t.Cleanup(func() { uc.Close() })
	raw, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	raw.Control(func(fd uintptr) {
		if network == "udp4" {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		} else {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		}
	})
	if serr != nil {
		t.Fatal(serr)
	}
	return &tosReceiver{uc: uc}
}

func (r *tosReceiver) addr() netip.AddrPort {
	return r.uc.LocalAddr().(*net.UDPAddr).AddrPort()
}

// recv reads one datagram and returns its payload and traffic class.
func (r *tosReceiver) recv(t *testing.T) ([]byte, int) {
	t.Helper()
	r.uc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 2048)
	oob := make([]byte, 128)
	n, oobn, _, _, err := r.uc.ReadMsgUDPAddrPort(b, oob)
	if err != nil {
		t.Fatal(err)
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cmsgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1:
			return b[:n], int(m.Data[0])
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4:
			return b[:n], int(int32(binary.NativeEndian.Uint32(m.Data)))
		}
	}
	t.Fatalf("no TOS / traffic class control message among %d", len(cmsgs))
	return nil, 0
}

func TestDSCPReceivedSide(t *testing.T) {
	cases := []struct {
		name            string
		network, listen string // sender
		rnet, raddr     string // receiver
		cfg             Config
		want            int // traffic class byte
	}{
		{"v4 default EF", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", Config{}, 46 << 2},
		{"v6 default EF", "udp6", "[::1]:0", "udp6", "[::1]:0", Config{}, 46 << 2},
		{"dual-stack to v4", "udp", ":0", "udp4", "127.0.0.1:0", Config{}, 46 << 2},
		{"dual-stack to v6", "udp", ":0", "udp6", "[::1]:0", Config{}, 46 << 2},
		{"v4 AF41 with ECT(0)", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", Config{DSCP: 34, ECN: ECNECT0}, 34<<2 | 2},
		{"v6 AF41 with ECT(1)", "udp6", "[::1]:0", "udp6", "[::1]:0", Config{DSCP: 34, ECN: ECNECT1}, 34<<2 | 1},
		{"v4 off", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", Config{DSCP: DSCPOff}, 0},
		{"v6 off", "udp6", "[::1]:0", "udp6", "[::1]:0", Config{DSCP: DSCPOff}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rx := newTOSReceiver(t, tc.rnet, tc.raddr)
			c, err := Listen(tc.network, tc.listen, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			payload := []byte("tickwire " + tc.name)
			msgs := []Message{{Buf: payload, Addr: rx.addr()}, {Buf: payload, Addr: rx.addr()}}
			if n, err := c.WriteBatch(msgs); n != 2 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			for range 2 {
				got, class := rx.recv(t)
				if string(got) != string(payload) {
					t.Fatalf("payload %q, want %q", got, payload)
				}
				if class != tc.want {
					t.Fatalf("traffic class %#02x (DSCP %d), want %#02x (DSCP %d); info %+v",
						class, class>>2, tc.want, tc.want>>2, c.Info())
				}
			}
		})
	}
}

func TestSocketInfo(t *testing.T) {
	c, err := Listen("udp", ":0", Config{ReadBuffer: 1 << 20, WriteBuffer: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info := c.Info()
	if !info.IPv6 || !info.DualStack || !info.MarkedIPv4 || !info.MarkedIPv6 {
		t.Errorf("dual-stack socket info %+v", info)
	}
	if info.TrafficClass != 0xb8 {
		t.Errorf("TrafficClass %#x, want 0xb8", info.TrafficClass)
	}
	// Linux reports twice the request (half is bookkeeping); without
	// CAP_NET_ADMIN the request is capped by net.core.rmem_max.
	if info.ReadBuffer < info.ReadBufferRequested && !capped(t, "rmem_max", info.ReadBuffer) {
		t.Errorf("read buffer granted %d < requested %d", info.ReadBuffer, info.ReadBufferRequested)
	}
	if info.WriteBuffer < info.WriteBufferRequested && !capped(t, "wmem_max", info.WriteBuffer) {
		t.Errorf("write buffer granted %d < requested %d", info.WriteBuffer, info.WriteBufferRequested)
	}
	t.Logf("%+v", info)

	c4, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if i := c4.Info(); i.IPv6 || i.DualStack || !i.MarkedIPv4 || i.MarkedIPv6 {
		t.Errorf("IPv4 socket info %+v", i)
	}
}

// capped reports whether granted is the kernel's cap for an unprivileged
// request (2 × net.core.<name>).
func capped(t *testing.T, name string, granted int) bool {
	b, err := os.ReadFile("/proc/sys/net/core/" + name)
	if err != nil {
		return false
	}
	var v int
	if _, err := fmt.Sscan(string(b), &v); err != nil {
		return false
	}
	t.Logf("%s = %d, granted %d", name, v, granted)
	return granted == 2*v
}
