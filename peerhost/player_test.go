package peerhost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/migrate"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
	"github.com/tickwire/tickwire/udp/udptest"
)

// killSwitch cuts a process off the network at once, as SIGKILL does:
// once set, its sockets send and receive nothing, and say nothing.
// stall, set, stops its host's loop for that long once (SIGSTOP, then
// SIGCONT).
// quit, set, says the player left the game (Close) with its sockets
// working.
type killSwitch struct {
	dead  atomic.Bool
	quit  atomic.Bool
	stall atomic.Int64
}

// out reports whether the player no longer plays: killed, or quit.
func (k *killSwitch) out() bool { return k.dead.Load() || k.quit.Load() }

// stallHandler is a host's handler that echoes every message back on
// the players' streams, and whose tick stops the loop when its process is
// stalled.
type stallHandler struct {
	k    *killSwitch
	peer **Player
}

func (stallHandler) Connected(*tickwire.Conn)                            {}
func (stallHandler) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}
func (h stallHandler) Message(c *tickwire.Conn, m *tickwire.Message) {
	if err := (*h.peer).Reply(c, m.Channel, m.Data); err != nil {
		panic(err)
	}
}
func (h stallHandler) Tick(time.Time, uint32) {
	if d := h.k.stall.Swap(0); d > 0 {
		time.Sleep(time.Duration(d))
	}
}

type killableConn struct {
	net.PacketConn
	k *killSwitch
}

func (c killableConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.k.dead.Load() {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}

func (c killableConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.PacketConn.ReadFrom(b)
		if err != nil || !c.k.dead.Load() {
			return n, a, err
		}
	}
}

// impaired wraps pc in a netem impairment of its egress by spec, unless
// spec is zero.
func impaired(pc net.PacketConn, spec netem.Spec, seed uint64) net.PacketConn {
	if spec.IsZero() {
		return pc
	}
	return netem.Wrap(pc, netem.Config{Egress: spec, Seed: seed})
}

// peerRig is a peer-hosted arena game on the in-memory network: player
// slot i runs its host socket at 10.0.0.i:7000 and plays from 10.0.1.i.
type peerRig struct {
	t     *testing.T
	net   *udptest.Network
	key   tickwire.Key
	peers []*Player
	games []*game.Client
	kills []*killSwitch

	mu      sync.Mutex
	echoes  [][]uint32 // per player, the numbers of the echoes received
	sent    []uint32
	events  [][]Event
	missing map[uint16]int // inputs of each player a host ran without, after a migration
	resumed map[uint64]uint32
	// warnings counts the players' log records at Warn and above, by
	// message.
	warnings warnCounter
	// onStep, if set, hears every step of every host (slot: the host's),
	// under mu.
	onStep func(slot uint16, eng *sim.Server)
	// successor, if set, is the Config.Successor of player self, under
	// mu; it may return no address, as the rig's players do without it.
	successor func(self, slot uint16, addr string) (tickwire.Dialer, []string)
	// disconnects counts each player's game's EventDisconnected;
	// gameEvents every kind of event each player's game heard, by the
	// player it names (0: none).
	disconnects []atomic.Int32
	gameEvents  []map[uint16]*[game.NumEventKinds]int
}

// gameEventCounter is a game handler that counts a player's game
// events: EventDisconnected, and every kind by the player it names.
type gameEventCounter struct {
	r *peerRig
	i int
}

func (c gameEventCounter) GameEvent(_ *sim.Client, e *game.Event) {
	if e.Kind == game.EventDisconnected {
		c.r.disconnects[c.i].Add(1)
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	n := c.r.gameEvents[c.i][e.Player]
	if n == nil {
		n = new([game.NumEventKinds]int)
		c.r.gameEvents[c.i][e.Player] = n
	}
	n[e.Kind]++
}

// heard is how many events of kind naming player the game of peer i
// heard.
func (r *peerRig) heard(i int, player uint16, kind game.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.gameEvents[i][player]; n != nil {
		return n[kind]
	}
	return 0
}

// warnCounter is a slog handler that counts records at Warn and above
// by message.
type warnCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnCounter) WithGroup(string) slog.Handler                { return w }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[r.Message]++
	return nil
}

func (w *warnCounter) count(msg string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[msg]
}

const peerGame = 0x5eed

func newPeerRig(t *testing.T, n int) *peerRig { return newPeerRigHosts(t, n, n) }

// newPeerRigHosts is newPeerRig where only the first hosts players offer
// to host.
func newPeerRigHosts(t *testing.T, n, hosts int) *peerRig {
	return newPeerRigLinks(t, n, hosts, 15*time.Millisecond, netem.Spec{}, 0)
}

