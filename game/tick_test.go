package game

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/udp"
)

// tickRig is a server running the arena for n players, each with a real
// client session: every tick each client seals a packet with its input
// (and its acks) and the server receives it, ticks, builds every packet
// (sealed) and writes them; each client opens and receives its packets,
// so the server's reliable data is acknowledged and its delta baselines
// advance through the session's packet acks, as over a network with no
// delay or loss. Only the server's part is timed in the benchmarks.
type tickRig struct {
	s       *tickwire.Server
	key     tickwire.Key
	host    *Host
	conn    *rigConn
	clients []*rigClient
	n       int // players to connect
	joins   int // players connected per tick
	now     time.Time
	tick    uint32
	// flood makes the first player ask for a resync in 63 frames of
	// every packet (a hostile client).
	flood bool
	// fire makes every player fire as tickwire-bot's do: a ray or a
	// projectile each in one tick of 40 on average. Projectiles live up
	// to 90 ticks and come and go every tick, so the entity set changes
	// every tick (every client's state realigns), as in a real game; hits
	// and kills send game events on the reliable channel.
	fire bool
	// inputEvery makes each client send every inputEvery ticks (its
	// inputs of those ticks in one frame), as Client.SetInputInterval.
	inputEvery int
	// batch holds the clients' datagrams of a tick, as the read loop
	// hands them to the server: the server receives them together (its
	// workers open them first).
	batch udp.Batch
	// inject, when set, may change the clients' datagrams of the next
	// step before the server receives them (a test's hostile traffic).
	inject func(msgs []udp.Message) []udp.Message
	// received adds up the wall time the server spent receiving the
	// clients' datagrams, the part of a timed step before its tick.
	received time.Duration
}

// rigClient is one player's client session.
type rigClient struct {
	hs    *session.Initiator // until accepted
	sess  *session.Session
	addr  netip.AddrPort
	in    [][]byte // the server's datagrams of this tick
	out   [][]byte // this client's datagrams
	spare [][]byte
	buf   []byte
	input []byte
	frame []byte
	flood bool
	// joined counts the player-joined notices received.
	joined int
	// mute: the client sends nothing (so acknowledges nothing).
	mute bool
}

func (c *rigClient) Message(*session.Message, *session.PacketInfo) {}
func (c *rigClient) Frame(t proto.FrameType, f []byte, _ *session.PacketInfo) error {
	if t == proto.FrameControl {
		if ctl, _, err := proto.ParseControlFrame(f); err == nil && ctl.Code == proto.ControlPlayerJoined {
			c.joined++
		}
	}
	return nil
}
func (c *rigClient) Delivered(uint64) {}
func (c *rigClient) Lost(uint64)      {}
func (c *rigClient) Buffer() []byte   { return c.buf[:0] }
func (c *rigClient) Emit(b []byte)    { c.out = append(c.out, b) }

func (c *rigClient) AppendFrames(b []byte, room int, _ *session.PacketInfo) []byte {
	b = append(b, c.frame...)
	if c.flood {
		req := proto.ResyncRequestFrame{Reason: proto.ResyncPatchError}
		for range 63 {
			b, _ = req.Append(b)
		}
	}
	return b
}

// noConn is a socket that is never read and takes every write.
type noConn struct{}

func (noConn) ReadBatch([]udp.Message) (int, error)    { select {} }
func (noConn) WriteBatch(m []udp.Message) (int, error) { return len(m), nil }
func (noConn) LocalAddr() netip.AddrPort               { return netip.MustParseAddrPort("127.0.0.1:7777") }
func (noConn) Close() error                            { return nil }

// rigConn hands every datagram the server writes to its client (a copy,
// in buffers reused from tick to tick).
type rigConn struct {
	noConn
	clients map[netip.AddrPort]*rigClient
	// record, when set, keeps what each client opened of the session
	// packets it received: header (but the connection id) and plaintext.
	// The sealed bytes and the ids differ from run to run: every
	// handshake draws fresh keys, every server a random first id.
	record map[netip.AddrPort][][]byte
	// bytes counts the bytes of every datagram written.
	bytes uint64
}

