package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/relay"
)

// TestFlagsNATRelay: -relay and its flags, alone or beside the game
// server and the lobby; each mistake gets a message naming it; the
// commits relay's -relay-* flags still want -game relay.
func TestFlagsNATRelay(t *testing.T) {
	for _, c := range []struct {
		args   []string
		public string
		ports  [2]uint16
	}{
		{[]string{"-relay", ":3478"}, "127.0.0.1:3478", [2]uint16{}},
		{[]string{"-listen", "", "-http", "", "-relay", "192.0.2.1:3478", "-relay-ports", "40000-40999"}, "192.0.2.1:3478", [2]uint16{40000, 40999}},
		{[]string{"-relay", ":3478", "-relay-public-addr", "relay.example:3478"}, "relay.example:3478", [2]uint16{}},
		{[]string{"-relay-public-addr", "relay.example:3478"}, "relay.example:3478", [2]uint16{}},
		{nil, "", [2]uint16{}},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if o.natRelayPublic != c.public || o.natRelayPorts != c.ports {
			t.Errorf("%q: public %q ports %v, want %q %v", c.args, o.natRelayPublic, o.natRelayPorts, c.public, c.ports)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-relay", "3478"}, "-relay \"3478\" is not host:port"},
		{[]string{"-relay", ":7777"}, "one UDP port"},
		{[]string{"-relay", ":3478", "-relay-key-file", ""}, "-relay-key-file must name a file"},
		{[]string{"-relay-ports", "40000-40999"}, "give -relay too"},
		{[]string{"-relay", ":3478", "-relay-ports", "40999-40000"}, "want a range of UDP ports"},
		{[]string{"-relay", ":3478", "-relay-ports", "0-10"}, "want a range of UDP ports"},
		{[]string{"-listen", "", "-http", "", "-relay-public-addr", "r:1"}, "nothing to serve"},
		{[]string{"-listen", "", "-http", "", "-relay", ":3478", "-relay-public-addr", "r"}, "-relay-public-addr \"r\" is not host:port"},
		{[]string{"-relay-input-size", "8"}, "apply to -game relay only"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// TestRelayAlone: tickwire-server with empty -listen and -http and a
// -relay runs a relay and nothing else: it creates its key file, two
// sockets bind with grants minted under that key and a datagram
// crosses, and /metrics on -admin counts it.
func TestRelayAlone(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "relay.key")
	var logs syncBuffer
	ready := make(chan addrs, 1)
	exit := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		exit <- run(ctx, []string{"-listen", "", "-http", "", "-admin", "127.0.0.1:0", "-relay", "127.0.0.1:0", "-relay-key-file", keyFile}, &logs, ready)
	}()
	var a addrs
	select {
	case a = <-ready:
	case code := <-exit:
		t.Fatalf("exited %d: %s", code, logs.String())
	}
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("exit %d: %s", code, logs.String())
		}
	}()
	if a.relay == nil || a.udp != nil || a.http != nil {
		t.Fatalf("addresses %+v: want the relay's only", a)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	k, _, err := tickwire.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	gj, gh, err := relay.MintPair(relay.Key(k), time.Now().Add(time.Minute), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	listen := func() *net.UDPConn {
		pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	j, h := listen(), listen()
	bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
	defer bcancel()
	ctrl := a.relay.(*net.UDPAddr).AddrPort()
	pj, err := relay.Bind(bctx, j, ctrl, gj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Bind(bctx, h, ctrl, gh); err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteToUDPAddrPort([]byte("tw hello"), pj); err != nil {
		t.Fatal(err)
	}
	h.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 100)
	n, _, err := h.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "tw hello" {
		t.Fatalf("host read %q, %v", buf[:n], err)
	}
	// The relay counts a datagram once its write returned, which may be
	// after the host read it.
	var m string
	for end := time.Now().Add(10 * time.Second); ; {
		m = get(t, "http://"+a.admin.String()+"/metrics")
		if strings.Contains(m, "tickwire_relay_forwarded_packets_total 1") || time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{"tickwire_relay_allocations 1", "tickwire_relay_bound_sides 2", "tickwire_relay_forwarded_packets_total 1",
		`tickwire_relay_dropped_packets_total{reason="bad_grant"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestLobbyRelay: the lobby mints grants for this process's relay under
// its key, or for another process's at -relay-public-addr under the key
// in -relay-key-file, which must exist; without either it knows no
// relay.
func TestLobbyRelay(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lobbyRelay(o, nil); r != nil || err != nil {
		t.Fatalf("no relay: %+v %v", r, err)
	}
	own := relay.Key{1}
	o.natRelayPublic = "relay.example:3478"
	if r, err := lobbyRelay(o, &own); err != nil || r.Key != own || r.Addr != "relay.example:3478" {
		t.Fatalf("own relay: %+v %v", r, err)
	}
	o.natRelayKeyFile = filepath.Join(t.TempDir(), "relay.key")
	if _, err := lobbyRelay(o, nil); err == nil || !strings.Contains(err.Error(), "-relay-key-file") {
		t.Fatalf("no key file: %v", err)
	}
	k, _, err := tickwire.LoadOrCreateKey(o.natRelayKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lobbyRelay(o, nil); err != nil || r.Key != relay.Key(k) {
		t.Fatalf("another's relay: %+v %v", r, err)
	}
}
