package relay

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/tshark"
)

// TestDissectorAgrees: tshark, with proto/wireshark/tickwire.lua,
// dissects the control packets of two real binds on loopback (requests
// to the control address and the relayed ports, replies from both) into
// the fields the encoder wrote, and flags malformed ones.
func TestDissectorAgrees(t *testing.T) {
	c := tshark.Start(t, tshark.Options{Filter: "udp[8:2] = 0x5277"})
	srv, ctrl := loopbackRelay(t, Config{})
	gj, gh, err := MintPair(testKey, time.Now().Add(time.Hour), 123456)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, h := listenLoopback(t), listenLoopback(t)
	if _, err := Bind(ctx, j, ctrl, gj); err != nil {
		t.Fatal(err)
	}
	if _, err := Bind(ctx, h, ctrl, gh); err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{
		append([]byte("Rw\x01\x02\x09\x00\x00"), make([]byte, 10)...), // unknown status
		append([]byte("Rw\x01\x01"), make([]byte, 10)...),             // short request
		append([]byte("Rw\x01\x02\x00\x02\x00"), make([]byte, 10)...), // unknown flag
	}
	sink := listenLoopback(t)
	for _, b := range bad {
		if _, err := j.WriteToUDPAddrPort(b, sink.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
			t.Fatal(err)
		}
	}
	if st := srv.Stats(); st.Binds != 4 {
		t.Fatalf("%d binds, want 4", st.Binds)
	}

	cols := []string{"udp.payload", "tickwire_relay.type", "tickwire_relay.malformed",
		"tickwire_relay.grant.side", "tickwire_relay.grant.allocation", "tickwire_relay.grant.expires", "tickwire_relay.grant.budget",
		"tickwire_relay.reply.status", "tickwire_relay.reply.peer_bound", "tickwire_relay.reply.side",
		"tickwire_relay.reply.allocation", "tickwire_relay.reply.port"}
	args := []string{"-X", "lua_script:../proto/wireshark/tickwire.lua", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"}
	for _, col := range cols {
		args = append(args, "-e", col)
	}
	out := c.Read("", args...)
	var requests, replies, malformed int
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		row := strings.Split(line, "\t")
		if len(row) != len(cols) {
			t.Fatalf("row %q", line)
		}
		payload, err := hex.DecodeString(strings.ReplaceAll(row[0], ":", ""))
		if err != nil {
			t.Fatal(err)
		}
		if row[2] != "" {
			malformed++
			continue
		}
		var want []string
		switch row[1] {
		case "1":
			requests++
			tok, err := ParseBindRequest(payload)
			if err != nil {
				t.Fatalf("%x: %v", payload, err)
			}
			g, err := ReadGrant(tok)
			if err != nil {
				t.Fatal(err)
			}
			want = []string{fmt.Sprint(g.Side), fmt.Sprint(g.Alloc), fmt.Sprint(g.Expires.Unix()), fmt.Sprint(g.Budget), "", "", "", "", ""}
		case "2":
			replies++
			r, err := ParseBindReply(payload)
			if err != nil {
				t.Fatalf("%x: %v", payload, err)
			}
			want = []string{"", "", "", "", fmt.Sprint(uint8(r.Status)), strconv.FormatBool(r.PeerBound), fmt.Sprint(r.Side), fmt.Sprint(r.Alloc), fmt.Sprint(r.Port)}
		default:
			t.Fatalf("row %q: type %q", line, row[1])
		}
		for i, w := range want {
			got := row[3+i]
			if got == "True" || got == "False" { // tshark's booleans vary by version
				got = strings.ToLower(got)
			}
			if w == "false" && got == "0" || w == "true" && got == "1" {
				got = w
			}
			if got != w {
				t.Errorf("%x: %s = %q, want %q", payload, cols[3+i], got, w)
			}
		}
	}
	if requests != 4 || replies != 4 || malformed != len(bad) {
		t.Errorf("dissected %d requests, %d replies, %d malformed; want 4, 4, %d", requests, replies, malformed, len(bad))
	}
}