func (r *rigConn) WriteBatch(m []udp.Message) (int, error) {
	for _, msg := range m {
		r.bytes += uint64(len(msg.Buf))
		if c := r.clients[msg.Addr]; c != nil {
			var b []byte
			if n := len(c.spare); n > 0 {
				b, c.spare = c.spare[n-1][:0], c.spare[:n-1]
			}
			c.in = append(c.in, append(b, msg.Buf...))
		}
	}
	return len(m), nil
}

func newTickRig(t testing.TB, n, workers int) *tickRig { return newPacedTickRig(t, n, workers, 1) }

// newRecordedTickRig is newTickRig whose host records its game with
// record (Config.Record).
func newRecordedTickRig(t testing.TB, n int, record func(uint64) (*replay.Writer, error)) *tickRig {
	return newTickRigConfig(t, n, 0, 1, func(c *Config) { c.Record = record })
}

// rigGameID is the game the rig's tokens name.
const rigGameID = 1

// newPacedTickRig is newTickRig with Config.SnapshotInterval interval
// and the clients sending every interval ticks too.
func newPacedTickRig(t testing.TB, n, workers, interval int) *tickRig {
	return newTickRigConfig(t, n, workers, interval, nil)
}

// newTickRigConfig is newPacedTickRig with the host's Config changed by
// change, if set.
func newTickRigConfig(t testing.TB, n, workers, interval int, change func(*Config)) *tickRig {
	key, _ := tickwire.GenerateKey()
	s, err := tickwire.NewServer(key, tickwire.Config{MaxConnections: n + 1, Workers: workers,
		RejoinGrace: -1, // rejoin credentials are random: runs compare their packets
		Logger:      slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rc := &rigConn{clients: map[netip.AddrPort]*rigClient{}}
	now := time.Now()
	if err := s.Drive(rc, now); err != nil {
		t.Fatal(err)
	}
	world, sched := arena.Interest()
	cfg := Config{
		Interest:         world,
		Scheduler:        sched,
		View:             arena.View,
		SnapshotInterval: interval,
	}
	if change != nil {
		change(&cfg)
	}
	host, err := NewHost(s, func(uint64) (Game, error) { return arena.NewGame(arena.DefaultNPCs), nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(host)
	s.SeedConnIDs(1) // runs that compare their packets
	r := &tickRig{s: s, key: key, host: host, conn: rc, n: n, joins: 20, now: now, inputEvery: interval}
	return r
}

// connect connects the next players, up to r.joins (by default 20 a
// tick: a burst of joins within a second, each announced reliably to
// everyone), through the whole handshake: request, challenge, response,
// accept.
func (r *tickRig) connect(t testing.TB) {
	first := len(r.clients)
	for range min(r.joins, r.n-len(r.clients)) {
		i := len(r.clients)
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10000+i))
		tok, err := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: rigGameID, ClientID: uint64(i + 1), Players: []uint16{uint16(i + 1)},
			ServerAddrs: []string{"127.0.0.1:7777"}}, r.now)
		if err != nil {
			t.Fatal(err)
		}
		req := tok.Request()
		rc := &rigClient{addr: addr, buf: make([]byte, 0, proto.MaxPacketSizeLimit), flood: r.flood && i == 0}
		if rc.hs, err = session.NewInitiator(&req, &tok.ClientKey, &tok.ServerKey); err != nil {
			t.Fatal(err)
		}
		r.clients = append(r.clients, rc)
		r.conn.clients[addr] = rc
	}
	joining := r.clients[first:]
	if len(joining) == 0 {
		return
	}
	for range 2 { // the request, then the response
		r.batch.Msgs = r.batch.Msgs[:0]
		for _, c := range joining {
			pkt := c.hs.Packet()
			r.batch.Msgs = append(r.batch.Msgs, udp.Message{Buf: pkt, N: len(pkt), Addr: c.addr})
		}
		r.batch.N, r.batch.At = len(r.batch.Msgs), r.now
		if err := r.s.Receive(&r.batch); err != nil {
			t.Fatal(err)
		}
		for _, c := range joining {
			for _, pkt := range c.in {
				switch {
				case !c.hs.Challenged():
					if err := c.hs.Challenge(pkt); err != nil {
						t.Fatalf("client %v: challenge: %v", c.addr, err)
					}
				case c.sess == nil:
					w, drop, ok := c.hs.Accept(pkt, r.now, session.Config{Handler: c})
					if !ok {
						t.Fatalf("client %v: accept dropped: %v", c.addr, drop)
					}
					c.sess = w.Session
				}
			}
			c.spare = append(c.spare, c.in...)
			c.in = c.in[:0]
		}
	}
	for _, c := range joining {
		if c.sess == nil {
			t.Fatalf("client %v was not accepted", c.addr)
		}
		c.hs = nil
	}
}