// newPeerRigLinks is newPeerRigHosts on links of latency, every socket's
// egress impaired by spec (seeded by its address), its players' promoted
// hosts holding their tick for hold (Config.Hold).
func newPeerRigLinks(t *testing.T, n, hosts int, latency time.Duration, spec netem.Spec, hold time.Duration) *peerRig {
	r := &peerRig{t: t, net: udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: latency}}),
		events: make([][]Event, n), disconnects: make([]atomic.Int32, n), gameEvents: make([]map[uint16]*[game.NumEventKinds]int, n), missing: map[uint16]int{}, echoes: make([][]uint32, n), sent: make([]uint32, n)}
	r.key, _ = tickwire.GenerateKey()
	candidates := map[uint16]string{}
	for i := 1; i <= hosts; i++ {
		candidates[uint16(i)] = fmt.Sprintf("10.0.0.%d:7000", i)
	}
	for i := 1; i <= n; i++ {
		k := &killSwitch{}
		var hostConn udp.BatchConn
		if addr := candidates[uint16(i)]; addr != "" {
			hc, err := r.net.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			hostConn = udp.FromPacketConn(impaired(killableConn{hc, k}, spec, uint64(i)))
		}
		gc, err := game.NewClient(arena.NewGame(0), randomInputs(uint64(i)), sim.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		r.gameEvents[i-1] = map[uint16]*[game.NumEventKinds]int{}
		gc.Handle(gameEventCounter{r, i - 1})
		var rec sim.StepRecord
		slot := uint16(i)
		self := new(*Player)
		p, err := NewPlayer(Config{
			Logger:   slog.New(&r.warnings),
			Handler:  echoRecorder{r, int(slot) - 1},
			Game:     gc,
			Factory:  func(uint64) (game.Game, error) { return arena.NewGame(8), nil },
			HostConn: hostConn,
			HostAddr: candidates[slot],
			Hold:     hold,
			Host: game.Config{Handler: stallHandler{k, self}, Stepped: func(_ uint64, eng *sim.Server) {
				// A host that runs a game it adopted counts the inputs
				// it had to run without, for the first second.
				r.mu.Lock()
				defer r.mu.Unlock()
				if r.onStep != nil && !r.kills[slot-1].out() {
					r.onStep(slot, eng)
				}
				if r.resumed == nil || r.kills[slot-1].out() {
					return
				}
				from, ok := r.resumed[uint64(slot)]
				if !ok {
					from, r.resumed[uint64(slot)] = eng.Tick(), eng.Tick()
				}
				if int32(eng.Tick()-from) > 60 {
					return
				}
				eng.Record(&rec)
				for _, in := range rec.Inputs {
					if in.Missing && !r.kills[in.Player-1].out() {
						r.missing[in.Player]++
					}
				}
			}},
			Dialer: peerDialer(t, r.net, slot, k, spec),
			Successor: func(to uint16, addr string) (tickwire.Dialer, []string) {
				r.mu.Lock()
				route := r.successor
				r.mu.Unlock()
				if route == nil {
					return tickwire.Dialer{}, nil
				}
				return route(slot, to, addr)
			},
			OnEvent: func(e Event) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.events[slot-1] = append(r.events[slot-1], e)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		*self = p
		r.peers, r.games, r.kills = append(r.peers, p), append(r.games, gc), append(r.kills, k)
	}
	hostAndJoin(t, r.key, r.peers, candidates)
	return r
}

// peerDialer is the Dialer of slot's sessions: each from a port of its
// own at 10.0.1.slot, cut off with k.
func peerDialer(t *testing.T, n *udptest.Network, slot uint16, k *killSwitch, spec netem.Spec) func() tickwire.Dialer {
	port := 5000
	return func() tickwire.Dialer {
		port++
		pc, err := n.Listen(fmt.Sprintf("10.0.1.%d:%d", slot, port))
		if err != nil {
			t.Error(err)
		}
		return tickwire.Dialer{Conn: udp.FromPacketConn(impaired(killableConn{pc, k}, spec, uint64(slot)<<16|uint64(port)))}
	}
}

// hostAndJoin starts the game on the first peer's host socket and joins
// every peer to it: slot i (1..), client id 11×i.
func hostAndJoin(t *testing.T, key tickwire.Key, peers []*Player, candidates map[uint16]string) {
	t.Helper()
	if err := peers[0].Host(peerGame, key, 1, candidates, [proto.UserDataSize]byte{}); err != nil {
		t.Fatal(err)
	}
	for i, p := range peers {
		tok, err := tickwire.MintToken(key, tickwire.TokenParams{GameID: peerGame, ClientID: uint64(i+1) * 11, Players: []uint16{uint16(i + 1)},
			ServerAddrs: []string{candidates[1]}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.Join(ctx, tok); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}

// echoRecorder records the numbered echoes a peer receives.
type echoRecorder struct {
	r *peerRig
	i int
}

func (e echoRecorder) Message(_ *tickwire.Client, m *tickwire.Message) {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	e.r.echoes[e.i] = append(e.r.echoes[e.i], binary.LittleEndian.Uint32(m.Data))
}

func (echoRecorder) Disconnected(*tickwire.Client, proto.DisconnectReason) {}

// echoing starts echo; close the channel it returns to stop it.
func (r *peerRig) echoing() chan struct{} {
	stop := make(chan struct{})
	go r.echo(stop)
	return stop
}

// echo sends every live peer's next numbered message every 50 ms until
// stop is closed.
func (r *peerRig) echo(stop chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for i := range r.peers {
			if !r.kills[i].out() {
				r.sendEcho(i)
			}
		}
	}
}

// sendEcho sends peer i's next numbered message.
func (r *peerRig) sendEcho(i int) {
	r.mu.Lock()
	n := r.sent[i]
	r.sent[i]++
	r.mu.Unlock()
	if err := r.peers[i].Send(7, binary.LittleEndian.AppendUint32(nil, n)); err != nil {
		r.t.Errorf("peer %d: Send: %v", i+1, err)
	}
}

// checkEchoes waits until every live peer got back every message it
// sent, and checks each came back exactly once, in order.
func (r *peerRig) checkEchoes() {
	r.t.Helper()
	missing := func() (who []string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range r.peers {
			if e := r.echoes[i]; !r.kills[i].out() && len(e) < int(r.sent[i]) {
				who = append(who, fmt.Sprintf("peer %d: %d of %d, the last %v", i+1, len(e), r.sent[i], e[max(0, len(e)-3):]))
			}
		}
		return who
	}
	deadline := time.Now().Add(5 * time.Second)
	for who := missing(); len(who) > 0; who = missing() {
		if time.Now().After(deadline) {
			for i := range r.peers {
				if !r.kills[i].out() {
					st := r.peers[i].Stats()
					r.t.Logf("slot %d: %+v; hosting %v: %+v", i+1, st.Stream, st.Hosting, st.Host)
				}
			}
			r.t.Fatalf("echoes not back within 5 s: %v", who)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.peers {
		if r.kills[i].out() {
			continue
		}
		for k, n := range r.echoes[i] {
			if n != uint32(k) {
				r.t.Fatalf("peer %d: echo %d is message %d (sent %d, received %d)", i+1, k, n, r.sent[i], len(r.echoes[i]))
			}
		}
		if len(r.echoes[i]) != int(r.sent[i]) {
			r.t.Fatalf("peer %d: %d echoes for %d messages", i+1, len(r.echoes[i]), r.sent[i])
		}
	}
}

// echoesFor exchanges echoes for d, then checks that every one came
// back exactly once, in order.
func (r *peerRig) echoesFor(d time.Duration) {
	r.t.Helper()
	stop := r.echoing()
	time.Sleep(d)
	close(stop)
	r.checkEchoes()
}

// waitResumedOn waits until peer host hosts and peer i's last event is
// its resume on it.
func (r *peerRig) waitResumedOn(i, host int, limit time.Duration) {
	r.t.Helper()
	r.waitOrDump(fmt.Sprintf("slot %d on slot %d's host", i+1, host+1), limit, func() bool {
		ev := r.eventsOf(i)
		return r.peers[host].Stats().Hosting && len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed && ev[len(ev)-1].Slot == uint16(host+1)
	})
}

// settledTrio is a rig of three peers on the first one's host that
// exchanged echoes for 3 s, every one back, and that host's server and
// host migration. Call it in a synctest bubble; close the rig.
func settledTrio(t *testing.T) (*peerRig, *tickwire.Server, *hostMigration) {
	r := newPeerRig(t, 3)
	r.echoesFor(3 * time.Second)
	srv, mig := r.hostOf(0)
	return r, srv, mig
}

// hostOf is the server and host migration of peer i, which hosts.
func (r *peerRig) hostOf(i int) (*tickwire.Server, *hostMigration) {
	p := r.peers[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.srv, p.mig
}

// close stops every peer.
func (r *peerRig) close() {
	for _, p := range r.peers {
		p.Close()
	}
}

// kill cuts peer i (0-based) off and stops it.
func (r *peerRig) kill(i int) {
	r.kills[i].dead.Store(true)
	go r.peers[i].Close()
}

func (r *peerRig) eventsOf(i int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[i])
}

// waitFor polls (virtual time) until cond holds, failing after limit.
func (r *peerRig) waitFor(what string, limit time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPeerHostMigration: in virtual time, three peers play the arena on
// the first one's host (15 ms links); the host is cut off without a word
// after 5 s. The standby (slot 2: the first candidate by client id)
// detects the silence, is elected by everyone alike, promotes its warm
// standby on its own socket and re-dials itself; slot 3 dials it with the
// token the old host gave it. Both play on, in sync, the new host having
// run none of their ticks without their inputs. Then the new host is cut
// off too, and the last player takes over alone: its game plays on at
// once; its own messages wait until its attempts to come back to slot
// 2 are over (it might have been the one cut off: RejoinTimeout), then
// its host runs them.
func TestPeerHostMigration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 3)
		defer r.close()
		stop := r.echoing()
		time.Sleep(5 * time.Second)
		if st := r.peers[1].Stats(); st.StandbyState == 0 || st.StandbySteps < 200 || st.StandbyErrs != 0 || st.Keys == 0 {
			t.Fatalf("standby peer: %+v", st)
		}
		if st := r.peers[2].Stats(); st.Tokens == 0 || st.Epoch != 1 {
			t.Fatalf("third peer: %+v", st)
		}
		hst := r.peers[0].Stats().Host
		t.Logf("host → standby: %d states (%d B), %d steps (%d B) in 5 s; standby lag %d ticks",
			hst.Feed.States, hst.Feed.StateBytes, hst.Feed.Steps, hst.Feed.StepBytes, hst.StandbyLag)
		before := r.games[2].Stats()

		r.mu.Lock()
		r.resumed = map[uint64]uint32{}
		r.mu.Unlock()
		killed := time.Now()
		r.kill(0)
		r.waitFor("slot 3 resumed on slot 2", 3*time.Second, func() bool {
			ev := r.eventsOf(2)
			return len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed
		})
		took := time.Since(killed)
		t.Logf("from the kill to the third player's resume: %v (virtual; detection %v)", took, migrate.DefaultTimeout)
		if took > 2*time.Second {
			t.Fatalf("resumed %v after the kill", took)
		}
		if st := r.peers[1].Stats(); st.Promotions != 1 || !st.Hosting || st.Epoch != 2 {
			t.Fatalf("promoted peer: %+v", st)
		}
		time.Sleep(3 * time.Second)
		after := r.games[2].Stats()
		be, ae := before.Engine, after.Engine
		t.Logf("third player across the migration: %d interpolation frames stalled (of %d), %d own-body corrections (largest %.1f units; total before %d), prediction capped %d frames, %d clock jumps",
			ae.InterpStalls-be.InterpStalls, ae.InterpFrames-be.InterpFrames, ae.Corrections-be.Corrections, ae.CorrectionMax, be.Corrections,
			ae.PredictionCapped-be.PredictionCapped, ae.ClockJumps-be.ClockJumps)
		if after.Desyncs != 0 || after.ChecksumsOK <= before.ChecksumsOK+1 || after.FullSnapshots != before.FullSnapshots+1 {
			t.Fatalf("third player after the migration: %+v (before %+v)", after, before)
		}
		if st := r.games[1].Stats(); st.Desyncs != 0 || st.Engine.Resumes != 1 {
			t.Fatalf("promoted player's game: %+v", st)
		}
		r.checkNoneMissing(1)
		// Its own player re-dials it like everyone else: no warning
		// while the roster lacks it.
		if n := r.warnings.count("host migration: no valid roster yet"); n != 0 {
			t.Fatalf("%d warnings of no valid roster across the migration", n)
		}

		// The second migration: slot 3 takes over alone.
		r.kill(1)
		r.waitFor("slot 3 promoted", 3*time.Second, func() bool { return r.peers[2].Stats().Promotions == 1 })
		promoted := time.Now()
		before = r.games[2].Stats()
		r.waitFor("slot 3's promotion holds", DefaultRejoinTimeout+time.Second, func() bool { return r.peers[2].Stats().Migrations == 2 })
		t.Logf("slot 3's promotion holds %v after it promoted", time.Since(promoted))
		close(stop)
		r.checkEchoes()
		t.Logf("streams: slot 3 %+v; its host %+v", r.peers[2].Stats().Stream, r.peers[2].Stats().Host.Stream)
		// Two migrations, and no disconnect in the game of the player
		// who saw both.
		if n := r.disconnects[2].Load(); n != 0 {
			t.Fatalf("slot 3's game saw %d disconnects across two host migrations", n)
		}
		after = r.games[2].Stats()
		if after.Desyncs != 0 || after.ChecksumsOK <= before.ChecksumsOK+1 || r.peers[2].Stats().Epoch != 3 {
			t.Fatalf("last player on its own host: %+v (before %+v), peer %+v", after, before, r.peers[2].Stats())
		}
	})
}

// checkNoneMissing checks that peer i, promoted, ran no tick of the
// players back from the migration without their inputs, as the rig
// counted them and as its host did.
func (r *peerRig) checkNoneMissing(i int) {
	r.t.Helper()
	r.mu.Lock()
	missing := maps2str(r.missing)
	r.mu.Unlock()
	var hst game.HostStats
	r.peers[i].srv.Do(func() { hst = r.peers[i].hostGame().Stats() })
	if missing != "" || hst.ResumedMissing != 0 {
		r.t.Fatalf("the new host ran without the inputs of %s (counted %d)", missing, hst.ResumedMissing)
	}
}

func maps2str(m map[uint16]int) string {
	s := ""
	for p, n := range m {
		if n > 0 {
			s += fmt.Sprintf("player %d (%d ticks) ", p, n)
		}
	}
	return s
}

// TestPeerStalledHostStepsDown: in virtual time, the host's loop stops
// for 3 s (a SIGSTOP) while its sockets stay open. The players elect and
// follow slot 2; when the old host runs again it learns it was replaced
// (its loop stalled past the players' timeout, and its standby left it
// for a successor) and steps down without sending another snapshot; its
// own player follows the successor like everyone else. One authority
// runs the game: slot 2's, with all three players.
func TestPeerStalledHostStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 3)
		defer r.close()
		stop := r.echoing()
		time.Sleep(4 * time.Second)
		old := r.peers[0]
		old.mu.Lock()
		srv, mig := old.srv, old.mig
		old.mu.Unlock()
		r.kills[0].stall.Store(int64(3 * time.Second)) // SIGSTOP … SIGCONT
		r.waitFor("the old host stepped down", 5*time.Second, func() bool {
			select {
			case <-srv.Done():
				return true
			default:
				return false
			}
		})
		st := mig.Stats() // the server's loop has ended
		if !st.SteppedDown {
			t.Fatalf("old host: %+v", st)
		}
		t.Logf("old host stepped down: %s", st.StepDownWhy)
		if ev := r.eventsOf(0); len(ev) == 0 || !hasEvent(ev, EventSteppedDown) {
			t.Fatalf("old host's events: %+v", ev)
		}
		r.waitFor("all three players on slot 2's host", 3*time.Second, func() bool {
			hs := r.peers[1].Stats()
			if hs.Promotions != 1 {
				return false
			}
			for _, g := range r.games {
				if g.Stats().Engine.Resumes != 1 {
					return false
				}
			}
			return true
		})
		before := make([]game.ClientStats, 3)
		for i, g := range r.games {
			before[i] = g.Stats()
		}
		time.Sleep(2 * time.Second)
		for i, g := range r.games {
			st := g.Stats()
			if st.Desyncs != 0 || st.ChecksumsOK <= before[i].ChecksumsOK {
				t.Fatalf("player %d after the step-down: %+v", i+1, st)
			}
		}
		if r.peers[0].Stats().Epoch != 2 || r.peers[2].Stats().Epoch != 2 {
			t.Fatalf("epochs: %d, %d", r.peers[0].Stats().Epoch, r.peers[2].Stats().Epoch)
		}
		close(stop)
		r.checkEchoes()
	})
}

