package tickwire

import (
	"bytes"
	"fmt"
	"github.com/tickwire/tickwire/udp"
	"net/netip"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
)

// tickRig is a server running the arena for n connected players without
// sockets: every tick each player's input frame arrives, the server ticks
// and builds every packet (sealed), and each packet is acknowledged.
type tickRig struct {
	s     *Server
	host  *GameHost
	conns []*Conn
	now   time.Time
	in    []byte
	fb    []byte
	tick  uint32
	// flood makes the first player ask for a resync in 63 frames of
	// every packet (a hostile client).
	flood bool
	rb    []byte
}

func newTickRig(t testing.TB, n, workers int) *tickRig {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{MaxConnections: n + 1, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	dc := &discardConn{}
	s.conn, s.out.conn = dc, dc
	host, err := NewGameHost(s, func(uint64) (Game, error) { return arena.NewGame(arena.DefaultNPCs), nil }, GameConfig{
		Interest:  interest.WorldConfig{CellSize: arena.ViewRadius / 2},
		Scheduler: interest.SchedulerConfig{Radius: arena.ViewRadius},
		View:      arena.View,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(host)
	r := &tickRig{s: s, host: host, now: time.Now()}
	s.now = func() time.Time { return r.now }
	for i := range n {
		var priv proto.TokenPrivate
		priv.ClientID, priv.PlayerCount, priv.Players[0] = uint64(i+1), 1, uint16(i+1)
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10000+i))
		c, err := s.newConn(s.newConnID(), &priv, 1, addr, r.now, &priv.ClientToServerKey, &priv.ServerToClientKey)
		if err != nil {
			t.Fatal(err)
		}
		host.Connected(c)
		r.conns = append(r.conns, c)
	}
	return r
}

// warm runs ticks until every player has had its join snapshot (the
// host compresses a few per tick) and 120 more: the steady state.
func (r *tickRig) warm() {
	for n := 0; n < 10000 && r.host.Stats().FullSnapshots < uint64(len(r.conns)); n++ {
		r.step()
	}
	for range 120 {
		r.step()
	}
}

// step runs one server tick with every player's input and acks.
func (r *tickRig) step() {
	r.now = r.now.Add(time.Second / 60)
	r.tick++
	for i, c := range r.conns {
		gc := r.host.conns[c]
		in := arena.Input{MoveX: int8(r.tick*7 + uint32(i)), MoveY: int8(r.tick*3 - uint32(i)), Aim: uint16(r.tick * 300)}
		r.in = arena.AppendInput(r.in[:0], in)
		f := proto.InputFrame{Player: c.players[0], Tick: gc.game.eng.Tick() + 2, Count: 1, Size: arena.InputSize, Data: r.in}
		r.fb, _ = f.Append(r.fb[:0])
		pi := PacketInfo{Time: r.now, Header: proto.Header{Tick: f.Tick, InterpFrom: f.Tick - 6, InterpTo: f.Tick - 5}}
		gc.Frame(proto.FrameInput, r.fb, &pi)
		if r.flood && i == 0 {
			req := proto.ResyncRequestFrame{Reason: proto.ResyncPatchError}
			r.rb, _ = req.Append(r.rb[:0])
			for range 63 {
				gc.Frame(proto.FrameResyncRequest, r.rb, &pi)
			}
		}
	}
	// The rig feeds frames past the sessions, which receive no packet:
	// the tick without its timeouts.
	r.s.tickNum++
	r.s.build(r.now)
	r.s.out.flush()
	for _, c := range r.conns {
		r.host.conns[c].Delivered(c.sess.NextPacketNumber() - 1)
	}
}

// BenchmarkServerTick is one full server tick of the arena (300 NPCs,
// 64 m view radius) for n players: inputs in, game step, per-player
// interest scheduling and XOR+RLE delta encoding, sealing every packet.
func BenchmarkServerTick(b *testing.B) {
	for _, n := range []int{16, 64, 256, 1000} {
		b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
			r := newTickRig(b, n, 0)
			r.warm()
			b.ReportAllocs()
			for b.Loop() {
				r.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/player")
		})
	}
}

