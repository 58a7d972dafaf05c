package session

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// pathEnd is one end of an in-memory session pair: its handler accepts
// everything and its output keeps what the session lets it send.
type pathEnd struct {
	s     *Session
	sent  [][]byte
	bytes int
	gate  bool // ask the session's path whether a datagram may go
}

func (e *pathEnd) Message(*Message, *PacketInfo)                      {}
func (e *pathEnd) Frame(proto.FrameType, []byte, *PacketInfo) error   { return nil }
func (e *pathEnd) AppendFrames(b []byte, _ int, _ *PacketInfo) []byte { return b }
func (e *pathEnd) Delivered(uint64)                                   {}
func (e *pathEnd) Lost(uint64)                                        {}
func (e *pathEnd) Buffer() []byte                                     { return make([]byte, 0, 1500) }
func (e *pathEnd) Emit(b []byte) {
	if e.gate && !e.s.Allow(len(b)) {
		return
	}
	e.sent = append(e.sent, b)
	e.bytes += len(b)
}

// deliver opens and receives packets at s as coming from addr (when s
// has a path) and reports the bytes.
func deliver(t *testing.T, s *Session, pkts [][]byte, from netip.AddrPort, now time.Time) (n int) {
	t.Helper()
	for _, p := range pkts {
		h, _, err := proto.ParseHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		pn, payload, drop, ok := s.Open(p, &h)
		if !ok {
			t.Fatalf("dropped: %v", drop)
		}
		s.Arrived(from, pn, len(p), now)
		if err := s.Receive(now, &h, pn, len(p), payload); err != nil {
			t.Fatal(err)
		}
		n += len(p)
	}
	return n
}

func newPathPair(t *testing.T, addr netip.AddrPort, now time.Time) (srv, cli *pathEnd) {
	var k1, k2 [proto.KeySize]byte
	k1[0], k2[0] = 1, 2
	srv, cli = &pathEnd{gate: true}, &pathEnd{}
	var err error
	srv.s, err = New(Config{ID: 9, MaxPacket: 1200, TxKey: &k1, RxKey: &k2, Heartbeat: time.Second, Timeout: time.Minute, Handler: srv}, now)
	if err != nil {
		t.Fatal(err)
	}
	cli.s, _ = New(Config{ID: 9, MaxPacket: 1200, TxKey: &k2, RxKey: &k1, Heartbeat: time.Second, Timeout: time.Minute, Handler: cli}, now)
	srv.s.SetAddr(addr)
	return srv, cli
}

// TestPathValidation: a client whose address changes (NAT rebinding) is
// followed at once, gets at most 3× what it sent from the new address
// until it answers the path challenge, and then everything again.
func TestPathValidation(t *testing.T) {
	now := time.Unix(1000, 0)
	a := netip.MustParseAddrPort("192.0.2.1:5000")
	b := netip.MustParseAddrPort("198.51.100.7:6000")
	srv, cli := newPathPair(t, a, now)
	for range 64 { // the server has plenty to send
		srv.s.Send(Reliable, 1, false, 0, make([]byte, 1000))
	}
	// One small packet from the new address.
	cli.s.Tick(now, Ticks{}, SendAlways, cli)
	in := deliver(t, srv.s, cli.sent, b, now)
	cli.sent = cli.sent[:0]
	if srv.s.Addr() != b {
		t.Fatalf("session at %v, want the new address %v", srv.s.Addr(), b)
	}
	srv.s.Tick(now, Ticks{}, SendAlways, srv)
	if srv.bytes > amplification*in || srv.bytes == 0 {
		t.Fatalf("sent %d bytes to an unvalidated address that sent %d", srv.bytes, in)
	}
	if ps := srv.s.PathStats(); ps.Moves != 1 || ps.Blocked == 0 || ps.Validations != 0 {
		t.Fatalf("path stats %+v", ps)
	}
	// The client answers the challenge in its next packet.
	now = now.Add(16 * time.Millisecond)
	deliver(t, cli.s, srv.sent, netip.AddrPort{}, now)
	srv.sent, srv.bytes = srv.sent[:0], 0
	cli.s.Tick(now, Ticks{}, SendAlways, cli)
	deliver(t, srv.s, cli.sent, b, now)
	if ps := srv.s.PathStats(); ps.Validations != 1 {
		t.Fatalf("path not validated: %+v", ps)
	}
	srv.s.Tick(now, Ticks{}, SendAlways, srv)
	if len(srv.sent) < 10 {
		t.Fatalf("after validation only %d packets went out", len(srv.sent))
	}
}

// TestPathForgedSource: packets of a genuine session with a forged source
// address (the victim's) buy the victim at most 3× their bytes, and when
// the victim never answers the session goes back to its address.
func TestPathForgedSource(t *testing.T) {
	now := time.Unix(1000, 0)
	a := netip.MustParseAddrPort("192.0.2.1:5000")
	victim := netip.MustParseAddrPort("203.0.113.9:80")
	srv, cli := newPathPair(t, a, now)
	in := 0
	for i := range 120 { // two seconds of keep-alives from the "victim"
		now = now.Add(16 * time.Millisecond)
		srv.s.Send(Unreliable, 1, false, 0, make([]byte, 1000)) // a game's stream
		cli.sent = cli.sent[:0]
		mode := SendOwed
		if i%30 == 0 {
			mode = SendAlways
		}
		cli.s.Tick(now, Ticks{}, mode, cli)
		in += deliver(t, srv.s, cli.sent, victim, now)
		srv.s.Tick(now, Ticks{}, SendAlways, srv)
		if srv.bytes > amplification*in {
			t.Fatalf("after %d ticks the victim got %d bytes for %d forged", i, srv.bytes, in)
		}
	}
	t.Logf("forged %d bytes, victim got %d; %+v", in, srv.bytes, srv.s.PathStats())
	// No answer: back to the validated address after pathTimeout.
	now = now.Add(pathTimeout)
	srv.s.Tick(now, Ticks{}, SendAlways, srv)
	if srv.s.Addr() != a || srv.s.PathStats().Reverts != 1 {
		t.Fatalf("session at %v, stats %+v, want back at %v", srv.s.Addr(), srv.s.PathStats(), a)
	}
}
