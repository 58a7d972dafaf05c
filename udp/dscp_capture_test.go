package udp

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/tickwire/tickwire/internal/tshark"
)

// TestDSCPOnTheWire captures tickwire datagrams on loopback with tshark
// and checks every one carries DSCP 46: IPv4, IPv6, and both families
// sent from one dual-stack socket. An unmarked socket's datagrams are
// captured too, to show the check can fail. A GSO sender's run, which a
// capture on loopback holds as one frame (the receiver's stack cuts it
// apart after the capture), is checked to carry the marking too.
func TestDSCPOnTheWire(t *testing.T) {
	rx4, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rx4.Close()
	rx6, err := Listen("udp6", "[::1]:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rx6.Close()
	rxg, err := Listen("udp4", "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rxg.Close()
	p4, p6, pg := rx4.LocalAddr().Port(), rx6.LocalAddr().Port(), rxg.LocalAddr().Port()

	c := tshark.Start(t, tshark.Options{Filter: fmt.Sprintf("udp dst port %d or udp dst port %d or udp dst port %d", p4, p6, pg)})

	const perSender = 10
	send := func(network, addr string, cfg Config, dsts ...netip.AddrPort) netip.AddrPort {
		s, err := Listen(network, addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, dst := range dsts {
			msgs := make([]Message, perSender)
			for i := range msgs {
				msgs[i] = Message{Buf: []byte("tickwire dscp"), Addr: dst}
			}
			if n, err := s.WriteBatch(msgs); n != perSender || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
		}
		return s.LocalAddr()
	}
	to4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p4)
	to6 := netip.AddrPortFrom(netip.IPv6Loopback(), p6)
	send("udp4", "127.0.0.1:0", Config{}, to4)
	send("udp6", "[::1]:0", Config{}, to6)
	send("udp", ":0", Config{}, to4, to6) // one dual-stack socket, both families
	off := send("udp4", "127.0.0.1:0", Config{DSCP: DSCPOff}, to4)
	send("udp4", "127.0.0.1:0", Config{GSO: true}, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), pg))

	v4 := c.Fields(fmt.Sprintf("ip && udp.dstport == %d", p4), "udp.srcport", "ip.dsfield.dscp")
	v6 := c.Fields(fmt.Sprintf("ipv6 && udp.dstport == %d", p6), "udp.srcport", "ipv6.tclass.dscp")
	gso := c.Fields(fmt.Sprintf("udp.dstport == %d", pg), "udp.length", "ip.dsfield.dscp")
	if len(v4) != 3*perSender || len(v6) != 2*perSender {
		t.Fatalf("captured %d IPv4 and %d IPv6 datagrams, want %d and %d", len(v4), len(v6), 3*perSender, 2*perSender)
	}
	unmarked := fmt.Sprint(off.Port())
	for _, r := range v4 {
		want := "46"
		if r[0] == unmarked {
			want = "0"
		}
		if r[1] != want {
			t.Errorf("IPv4 datagram from port %s: ip.dsfield.dscp = %s, want %s", r[0], r[1], want)
		}
	}
	for _, r := range v6 {
		if r[1] != "46" {
			t.Errorf("IPv6 datagram from port %s: ipv6.tclass.dscp = %s, want 46", r[0], r[1])
		}
	}
	// The same checks as display filters, the way a person would type them.
	// The GSO sender's run: marked, and all of it on the wire.
	payload := 0
	for _, r := range gso {
		if r[1] != "46" {
			t.Errorf("GSO frame: ip.dsfield.dscp = %s, want 46", r[1])
		}
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("GSO frame: udp.length %q", r[0])
		}
		payload += n - 8
	}
	if want := perSender * len("tickwire dscp"); payload != want {
		t.Errorf("GSO sender: %d payload bytes in %d frames, want %d", payload, len(gso), want)
	}
	if gsoKernel(t) && len(gso) >= perSender {
		t.Errorf("GSO sender: %d frames on loopback, want the run in fewer than %d", len(gso), perSender)
	}
	if n := len(c.Fields("ip.dsfield.dscp == 46", "frame.number")); n != 2*perSender+len(gso) {
		t.Errorf("ip.dsfield.dscp == 46 matched %d frames, want %d", n, 2*perSender+len(gso))
	}
	if n := len(c.Fields("ipv6.tclass.dscp == 46", "frame.number")); n != 2*perSender {
		t.Errorf("ipv6.tclass.dscp == 46 matched %d datagrams, want %d", n, 2*perSender)
	}
}