// warm connects every player, runs ticks until each has had its join
// snapshot and acknowledged all reliable data, then 120 more: the steady
// state.
func (r *tickRig) warm(t testing.TB) {
	for n := 0; n < 2000 && !r.joined(); n++ {
		r.step(t, nil)
	}
	if !r.joined() {
		t.Fatalf("after 2,000 ticks, %d of %d players had their join snapshot", r.host.Stats().FullSnapshots, r.n)
	}
	for range 120 {
		r.step(t, nil)
	}
}

func (r *tickRig) joined() bool {
	if len(r.clients) < r.n || r.host.Stats().FullSnapshots < uint64(r.n) {
		return false
	}
	queued := false
	r.s.Each(func(c *tickwire.Conn) { queued = queued || c.ReliableQueued() != 0 })
	return !queued
}

// rigTimer is the part of testing.B the rig uses to leave the clients'
// work out of the measurement (nil outside benchmarks).
type rigTimer interface {
	StopTimer()
	StartTimer()
}

// cpuTimer is a benchmark's timer that also adds up the process's CPU
// time while it runs: on a machine shared with other work the CPU time
// per tick is steadier than the wall time, and it is what the tick costs
// the cores it has.
type cpuTimer struct {
	b     *testing.B
	cpu   time.Duration
	since time.Duration
}

func newCPUTimer(b *testing.B) *cpuTimer {
	b.ResetTimer()
	return &cpuTimer{b: b, since: processCPU()}
}

func (c *cpuTimer) StopTimer() {
	c.cpu += processCPU() - c.since
	c.b.StopTimer()
}

func (c *cpuTimer) StartTimer() {
	c.b.StartTimer()
	c.since = processCPU()
}

// report adds the CPU time per tick to the benchmark's results.
func (c *cpuTimer) report() {
	c.b.ReportMetric(float64(c.cpu.Nanoseconds())/1e6/float64(c.b.N), "cpu-ms/op")
}

