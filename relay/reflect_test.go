package relay

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/udp/udptest"
)

// TestReflection: what the relay sends an address, divided by what it
// received from it, for senders of every kind, none above 1 (the bound
// is 3×): a sender of garbage and of tickwire-looking datagrams, one of
// bind requests with a bad MAC (both to the control address and the
// relayed ports), one replaying a valid grant from a second address, a
// bound side flooding bind requests (its own grant and its peer's, live)
// and junk, and a side whose peer is
// not bound sending data (all dropped). The flooded side's peer gets
// what was forwarded, the bound side's own datagrams and nothing more.
func TestReflection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, Config{})
		gj, gh := l.grants(time.Hour, 1<<30)
		j, h := l.player(1), l.player(2)
		pj, ph := l.bind(j, gj), l.bind(h, gh)
		lone := l.player(3)
		gl, _ := l.grants(time.Hour, 1<<30)
		pl := l.bind(lone, gl)

		bad := bytes.Clone(gj)
		bad[GrantSize-1] ^= 0xff
		type sender struct {
			name string
			c    *udptest.Conn
			pkts [][]byte
			to   []netip.AddrPort
		}
		garbage := [][]byte{[]byte("Rw"), []byte("Rw\x01\x01"), bytes.Repeat([]byte{'R'}, 1400), []byte("tw\x03\x01 request"),
			append([]byte("Rw\x01\x02"), make([]byte, 13)...)}
		senders := []sender{
			{"garbage", l.player(10), garbage, []netip.AddrPort{l.ctrl, pj, ph}},
			{"bad MAC", l.player(11), [][]byte{AppendBindRequest(nil, bad)}, []netip.AddrPort{l.ctrl, pj, ph}},
			{"replayed grant", l.player(12), [][]byte{AppendBindRequest(nil, gj)}, []netip.AddrPort{pj}},
			{"bound side", j, append([][]byte{AppendBindRequest(nil, gj), AppendBindRequest(nil, gh)}, garbage...), []netip.AddrPort{l.ctrl, pj, ph}},
			{"unpaired side", lone, [][]byte{[]byte("tw\x03\x06 data for nobody")}, []netip.AddrPort{pl}},
		}
		in := map[netip.AddrPort]int{}
		for range 50 {
			for _, s := range senders {
				for _, to := range s.to {
					for _, p := range s.pkts {
						send(t, s.c, p, to)
						in[s.c.AddrPort()] += len(p)
					}
				}
			}
			// The bound sides keep live, so the replays are refused.
			send(t, j, []byte("tw data"), pj)
			in[j.AddrPort()] += len("tw data")
			send(t, h, AppendBindRequest(nil, gh), ph)
			time.Sleep(100 * time.Millisecond)
		}
		for _, s := range senders {
			var out int
			for _, b := range recvAll(t, s.c, time.Second) {
				out += len(b)
			}
			ratio := float64(out) / float64(in[s.c.AddrPort()])
			t.Logf("%-14s sent %6d bytes, got %6d back: %.2f×", s.name, in[s.c.AddrPort()], out, ratio)
			if ratio > 1 {
				t.Errorf("%s: %.2f× reflected, want at most 1× (the bound is 3×)", s.name, ratio)
			}
		}
		// The host gets the joiner's tickwire-looking datagrams to its
		// relayed port, once each: "tw data" and one of the garbage.
		want := 50 * (len("tw data") + len(garbage[3]))
		var toHost int
		for _, b := range recvAll(t, h, time.Second) {
			if IsControl(b) {
				continue // keep-alive replies
			}
			if !bytes.Equal(b, []byte("tw data")) && !bytes.Equal(b, garbage[3]) {
				t.Fatalf("host got %q", b)
			}
			toHost += len(b)
		}
		if toHost != want {
			t.Errorf("host got %d bytes, want the joiner's %d", toHost, want)
		}
		st := l.srv.Stats()
		t.Logf("relay: in %d bytes, out %d; drops %v", st.BytesIn, st.BytesOut, fmt.Sprint(st.Dropped))
		if st.BytesOut > st.BytesIn {
			t.Errorf("the relay sent %d bytes, more than it received (%d)", st.BytesOut, st.BytesIn)
		}
	})
}
