package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
)

// ackOnlyTick is one client-tick of a headless bot that only acks, on
// the bot's side of the connection: the server's packet for a tick (a
// snapshot delta of 400 patch bytes and an input ack) handed to its game
// layer, the clock's tick with the input it samples, and the frames of
// its next packet. The session's part (opening, acks, sealing) and the
// group's batches are the root's, TestClientGroupStepAllocs' subject.
func ackOnlyTick(t testing.TB) func() {
	t.Helper()
	g := newBotGame(1, []uint16{1}, true, false, 0, 1)
	now := time.Unix(1_000_000, 0)
	const serverTick = 1000
	fh, err := g.gc.Attach(nil, tickwire.Accepted{Time: now, ServerTick: serverTick, RTT: 20 * time.Millisecond, Players: []uint16{1}, TickRate: 60})
	if err != nil {
		t.Fatal(err)
	}
	ticker, ok := fh.(tickwire.Ticker)
	if !ok {
		t.Fatal("the game layer does not tick")
	}
	delta := proto.SnapshotDeltaFrame{Codec: proto.CodecXORRLE, Count: 40, Data: make([]byte, 400)}
	ack := proto.InputAckFrame{Player: 1, Age: 200}
	in := make([]byte, 0, proto.MaxPacketSizeLimit)
	out := make([]byte, 0, proto.MaxPacketSizeLimit)
	p := tickwire.PacketInfo{RTT: 20 * time.Millisecond, RTTVar: 2 * time.Millisecond}
	tick := uint32(serverTick)
	return func() {
		now = now.Add(time.Second / 60)
		tick++
		p.Header = proto.Header{Type: proto.PacketData, Sealed: true, Seq: uint16(tick), Tick: tick}
		p.Number, p.Time = uint64(tick), now
		delta.Tick, delta.Revision, delta.BaseRevision = tick, tick, tick-2
		ack.Newest = tick + 2
		in, _ = delta.Append(in[:0])
		if err := fh.Frame(proto.FrameSnapshotDelta, in, &p); err != nil {
			t.Fatal(err)
		}
		in, _ = ack.Append(in[:0])
		if err := fh.Frame(proto.FrameInputAck, in, &p); err != nil {
			t.Fatal(err)
		}
		ticker.Tick(now, tick)
		p.Header = proto.Header{}
		out = fh.AppendFrames(out[:0], 1100, &p)
		if len(out) == 0 {
			t.Fatal("no input frame")
		}
	}
}

// TestAckOnlyTickAllocs: a headless bot that only acks allocates nothing
// per packet received or sent, once it runs.
func TestAckOnlyTickAllocs(t *testing.T) {
	step := ackOnlyTick(t)
	for range 120 {
		step()
	}
	if n := testing.AllocsPerRun(600, step); n != 0 {
		t.Fatalf("%v allocations per client-tick, want 0", n)
	}
}