// step runs one server tick: every client sends its packet (input and
// acks), the server receives them, ticks and writes its packets, and
// every client receives them. With a timer, only the server is timed.
func (r *tickRig) step(t testing.TB, timer rigTimer) {
	if timer != nil {
		timer.StopTimer()
	}
	r.connect(t)
	r.now = r.now.Add(time.Second / 60)
	r.tick++
	serverTick := r.s.Tick()
	for i, c := range r.clients {
		in := arena.Input{MoveX: int8(r.tick*7 + uint32(i)), MoveY: int8(r.tick*3 - uint32(i)), Aim: uint16(r.tick * 300)}
		if r.fire {
			switch (r.tick*2654435761 + uint32(i)*40503) >> 8 % 40 {
			case 0:
				in.Buttons = arena.FireRay
			case 1:
				in.Buttons = arena.FireProjectile
			}
		}
		every := max(r.inputEvery, 1)
		c.input = c.input[:0]
		for range every {
			c.input = arena.AppendInput(c.input, in)
		}
		f := proto.InputFrame{Player: uint16(i + 1), Tick: serverTick + 2, Count: uint8(every), Size: arena.InputSize, Data: c.input}
		c.frame, _ = f.Append(c.frame[:0])
		c.out = c.out[:0]
		if c.mute {
			continue
		}
		mode := session.SendAlways
		if (r.tick+uint32(i))%uint32(every) != 0 {
			mode = session.SendHeld
		}
		c.sess.Tick(r.now, session.Ticks{Tick: f.Tick, InterpFrom: f.Tick - 6, InterpTo: f.Tick - 5}, mode, c)
	}
	if timer != nil {
		timer.StartTimer()
	}
	r.batch.Msgs = r.batch.Msgs[:0]
	for _, c := range r.clients {
		for _, pkt := range c.out {
			r.batch.Msgs = append(r.batch.Msgs, udp.Message{Buf: pkt, N: len(pkt), Addr: c.addr})
		}
	}
	if r.inject != nil {
		r.batch.Msgs, r.inject = r.inject(r.batch.Msgs), nil
	}
	r.batch.N, r.batch.At = len(r.batch.Msgs), r.now
	start := time.Now()
	if err := r.s.Receive(&r.batch); err != nil {
		t.Fatal(err)
	}
	if timer != nil {
		r.received += time.Since(start)
	}
	if err := r.s.Step(r.now); err != nil {
		t.Fatal(err)
	}
	if timer != nil {
		timer.StopTimer()
	}
	for _, c := range r.clients {
		for _, pkt := range c.in {
			h, _, err := proto.ParseHeader(pkt)
			if err != nil {
				t.Fatal(err)
			}
			pn, payload, drop, ok := c.sess.Open(pkt, &h)
			if !ok {
				t.Fatalf("client %v dropped a server packet: %v", c.addr, drop)
			}
			if r.conn.record != nil {
				// The header without the connection id (random per
				// server), and the plaintext.
				hh := h
				hh.ConnID = 0
				rec, _ := hh.Append(nil)
				r.conn.record[c.addr] = append(r.conn.record[c.addr], append(rec, payload...))
			}
			if h.Type == proto.PacketData || h.Type == proto.PacketKeepAlive {
				if err := c.sess.Receive(r.now, &h, pn, len(pkt), payload); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.spare = append(c.spare, c.in...)
		c.in = c.in[:0]
	}
	if timer != nil {
		timer.StartTimer()
	}
}

// BenchmarkServerTick is one full server tick of the arena (300 NPCs,
// 64 m view radius and its distance bands) for n players: inputs in,
// game step, per-player interest scheduling and XOR+RLE delta encoding,
// sealing every packet. B/player is what the server sends each player
// per tick, headers and tags included.
func BenchmarkServerTick(b *testing.B) {
	for _, n := range []int{16, 64, 256, 1000} {
		b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
			r := newTickRig(b, n, 0)
			r.warm(b)
			b.ReportAllocs()
			sent := r.conn.bytes
			codes := r.host.Stats().PatchCodes
			stop := profileSteady(b)
			timer := newCPUTimer(b)
			for range b.N {
				r.step(b, timer)
			}
			timer.report()
			stop()
			reportCodes(b, r.host, codes)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/player")
			b.ReportMetric(float64(r.conn.bytes-sent)/float64(b.N)/float64(n), "B/player")
		})
	}
}

