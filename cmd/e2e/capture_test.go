package e2e

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/internal/tshark"
)

// TestLiveCapture runs the server and a few bots on loopback while tshark
// captures the game port, then decodes the capture with the project's
// dissector: every datagram must dissect as tickwire, none malformed, all
// marked DSCP 46, and the tick must increase in each direction.
func TestLiveCapture(t *testing.T) {
	tshark.Look(t)
	_, c := capturedGame(t, 4, "3s")
	lua, err := filepath.Abs("../../proto/wireshark/tickwire.lua")
	if err != nil {
		t.Fatal(err)
	}
	out := c.Read("", "-X", "lua_script:"+lua, "-T", "fields", "-E", "separator=|",
		"-e", "udp.srcport", "-e", "udp.dstport", "-e", "ip.dsfield.dscp",
		"-e", "tickwire.type", "-e", "tickwire.tick", "-e", "tickwire.malformed", "-e", "_ws.col.Protocol")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) < 100 {
		t.Fatalf("only %d datagrams captured:\n%s", len(rows), out)
	}
	type flow struct{ src, dst string }
	last := map[flow]int{}
	first := map[flow]int{}
	ticked := 0
	for i, row := range rows {
		f := strings.Split(row, "|")
		if len(f) != 7 {
			t.Fatalf("row %d: %q", i, row)
		}
		if f[2] != "46" {
			t.Errorf("datagram %d %s→%s: DSCP %q, want 46", i, f[0], f[1], f[2])
		}
		if f[3] == "" || !strings.EqualFold(f[6], "tickwire") {
			t.Errorf("datagram %d %s→%s did not dissect as tickwire (protocol %q)", i, f[0], f[1], f[6])
		}
		if f[5] != "" {
			t.Errorf("datagram %d %s→%s is malformed: %q", i, f[0], f[1], f[5])
		}
		if f[4] == "" {
			continue // handshake packets carry no tick
		}
		tick, err := strconv.Atoi(f[4])
		if err != nil {
			t.Fatalf("datagram %d: tick %q", i, f[4])
		}
		ticked++
		fl := flow{f[0], f[1]}
		if prev, ok := last[fl]; ok && tick < prev {
			t.Errorf("flow %s→%s: tick %d after %d", fl.src, fl.dst, tick, prev)
		}
		if _, ok := first[fl]; !ok {
			first[fl] = tick
		}
		last[fl] = tick
	}
	// 4 clients: 8 directions, each must have moved on.
	if len(last) != 8 {
		t.Errorf("%d flows with ticks, want 8", len(last))
	}
	for fl, l := range last {
		if l <= first[fl] {
			t.Errorf("flow %s→%s: tick stayed at %d", fl.src, fl.dst, l)
		}
	}
	t.Logf("%d datagrams, %d with a session header, %d flows: all tickwire, DSCP 46, none malformed", len(rows), ticked, len(last))
}

// capturedGame starts the server and n bots that play the arena for d
// while tshark captures the game port; it returns the server and the
// capture, complete.
func capturedGame(t *testing.T, n int, d string) (*proc, *tshark.Capture) {
	t.Helper()
	srv, a := server(t)
	_, port, _ := net.SplitHostPort(a.udp)
	c := tshark.Start(t, tshark.Options{Filter: "udp port " + port})
	s, code := bots(t, "-server", "http://"+a.http, "-n", strconv.Itoa(n), "-duration", d)
	if code != 0 || s.Connected != n {
		t.Fatalf("bots: exit %d, %+v", code, s)
	}
	c.Stop()
	return srv, c
}