// TestPeerNoHostLeft: when the host is lost and no other player offered
// to host, the players end with migrate.ErrNoHost (and say so to their
// handler and events) instead of a bare timeout, once they gave up
// coming back to the host (their own path might have been cut:
// DefaultRejoinTimeout), and their game hears its end once
// (EventDisconnected), though it was waiting to resume.
func TestPeerNoHostLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRigHosts(t, 2, 1)
		defer r.peers[1].Close()
		time.Sleep(2 * time.Second)
		r.kill(0)
		killed := time.Now()
		select {
		case <-r.peers[1].Done():
		case <-time.After(DefaultRejoinTimeout + 5*time.Second):
			t.Fatalf("the peer still runs %v after losing the only host", DefaultRejoinTimeout+5*time.Second)
		}
		if d := time.Since(killed); d < DefaultRejoinTimeout {
			t.Fatalf("the peer gave up %v after losing the only host, before its rejoin timeout", d)
		}
		if err := r.peers[1].Err(); !errors.Is(err, migrate.ErrNoHost) {
			t.Fatalf("Err() = %v, want migrate.ErrNoHost", err)
		}
		ev := r.eventsOf(1)
		if len(ev) == 0 || ev[len(ev)-1].Kind != EventNoHost {
			t.Fatalf("events %+v", ev)
		}
		if n := r.disconnects[1].Load(); n != 1 {
			t.Fatalf("the game saw %d disconnects, want 1", n)
		}
	})
}