// BenchmarkServerTickRecorded is BenchmarkServerTick's arena for 8
// players firing as tickwire-bot's do, without and with the game
// recorded for tickwire-replay (Config.Record, package replay): what
// recording costs a tick. cpu-ms/op is the whole process's CPU per
// tick, the Writer's goroutine (compressing and writing) included;
// rec-KB/min is the recording's size per minute of game (at 60 Hz).
func BenchmarkServerTickRecorded(b *testing.B) {
	for _, record := range []bool{false, true} {
		b.Run(fmt.Sprintf("record=%v", record), func(b *testing.B) {
			var w *replay.Writer
			var rec func(uint64) (*replay.Writer, error)
			if record {
				rec = func(uint64) (*replay.Writer, error) {
					var err error
					w, err = replay.Create(filepath.Join(b.TempDir(), "bench.replay"), replay.Config{Game: "arena"})
					return w, err
				}
			}
			r := newRecordedTickRig(b, 8, rec)
			r.fire = true
			r.warm(b)
			b.ReportAllocs()
			timer := newCPUTimer(b)
			for range b.N {
				r.step(b, timer)
			}
			timer.report()
			if w != nil {
				b.StopTimer()
				ticks := float64(r.host.Engine(rigGameID).Tick()) // the game's, all recorded
				r.host.end(r.host.games[rigGameID])               // closes the recording
				b.ReportMetric(float64(w.Stats().Bytes)/ticks*60*60/1000, "rec-KB/min")
			}
		})
	}
}

// BenchmarkServerTickWorkers is BenchmarkServerTick's 1,000 players
// built by one worker and by two (Config.Workers): the speed-up of
// building the connections' packets on both cores. recv-ms/op is the
// part of the tick spent receiving the clients' datagrams (with two
// workers, they open them together first: backlog.go).
func BenchmarkServerTickWorkers(b *testing.B) { benchWorkers(b, false, 1) }

// BenchmarkServerTickFire is BenchmarkServerTickWorkers with every player
// firing as tickwire-bot's do (tickRig.fire), as in the capacity run:
// some 340 projectiles besides the 1,300 avatars and NPCs, a new entity
// set every tick, and game events on the reliable channel (whose ARQ
// core, kcp-go, allocates per segment: allocs/op is not 0 here).
func BenchmarkServerTickFire(b *testing.B) { benchWorkers(b, true, 1) }

// BenchmarkServerTickPaced and BenchmarkServerTickFirePaced are
// BenchmarkServerTickWorkers and BenchmarkServerTickFire with snapshots
// every other tick (Config.SnapshotInterval 2: 30 Hz at the 60 Hz
// tick), each tick building half the connections' packets, and the
// clients sending every other tick, two inputs a packet
// (Client.SetInputInterval 2), as the capacity run's
// -snapshot-interval 2 -input-interval 2.
func BenchmarkServerTickPaced(b *testing.B)     { benchWorkers(b, false, 2) }
func BenchmarkServerTickFirePaced(b *testing.B) { benchWorkers(b, true, 2) }

func benchWorkers(b *testing.B, fire bool, interval int) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			r := newPacedTickRig(b, 1000, w, interval)
			r.fire = fire
			r.warm(b)
			b.ReportAllocs()
			codes := r.host.Stats().PatchCodes
			stop := profileSteady(b)
			timer := newCPUTimer(b)
			for range b.N {
				r.step(b, timer)
			}
			timer.report()
			stop()
			reportCodes(b, r.host, codes)
			b.ReportMetric(float64(r.received.Nanoseconds())/1e6/float64(b.N), "recv-ms/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/player")
		})
	}
}

// reportCodes adds to the benchmark's results the share of the patch
// codes the timed ticks' packets read from the ring's cache (shared by
// the clients acknowledged at the same revision) rather than encoded
// (HostStats.PatchCodes since before).
func reportCodes(b *testing.B, h *Host, before deltacomp.CodeStats) {
	st := h.Stats().PatchCodes
	d := deltacomp.CodeStats{Shared: st.Shared - before.Shared, Encoded: st.Encoded - before.Encoded, Private: st.Private - before.Private}
	b.ReportMetric(100*d.HitRate(), "code-hit-%")
}

