package tshark

import (
	"fmt"
	"net"
	"strconv"
	"testing"
)

// TestCaptureSeesEverything sends datagrams right after Start and right
// before Fields: all of them, and no probe, must be in the capture.
func TestCaptureSeesEverything(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	dst := rx.LocalAddr().(*net.UDPAddr)

	c := Start(t, Options{Filter: fmt.Sprintf("udp dst port %d", dst.Port)})
	const count = 50
	for i := range count {
		if _, err := tx.WriteTo(make([]byte, i+1), dst); err != nil {
			t.Fatal(err)
		}
	}
	rows := c.Fields("", "udp.dstport", "udp.length")
	if len(rows) != count {
		t.Fatalf("captured %d datagrams, want %d: %v", len(rows), count, rows)
	}
	for i, r := range rows {
		if r[0] != strconv.Itoa(dst.Port) || r[1] != strconv.Itoa(8+i+1) {
			t.Fatalf("row %d = %v, want port %d length %d", i, r, dst.Port, 8+i+1)
		}
	}
	// Display filters apply.
	if rows := c.Fields("udp.length > 50", "udp.length"); len(rows) != count-42 {
		t.Fatalf("display filter kept %d rows, want %d", len(rows), count-42)
	}
}