// TestPeerStreamRefusesForgeries: a player's forged stream frames — a
// message in another player's name, a standby copy, a number from the
// future, an acknowledgement of another player's stream — are refused
// and counted by the host, and the stream goes on.
func TestPeerStreamRefusesForgeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 3)
		defer r.close()
		stop := r.echoing()
		time.Sleep(2 * time.Second)
		c := r.peers[2].Client()
		var before game.HostStats
		host, mig := r.peers[0].hostGame(), r.peers[0].mig
		r.peers[0].srv.Do(func() { before = host.Stats() })
		for _, f := range [][]byte{
			appendPeerMessage(nil, proto.PeerMessageFrame{Player: 2, Seq: 1, Data: []byte("as player 2")}),
			appendPeerMessage(nil, proto.PeerMessageFrame{Player: 3, Copy: true, Seq: 1, Data: []byte("a copy")}),
			appendPeerMessage(nil, proto.PeerMessageFrame{Player: 3, Seq: 1 << 30, Data: []byte("from the future")}),
			appendPeerAck(nil, 2, proto.PeerAckToPlayer, 1000),
			appendPeerAck(nil, 3, proto.PeerAckStandbyRun, 1000),
		} {
			if err := c.SendFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		close(stop)
		r.checkEchoes()
		var after game.HostStats
		var ms HostStats
		r.peers[0].srv.Do(func() { after, ms = host.Stats(), mig.Stats() })
		if bad := after.BadFrames - before.BadFrames; bad != 5 || ms.Stream.Gaps != 1 {
			t.Fatalf("host counted %d bad frames (want 5), %d stream gaps (want 1)", bad, ms.Stream.Gaps)
		}
	})
}