// BenchmarkServerTickWorkers is BenchmarkServerTick's 1,000 players
// built by one worker and by two (Config.Workers): the speed-up of
// building the connections' packets on both cores.
func BenchmarkServerTickWorkers(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			r := newTickRig(b, 1000, w)
			r.warm()
			b.ReportAllocs()
			for b.Loop() {
				r.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/player")
		})
	}
}

// BenchmarkServerTickResyncFlood is BenchmarkServerTick's 64 players with
// one of them asking for a resync in 63 frames of every packet: the cost
// of the flood is the difference (a full snapshot per cooldown, not per
// request).
func BenchmarkServerTickResyncFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			r := newTickRig(b, 64, 0)
			r.flood = flood
			for range 120 {
				r.step()
			}
			b.ReportAllocs()
			for b.Loop() {
				r.step()
			}
			b.ReportMetric(float64(r.host.Stats().FullSnapshots), "fulls")
		})
	}
}

// recordConn keeps every datagram written, by destination.
type recordConn struct {
	discardConn
	sent map[netip.AddrPort][][]byte
}

func (r *recordConn) WriteBatch(m []udp.Message) (int, error) {
	for _, msg := range m {
		r.sent[msg.Addr] = append(r.sent[msg.Addr], slices.Clone(msg.Buf))
	}
	return len(m), nil
}

// TestBuildWorkersSamePackets: the packets of a tick do not depend on
// how many workers build them (Config.Workers): 100 players for 2 s,
// built by one worker and by three, send every player the same bytes.
func TestBuildWorkersSamePackets(t *testing.T) {
	// In a synctest bubble each run sees the same clock (the reliable
	// channel's timestamps come from time.Now).
	run := func(workers int) (sent map[netip.AddrPort][][]byte) {
		synctest.Test(t, func(t *testing.T) {
			r := newTickRig(t, 100, workers)
			rc := &recordConn{sent: map[netip.AddrPort][][]byte{}}
			r.s.conn, r.s.out.conn = rc, rc
			for range 120 {
				time.Sleep(time.Second / 60)
				r.now = time.Now().Add(-time.Second / 60) // step adds the tick
				r.step()
			}
			if got := len(r.s.builder.workers); workers > 1 && got != workers {
				t.Errorf("%d workers ran, want %d", got, workers)
			}
			r.s.builder.stop()
			sent = rc.sent
		})
		return sent
	}
	one, three := run(1), run(3)
	if len(one) != 100 {
		t.Fatalf("packets for %d players, want 100", len(one))
	}
	for addr, want := range one {
		got := three[addr]
		if len(got) != len(want) {
			t.Fatalf("%v: %d packets with one worker, %d with three", addr, len(want), len(got))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				d := 0
				for d < min(len(got[i]), len(want[i])) && got[i][d] == want[i][d] {
					d++
				}
				t.Fatalf("%v: packet %d differs between one worker and three (lengths %d, %d; first difference at byte %d)", addr, i, len(want[i]), len(got[i]), d)
			}
		}
	}
}

// TestBuildWorkersAllocs: handing a tick's connections to two workers
// and writing their queues allocates nothing once warm (96 bare
// sessions: the build's own cost, without a game's).
func TestBuildWorkersAllocs(t *testing.T) {
	key, _ := GenerateKey()
	s, err := NewServer(key, Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	dc := &discardConn{}
	s.conn, s.out.conn = dc, dc
	now := time.Now()
	s.now = func() time.Time { return now }
	for i := range 96 {
		var priv proto.TokenPrivate
		priv.ClientID, priv.PlayerCount, priv.Players[0] = uint64(i+1), 1, uint16(i+1)
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10000+i))
		if _, err := s.newConn(s.newConnID(), &priv, 1, addr, now, &priv.ClientToServerKey, &priv.ServerToClientKey); err != nil {
			t.Fatal(err)
		}
	}
	defer s.builder.stop()
	tick := func() {
		now = now.Add(time.Second / 60)
		s.build(now)
	}
	for range 120 {
		tick()
	}
	if n := testing.AllocsPerRun(120, tick); n != 0 {
		t.Fatalf("a tick allocates %v times", n)
	}
	if len(s.builder.workers) != 2 {
		t.Fatalf("%d workers", len(s.builder.workers))
	}
}