// BenchmarkAckOnlyTick is the bot's own CPU per client-tick beside the
// session's and the kernel's.
func BenchmarkAckOnlyTick(b *testing.B) {
	step := ackOnlyTick(b)
	for range 120 {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// TestHeadlessKeepsSessions: 12 headless bots on client groups (2 of
// them rebuilding the state, the others only acking) join an arena
// server on loopback through a POST /api/join of the test's and play
// 3 s. While they play, the server's connections see their acks: every
// one of the 12 has a round-trip time and at most half its packets
// unacknowledged once it sent 2 s of them (a bot that did not ack would
// leave them all). At the end none was lost or timed out on either side,
// none asked for or was sent a full snapshot after joining (the server
// sends one unasked when a connection's acks stop), none desynced, and
// every echo came back.
func TestHeadlessKeepsSessions(t *testing.T) {
	const n = 12
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tickwire.NewServer(key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	host, err := game.NewHost(srv, func(uint64) (game.Game, error) { return arena.NewGame(20), nil }, game.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle(echoingHost{host})
	addr := testrig.Serve(t, srv, nil)
	var clients atomic.Uint64
	join := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := clients.Add(1)
		tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: 7, ClientID: id, Players: []uint16{uint16(id)},
			ServerAddrs: []string{addr.String()}}, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(joinResponse{GameID: 7, Addr: addr.String(), Players: tok.Players, Token: tok.String()})
	}))
	defer join.Close()

	// What the server's connections saw, once every one had sent 2 s of
	// packets.
	type seen struct {
		conns, noRTT int
		maxLoss      float64
	}
	stop := make(chan struct{})
	watched := make(chan *seen, 1)
	go func() {
		poll := time.NewTicker(50 * time.Millisecond) // the server's counters, while the bots play
		defer poll.Stop()
		for {
			select {
			case <-stop:
				watched <- nil
				return
			case <-poll.C:
			}
			s := &seen{}
			ready := 0
			srv.Do(func() {
				srv.Each(func(c *tickwire.Conn) {
					st := c.Stats()
					s.conns++
					if st.PacketsOut < 120 {
						return
					}
					ready++
					if st.RTT == 0 {
						s.noRTT++
					}
					s.maxLoss = max(s.maxLoss, st.Loss)
				})
			})
			if ready == n {
				watched <- s
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-server", join.URL, "-n", strconv.Itoa(n), "-duration", "3s", "-headless", "-verify", "2",
		"-json", "-progress", "0", "-ramp-up", "100ms"}, &stdout, &stderr)
	close(stop)
	s := <-watched
	if code != 0 {
		t.Fatalf("tickwire-bot exited %d: %s%s", code, stderr.String(), stdout.String())
	}
	var sum botproto.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if sum.Connected != n || sum.Disconnects != 0 || sum.Interruptions != 0 || sum.Resyncs != 0 || sum.Desyncs != 0 ||
		sum.ReliableLost != 0 || sum.ReliableReceived == 0 {
		t.Errorf("bots: %d of %d connected, %d disconnects, %d sessions lost, %d resyncs, %d desyncs, echoes %d sent %d back %d lost",
			sum.Connected, n, sum.Disconnects, sum.Interruptions, sum.Resyncs, sum.Desyncs, sum.ReliableSent, sum.ReliableReceived, sum.ReliableLost)
	}
	switch {
	case s == nil:
		t.Error("the server never saw all the bots send 2 s of packets")
	case s.noRTT > 0 || s.maxLoss > 0.5:
		t.Errorf("the server's %d connections: %d without a round-trip time, up to %.0f %% of packets unacknowledged", s.conns, s.noRTT, 100*s.maxLoss)
	default:
		t.Logf("the server's %d connections: up to %.1f %% of packets unacknowledged", s.conns, 100*s.maxLoss)
	}
	var hs game.HostStats
	srv.Do(func() { hs = host.Stats() })
	timeouts := srv.Stats().Disconnects[proto.DisconnectTimeout]
	if hs.Joins != n || hs.Interruptions != 0 || hs.Resyncs != 0 || hs.StaleResyncs != 0 || hs.FullSnapshots != n || timeouts != 0 {
		t.Errorf("server: %d joins, %d interrupted, %d resyncs asked, %d sent unasked, %d full snapshots, %d timeouts",
			hs.Joins, hs.Interruptions, hs.Resyncs, hs.StaleResyncs, hs.FullSnapshots, timeouts)
	}
}

// echoingHost is a game host that answers the bots' echoes, as
// tickwire-server does.
type echoingHost struct{ *game.Host }

func (h echoingHost) Message(c *tickwire.Conn, m *tickwire.Message) {
	if m.Channel == botproto.EchoChannel && m.Delivery == tickwire.Reliable {
		c.Send(tickwire.Reliable, botproto.EchoChannel, m.Data)
		return
	}
	h.Host.Message(c, m)
}