// TestForgedMigrationControls: a player who is not a standby claims to
// be one (a standby ack of the host's epoch and of the next), claims
// to host the game (a roster of epoch 2 naming itself host), sends the
// host successor credentials naming itself, and a hand-over to itself
// (which only a host sends its players). The host refuses each
// as a bad frame, its standbys stay the ones it chose, nothing it counts
// of them moves, and the other players still follow the host of
// epoch 1.
func TestForgedMigrationControls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRig(t, 4)
		defer r.close()
		time.Sleep(2 * time.Second)
		c := r.peers[3].Client() // slot 4; slots 2 and 3 are the standbys
		host, mig := r.peers[0].hostGame(), r.peers[0].mig
		var before game.HostStats
		var msBefore HostStats
		r.peers[0].srv.Do(func() { before, msBefore = host.Stats(), mig.Stats() })
		frame := func(f interface{ Append([]byte) ([]byte, error) }) []byte {
			b, err := f.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		var key [proto.KeySize]byte
		forged := [][]byte{
			frame(&proto.StandbyAckFrame{Epoch: 1, Tick: 1 << 20}),
			frame(&proto.StandbyAckFrame{Epoch: 2, Tick: 1}),
			frame(&proto.RosterFrame{Epoch: 2, Host: 4, Members: []proto.RosterMember{
				{Slot: 1, ClientID: 1}, {Slot: 2, ClientID: 2}, {Slot: 3, ClientID: 3}, {Slot: 4, ClientID: 4, Candidate: true, Addr: []byte("10.0.9.9:7000")}}}),
			frame(&proto.SuccessorFrame{Epoch: 2, Successor: 4, Kind: proto.SuccessorKey, KeyID: 1, Key: key}),
			frame(&proto.ControlFrame{Code: proto.ControlHandOver, Player: 4, Tick: 1, Arg: 1}),
		}
		for _, f := range forged {
			if err := c.SendFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		var after game.HostStats
		var ms HostStats
		r.peers[0].srv.Do(func() { after, ms = host.Stats(), mig.Stats() })
		if bad := after.BadFrames - before.BadFrames; bad != uint64(len(forged)) {
			t.Fatalf("host counted %d bad frames of %d forged", bad, len(forged))
		}
		if ms.Epoch != 1 || ms.SteppedDown || ms.StandbyTick > msBefore.StandbyTick+120 || ms.StandbyTick < msBefore.StandbyTick {
			t.Fatalf("host migration stats after the forgeries %+v (before %+v)", ms, msBefore)
		}
		if st := r.peers[1].Stats(); st.Epoch != 1 || st.StandbyState == 0 {
			t.Fatalf("the standby after the forgeries: %+v", st)
		}
		for i, p := range r.peers {
			if st := p.Stats(); st.Epoch != 1 || st.Promotions != 0 {
				t.Fatalf("player %d after the forgeries: %+v", i+1, st)
			}
		}
	})
}