// profileSteady writes a CPU profile of the steady state (after the
// joins of warm, which a -cpuprofile of the whole benchmark mostly
// shows) to the file $TICKWIRE_TICK_PROFILE names, when it is set; the
// name gets the benchmark's name (slashes and '=' as '-') before its
// extension. The clients' part of each tick is in it too: focus on
// Server.tick, Server.receiveDatagram, outQueue.flush and, with two
// workers, builder.start.func1 (the second worker's goroutine).
func profileSteady(b *testing.B) (stop func()) {
	path := os.Getenv("TICKWIRE_TICK_PROFILE")
	if path == "" {
		return func() {}
	}
	ext := filepath.Ext(path)
	name := strings.NewReplacer("/", "-", "=", "-").Replace(b.Name())
	f, err := os.Create(strings.TrimSuffix(path, ext) + "-" + name + ext)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
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
				r.step(b, nil)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.step(b, b)
			}
			b.ReportMetric(float64(r.host.Stats().FullSnapshots), "fulls")
		})
	}
}

// TestJoinsWaitForAFullQueue: a client's reliable queue is full (here
// of messages it does not acknowledge for a while; in real life, of a
// burst of joins each announced to everyone) while seven more players
// join. Their join notices wait in
// the connection's backlog and follow as the queue drains, in order, so
// the client hears of every player; nobody is disconnected.
func TestJoinsWaitForAFullQueue(t *testing.T) {
	const n = 8
	r := newTickRig(t, n, 1)
	r.joins = 1
	r.step(t, nil) // the first player joins
	c := r.s.Conn(r.clients[0].sess.ID())
	big := proto.MessageFrame{Channel: 1, Data: make([]byte, 100<<10)}
	frame, _ := big.Append(nil)
	filled := 0
	for c.SendFrame(frame) == nil {
		filled++
	}
	small := proto.MessageFrame{Channel: 1, Data: []byte{1}}
	frame, _ = small.Append(nil)
	for c.SendFrame(frame) == nil {
		filled++
	}
	if filled == 0 {
		t.Fatal("the queue took no message")
	}
	// The client acknowledges nothing while the others join.
	r.clients[0].mute = true
	for len(r.clients) < n || r.host.Stats().Joins < n {
		r.step(t, nil)
	}
	r.clients[0].mute = false
	r.warm(t)
	st := r.host.Stats()
	if st.FramesHeld == 0 {
		t.Fatal("no frame waited in a backlog: the test proves nothing")
	}
	for k, cl := range r.clients {
		if cl.joined != n-k && !(k == 0 && cl.joined == n) {
			t.Fatalf("client %d heard of %d joins, want %d (%d frames held)", k, cl.joined, n-k, st.FramesHeld)
		}
	}
	if st.BacklogKicks != 0 || r.s.Stats().Connections != n {
		t.Fatalf("%d connections of %d left, %d kicked", r.s.Stats().Connections, n, st.BacklogKicks)
	}
}