// commitsPeerRig is a peer-hosted commits game (swarm) on the in-memory
// network: every player can host; slot i's host socket is
// 10.0.0.i:7000, and it plays from 10.0.1.i, in the mesh at
// 10.0.1.i:6000.
type commitsPeerRig struct {
	t       *testing.T
	net     *udptest.Network
	peers   []*Player
	clients []*commits.Client
	kills   []*killSwitch

	mu        sync.Mutex
	committed [][]swarmRec // per player, what its committed world ran
	issued    [][]uint16   // per player, the tags of the commands it issued
	warnings  warnCounter
}

type swarmRec struct {
	kind   sim.CommandKind
	tick   uint32
	player uint16
	tag    uint16
}

func newCommitsPeerRig(t *testing.T, n int) *commitsPeerRig {
	r := &commitsPeerRig{t: t, net: udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 15 * time.Millisecond}}),
		committed: make([][]swarmRec, n), issued: make([][]uint16, n)}
	key, _ := tickwire.GenerateKey()
	candidates := map[uint16]string{}
	for i := 1; i <= n; i++ {
		candidates[uint16(i)] = fmt.Sprintf("10.0.0.%d:7000", i)
	}
	for i := 1; i <= n; i++ {
		k := &killSwitch{}
		hc, err := r.net.Listen(candidates[uint16(i)])
		if err != nil {
			t.Fatal(err)
		}
		w, err := swarm.NewGame(1000)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := r.net.Listen(fmt.Sprintf("10.0.1.%d:6000", i))
		if err != nil {
			t.Fatal(err)
		}
		cc, err := commits.NewClient(w, commits.ClientConfig{
			Mesh:     true,
			MeshConn: udp.FromPacketConn(killableConn{mc, k}),
			Committed: func(c *sim.Command) {
				rec := swarmRec{kind: c.Kind, tick: c.Tick, player: c.Player}
				if c.Kind == sim.CommandInput {
					rec.tag = swarm.ParseCommand(c.Data).Tag
				}
				r.mu.Lock()
				r.committed[i-1] = append(r.committed[i-1], rec)
				r.mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		slot := uint16(i)
		p, err := NewPlayer(Config{
			Logger:   slog.New(&r.warnings),
			Commits:  cc,
			HostConn: udp.FromPacketConn(killableConn{hc, k}),
			HostAddr: candidates[slot],
			Dialer:   peerDialer(t, r.net, slot, k, netem.Spec{}),
		})
		if err != nil {
			t.Fatal(err)
		}
		r.peers, r.clients, r.kills = append(r.peers, p), append(r.clients, cc), append(r.kills, k)
	}
	hostAndJoin(t, key, r.peers, candidates)
	return r
}

func (r *commitsPeerRig) close() {
	for i, p := range r.peers {
		p.Close()
		r.clients[i].Close()
	}
}

// play issues a swarm order from every player still in the game every
// 150..450 ms until stop is closed.
func (r *commitsPeerRig) play(stop chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	for i, cc := range r.clients {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(i), 3))
			for n := uint16(1); ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(150+rnd.IntN(300)) * time.Millisecond):
				}
				if r.kills[i].out() {
					return
				}
				tag := uint16(i+1)<<12 | n
				cmd := swarm.AppendCommand(nil, swarm.Command{Op: swarm.OpMove, Group: uint8(rnd.IntN(swarm.Groups)),
					X: uint16(rnd.IntN(swarm.WorldSize)), Y: uint16(rnd.IntN(swarm.WorldSize)), Tag: tag})
				if _, err := cc.Issue(uint16(i+1), cmd); err != nil {
					continue // between sessions
				}
				r.mu.Lock()
				r.issued[i] = append(r.issued[i], tag)
				r.mu.Unlock()
			}
		})
	}
	return wg.Wait
}

// backAfter waits until every player in survivors commits, on a
// session other than the one it had at from, past the newest tick any of
// them had committed then (the game commits on: not only a trailing
// player catching up), and returns how long after from each did.
func (r *commitsPeerRig) backAfter(from time.Time, survivors []int, limit time.Duration) []time.Duration {
	r.t.Helper()
	conn := make([]uint32, len(r.clients))
	newest := uint32(0)
	for _, i := range survivors {
		st := r.clients[i].Stats()
		conn[i] = st.Connection
		newest = max(newest, st.Committed)
	}
	back := make([]time.Duration, len(r.clients))
	for time.Since(from) < limit {
		all := true
		for _, i := range survivors {
			if back[i] != 0 {
				continue
			}
			if st := r.clients[i].Stats(); st.Connection != conn[i] && int32(st.Committed-newest) > 0 {
				back[i] = time.Since(from)
			} else {
				all = false
			}
		}
		if all {
			return back
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("players %v not all back within %v: %v", survivors, limit, back)
	return nil
}

// checkRecords: the survivors' committed records are the same list
// through the tick all of them reached; every command a survivor
// issued ran exactly once (it acknowledged none it did not run), and
// the gone player's commands at most once.
func (r *commitsPeerRig) checkRecords(survivors []int) {
	r.t.Helper()
	end := uint32(1<<32 - 1)
	for _, i := range survivors {
		end = min(end, r.clients[i].Stats().Committed)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	upTo := func(i int) []swarmRec {
		return slices.DeleteFunc(slices.Clone(r.committed[i]), func(c swarmRec) bool { return int32(c.tick-end) > 0 })
	}
	ref := upTo(survivors[0])
	for _, i := range survivors[1:] {
		if got := upTo(i); !slices.Equal(got, ref) {
			r.t.Fatalf("player %d's committed record differs from player %d's (%d and %d commands through tick %d)",
				i+1, survivors[0]+1, len(got), len(ref), end)
		}
	}
	ran := map[uint16]int{}
	for _, c := range ref {
		if c.kind == sim.CommandInput {
			ran[c.tag]++
		}
	}
	issued := 0
	for i := range r.clients {
		for _, tag := range r.issued[i] {
			issued++
			switch n := ran[tag]; {
			case n > 1:
				r.t.Errorf("player %d's command %#x ran %d times", i+1, tag, n)
			case n == 0 && slices.Contains(survivors, i):
				r.t.Errorf("player %d's command %#x never ran", i+1, tag)
			}
		}
	}
	r.t.Logf("%d commands issued, the survivors' records agree through tick %d (%d commands)", issued, end, len(ref))
}

// playing starts a rig of n peers (closed when the test ends) that
// play, for d before it returns, and until the end function it returns,
// which stops the orders, lets the last ones commit and checks the
// survivors' records (checkRecords) and that they commit on
// (checkFlowing).
func playing(t *testing.T, n int, d time.Duration) (*commitsPeerRig, func(survivors []int)) {
	r := newCommitsPeerRig(t, n)
	t.Cleanup(r.close)
	stop := make(chan struct{})
	wait := r.play(stop)
	time.Sleep(d)
	return r, func(survivors []int) {
		close(stop)
		wait()
		time.Sleep(2 * time.Second) // the last commands commit
		r.checkRecords(survivors)
		r.checkFlowing(survivors)
	}
}

// within checks that each survivor was back (backAfter's) within limit
// after what happened.
func (r *commitsPeerRig) within(what string, back []time.Duration, survivors []int, limit time.Duration) {
	r.t.Helper()
	for _, i := range survivors {
		r.t.Logf("%s: player %d commits again %v after", what, i+1, back[i])
		if back[i] > limit {
			r.t.Errorf("%s: player %d committed again %v after, want within %v", what, i+1, back[i], limit)
		}
	}
}

// checkFlowing: the survivors neither resynchronised nor desynchronised,
// and commits flowed to the end: each committed world is where its live
// one is (no command is issued any more).
func (r *commitsPeerRig) checkFlowing(survivors []int) {
	r.t.Helper()
	for _, i := range survivors {
		st := r.clients[i].Stats()
		if st.Resyncs != 0 || st.Desyncs != 0 {
			r.t.Errorf("player %d: %d resyncs, %d desyncs", i+1, st.Resyncs, st.Desyncs)
		}
		if st.CommitLag > 6 {
			r.t.Errorf("player %d: committed tick %d, %d ticks behind its live world", i+1, st.Committed, st.CommitLag)
		}
	}
}

// TestPeerCommitsMigration: in virtual time, four peers play swarm in
// commits mode on the first one's relay (15 ms links), each issuing an
// order every 150..450 ms. Killed (cut off without a word) after 5 s,
// the relay is replaced by the first successor (slot 2), which adopts
// the game from its own worlds; every survivor commits again on it
// within 2 s of the kill. Then slot 2's player quits: its relay hands
// the game over to slot 3, and the last two commit again on it within
// 200 ms of the Close. Through both, the survivors' committed records
// are the same list, and every command a survivor issued ran exactly
// once (those issued while the relay was gone included); the last two
// are in each other's mesh, which the last relay introduced.
func TestPeerCommitsMigration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, end := playing(t, 4, 5*time.Second)

		killed := time.Now()
		r.kills[0].dead.Store(true)
		r.within("relay killed", r.backAfter(killed, []int{1, 2, 3}, 3*time.Second), []int{1, 2, 3}, 2*time.Second)
		if st := r.peers[1].Stats(); !st.Hosting || st.Epoch != 2 {
			t.Fatalf("slot 2: hosting %v, epoch %d; want the relay of epoch 2", st.Hosting, st.Epoch)
		}
		time.Sleep(3 * time.Second)

		quit := time.Now()
		r.kills[1].quit.Store(true)
		r.peers[1].Close()
		r.within("relay quit", r.backAfter(quit, []int{2, 3}, 2*time.Second), []int{2, 3}, 200*time.Millisecond)
		if st := r.peers[2].Stats(); !st.Hosting || st.Epoch != 3 {
			t.Errorf("slot 3: hosting %v, epoch %d; want the relay of epoch 3", st.Hosting, st.Epoch)
		}
		for _, i := range []int{2, 3} {
			if st := r.peers[i].Stats(); st.HandOvers != 1 {
				t.Errorf("slot %d heard %d hand-overs, want 1", i+1, st.HandOvers)
			}
		}
		time.Sleep(3 * time.Second)
		end([]int{2, 3})
		for _, i := range []int{2, 3} {
			// The last relay introduced the two to each other.
			if m := r.clients[i].Stats().Mesh; m.Reachable != 1 || m.ShortcutsUseful == 0 {
				t.Errorf("player %d's mesh: %+v", i+1, m)
			}
		}
		var hs commits.RelayStats
		if st := r.peers[2].Stats(); st.Hosting {
			hs = st.HostRelay
		}
		t.Logf("the last relay: %d duplicates dropped, %d late, %d desyncs", hs.Duplicates, hs.Late, hs.Desyncs)
		if hs.Desyncs != 0 {
			t.Errorf("the last relay found %d desyncs", hs.Desyncs)
		}
	})
}