// TestBacklogOverflowDisconnects: a client that acknowledges nothing while
// game frames keep coming is disconnected ("too slow") at the next tick
// once its backlog passes its bound, and the others play on.
func TestBacklogOverflowDisconnects(t *testing.T) {
	r := newTickRig(t, 2, 1)
	r.step(t, nil)
	r.clients[0].mute = true
	c := r.s.Conn(r.clients[0].sess.ID())
	gc := r.host.conns[c]
	big := proto.MessageFrame{Channel: 1, Data: make([]byte, 100<<10)}
	frame, _ := big.Append(nil)
	for range 2 * (1<<20 + maxBacklog) / len(frame) {
		gc.sendFrame(frame)
	}
	if !gc.overflow {
		t.Fatalf("backlog of %d bytes did not overflow", gc.backlogBytes)
	}
	r.step(t, nil)
	if st := r.host.Stats(); st.BacklogKicks != 1 || !c.Closed() || r.s.Stats().Disconnects[proto.DisconnectTooSlow] != 1 {
		t.Fatalf("kicks %d, closed %v, disconnects %v", st.BacklogKicks, c.Closed(), r.s.Stats().Disconnects)
	}
	if r.s.Stats().Connections != 1 {
		t.Fatalf("%d connections left, want the other one", r.s.Stats().Connections)
	}
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
			r.conn.record = map[netip.AddrPort][][]byte{}
			for range 120 {
				r.stepVirtual(t)
			}
			if got := r.s.Stats().Workers; workers > 1 && got != workers {
				t.Errorf("%d workers ran, want %d", got, workers)
			}
			sent = r.conn.record
			r.conn.record = nil
			r.s.Close()
		})
		return sent
	}
	one, three := run(1), run(3)
	if len(one) != 100 {
		t.Fatalf("packets for %d players, want 100", len(one))
	}
	sameSent(t, one, three, "one worker", "three")
}

// stepVirtual steps the rig one tick of a synctest bubble's clock (the
// reliable channel's timestamps come from time.Now).
func (r *tickRig) stepVirtual(t testing.TB) {
	time.Sleep(time.Second / 60)
	r.now = time.Now().Add(-time.Second / 60) // step adds the tick
	r.step(t, nil)
}

// sameSent fails t unless two runs sent every player the same packets.
func sameSent(t *testing.T, a, b map[netip.AddrPort][][]byte, aName, bName string) {
	t.Helper()
	for addr, want := range a {
		got := b[addr]
		if len(got) != len(want) {
			t.Fatalf("%v: %d packets with %s, %d with %s", addr, len(want), aName, len(got), bName)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				d := 0
				for d < min(len(got[i]), len(want[i])) && got[i][d] == want[i][d] {
					d++
				}
				t.Fatalf("%v: packet %d differs between %s and %s (lengths %d, %d; first difference at byte %d)", addr, i, aName, bName, len(want[i]), len(got[i]), d)
			}
		}
	}
}

// TestBacklogOpenedOnWorkers: the workers open a backlog of datagrams
// (backlog.go) with the same outcome as the loop receiving them one by
// one: with 100 players built by one worker and by two, a tick whose
// datagrams hold a replayed copy of one packet, an altered copy of
// another, and a disconnect followed by that client's data packet drops
// the same three packets for the same reasons, and every player sees
// the same bytes.
func TestBacklogOpenedOnWorkers(t *testing.T) {
	type result struct {
		stats tickwire.ServerStats
		sent  map[netip.AddrPort][][]byte
		conns int
		ahead bool
	}
	run := func(workers int) (res result) {
		synctest.Test(t, func(t *testing.T) {
			r := newTickRig(t, 100, workers)
			r.conn.record = map[netip.AddrPort][][]byte{}
			for range 60 {
				r.stepVirtual(t)
			}
			quit := r.clients[2]
			r.inject = func(msgs []udp.Message) []udp.Message {
				replay := udp.Message{Buf: bytes.Clone(msgs[0].Buf), N: msgs[0].N, Addr: msgs[0].Addr}
				altered := udp.Message{Buf: bytes.Clone(msgs[1].Buf), N: msgs[1].N, Addr: msgs[1].Addr}
				altered.Buf[altered.N-1] ^= 1
				bye := quit.sess.AppendControl(nil, r.now, proto.PacketDisconnect, session.Ticks{}, []byte{byte(proto.DisconnectClosed)})
				out := []udp.Message{altered}
				for _, m := range msgs {
					if m.Addr == quit.addr && bye != nil { // its disconnect, then its packet
						out = append(out, udp.Message{Buf: bye, N: len(bye), Addr: quit.addr})
						bye = nil
					}
					out = append(out, m)
				}
				return append(out, replay)
			}
			before := r.s.Stats()
			r.stepVirtual(t)
			res.ahead = r.s.Stats().OpenedAhead-before.OpenedAhead >= 100
			quit.mute = true // it left
			for range 30 {
				r.stepVirtual(t)
			}
			res.stats, res.sent, res.conns = r.s.Stats(), r.conn.record, r.s.Stats().Connections
			r.conn.record = nil
			r.s.Close()
			for _, d := range []tickwire.DropReason{tickwire.DropReplay, tickwire.DropAuth, tickwire.DropUnknownConn} {
				if got := res.stats.Dropped[d] - before.Dropped[d]; got != 1 {
					t.Errorf("%d workers: %d dropped for %v, want 1", workers, got, d)
				}
			}
		})
		return res
	}
	one, two := run(1), run(2)
	if one.ahead || !two.ahead {
		t.Fatalf("opened ahead with one worker %v, with two %v; want false, true", one.ahead, two.ahead)
	}
	if one.conns != 99 || two.conns != 99 {
		t.Fatalf("connections left %d and %d, want 99", one.conns, two.conns)
	}
	if one.stats.Dropped != two.stats.Dropped || one.stats.PacketsIn != two.stats.PacketsIn {
		t.Fatalf("one worker: in %d dropped %v; two: in %d dropped %v", one.stats.PacketsIn, one.stats.Dropped, two.stats.PacketsIn, two.stats.Dropped)
	}
	sameSent(t, one.sent, two.sent, "one worker", "two")
}