// TestPeerSuccessorRoute: in virtual time, three peers play, whose
// promoted hosts hold their tick for 3 s (Config.Hold); slot 3's
// Config.Successor gives the session to the successor a socket of its
// own and two addresses: one where nobody answers, then the successor's
// host address, each tried for 1.2 s. The host is cut off: slot 3 asks
// the route for slot 2 at slot 2's host address, once, and reaches it
// from that socket at the second address after the first's handshake
// timed out: the dial may take the promote timeout (1 s) for each
// address. Slot 2's game held its tick until slot 3 was back: it ran
// none of slot 3's ticks without its inputs (the default hold, 1 s,
// would have).
func TestPeerSuccessorRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPeerRigLinks(t, 3, 3, 15*time.Millisecond, netem.Spec{}, 3*time.Second)
		defer r.close()
		const own, nobody = "10.0.1.3:6000", "10.0.9.9:7000"
		var asked []string
		r.mu.Lock()
		r.successor = func(self, slot uint16, addr string) (tickwire.Dialer, []string) {
			if self != 3 {
				return tickwire.Dialer{}, nil
			}
			asked = append(asked, fmt.Sprintf("%d@%s", slot, addr))
			pc, err := r.net.Listen(own)
			if err != nil {
				t.Error(err)
			}
			return tickwire.Dialer{Conn: udp.FromPacketConn(pc), Config: tickwire.Config{HandshakeTimeout: 1200 * time.Millisecond}},
				[]string{nobody, addr}
		}
		r.mu.Unlock()
		time.Sleep(2 * time.Second)
		r.mu.Lock()
		r.resumed = map[uint64]uint32{}
		r.mu.Unlock()
		r.kill(0)
		r.waitFor("slot 3 resumed on slot 2", 5*time.Second, func() bool {
			ev := r.eventsOf(2)
			return len(ev) > 0 && ev[len(ev)-1].Kind == EventResumed
		})
		time.Sleep(time.Second)
		r.checkNoneMissing(1)
		r.mu.Lock()
		defer r.mu.Unlock()
		c := r.peers[2].Client()
		if !slices.Equal(asked, []string{"2@10.0.0.2:7000"}) || c.Server().String() != "10.0.0.2:7000" || c.LocalAddr().String() != own {
			t.Fatalf("routes asked %q; the session is from %v to %v, want from %s to 10.0.0.2:7000", asked, c.LocalAddr(), c.Server(), own)
		}
	})
}