// TestInputsMissingCounted: HostStats.InputsMissing counts the ticks
// a player's game ran without its input (a client gone quiet), only
// those, and keeps them when the game ends.
func TestInputsMissingCounted(t *testing.T) {
	r := newTickRig(t, 2, 1)
	r.warm(t)
	before := r.host.Stats().InputsMissing
	for range 60 {
		r.step(t, nil)
	}
	if got := r.host.Stats().InputsMissing; got != before {
		t.Fatalf("%d inputs missing in 60 ticks of two players sending theirs", got-before)
	}
	r.clients[1].mute = true
	for range 60 {
		r.step(t, nil)
	}
	// The input it sent last, ahead of its tick, covers the first (59
	// here).
	missing := r.host.Stats().InputsMissing - before
	if missing < 55 || missing > 60 {
		t.Fatalf("%d inputs missing in the 60 ticks one player sent none, want 55..60", missing)
	}
	r.s.Each(func(c *tickwire.Conn) { c.Close(proto.DisconnectClosed) })
	if st := r.host.Stats(); st.Games != 0 || st.InputsMissing != before+missing {
		t.Fatalf("after the game ended: %d games, %d inputs missing, want 0 and %d", st.Games, st.InputsMissing, before+missing)
	}
}

// TestPatchCodesShared: in the steady state of 64 players (the arena,
// clients acknowledging every packet), the connections acknowledged at
// the same revision share each entity's patch code: most codes are read
// from the ring's cache (HostStats.PatchCodes), each encoded once per
// entity, baseline and tick; with one build worker none is encoded
// twice. A whole tick, the clients' part included, allocates nothing.
func TestPatchCodesShared(t *testing.T) {
	r := newTickRig(t, 64, 1)
	r.warm(t)
	before := r.host.Stats().PatchCodes
	a := testing.AllocsPerRun(60, func() { r.step(t, nil) })
	st := r.host.Stats().PatchCodes
	d := deltacomp.CodeStats{Shared: st.Shared - before.Shared, Encoded: st.Encoded - before.Encoded, Private: st.Private - before.Private}
	t.Logf("61 ticks of 64 players: codes %+v, hit rate %.1f %%", d, 100*d.HitRate())
	if d.Encoded == 0 || d.Private != 0 || d.HitRate() < 0.6 {
		t.Fatalf("codes %+v: want most shared, none private (one worker)", d)
	}
	if a != 0 {
		t.Fatalf("%v allocations per tick", a)
	}
}
