package commits

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// newRelayRig is the commit rig with a Relay instead of a Host: the
// server knows nothing of swarm (its command size is learnt from the
// first command).
func newRelayRig(t *testing.T, cfg RelayConfig) *commitRig {
	return newRig(t, func(srv *tickwire.Server, r *commitRig) (tickwire.Handler, error) {
		var err error
		r.relay, err = NewRelay(srv, cfg)
		return r.relay, err
	})
}

func (r *commitRig) relayStats() RelayStats {
	var st RelayStats
	r.srv.Do(func() { st = r.relay.Stats() })
	return st
}

func (r *commitRig) log() string {
	var s string
	r.srv.Do(func() { s = r.logs.String() })
	return s
}

// dialN connects n players (ids and slots 1..n) at oneway from the
// server.
func (r *commitRig) dialN(n int, oneway time.Duration) []*commitPlayer {
	r.t.Helper()
	var ps []*commitPlayer
	for i := range n {
		ps = append(ps, r.dial(uint64(i+1), uint16(i+1), oneway, ""))
	}
	return ps
}

// playAll plays ps until stop is closed.
func playAll(t *testing.T, ps []*commitPlayer) (stop func()) {
	ch := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.play(t, ch) })
	}
	return func() { close(ch); wg.Wait() }
}

// agreeNow: the clients' committed worlds have the same checksum at
// every tick all of them hold since their last state (each keeps its
// recent checksums), at least 16 ticks.
func agreeNow(t *testing.T, ps []*commitPlayer) {
	t.Helper()
	sums := make([]map[uint32]uint64, len(ps))
	for i, p := range ps {
		p.mu.Lock()
		from := p.loadedAt
		p.mu.Unlock()
		sums[i] = map[uint32]uint64{}
		p.cc.Do(func(ls *sim.Lockstep) {
			for tick := ls.CommittedTick(); int32(tick-from) > 0 && ls.CommittedTick()-tick < 128; tick-- {
				if sum, ok := ls.CommittedSum(tick); ok {
					sums[i][tick] = sum
				}
			}
		})
	}
	checked := 0
	for tick, want := range sums[0] {
		all := true
		for _, m := range sums[1:] {
			_, ok := m[tick]
			all = all && ok
		}
		if !all {
			continue
		}
		for i, m := range sums[1:] {
			if m[tick] != want {
				t.Fatalf("at tick %d client %d's committed world differs (%x, client %d %x)", tick, ps[i+1].id, m[tick], ps[0].id, want)
			}
		}
		checked++
	}
	if checked < 16 {
		for _, p := range ps {
			st := p.cc.Stats()
			t.Logf("client %d: committed %d, kicks %d, resyncs %d, desyncs %d", p.id, st.Committed, st.Kicks, st.Resyncs, st.Desyncs)
		}
		t.Fatalf("only %d ticks compared", checked)
	}
}

// TestRelayPlaysSwarm: four clients play swarm through a Relay (no game
// code on the server) at 10, 40, 10 and 40 ms one-way: every client's
// committed record is the same list, every issued command ran once at
// one tick on every client, the relay compared every committed tick's
// checksums and found no desync, and the committed worlds agree at
// every tick the clients still hold.
func TestRelayPlaysSwarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		t.Cleanup(r.close)
		var ps []*commitPlayer
		for i, d := range []time.Duration{10, 40, 10, 40} {
			ps = append(ps, r.dial(uint64(i+1), uint16(i+1), d*time.Millisecond, ""))
		}
		runCommits(t, ps, 20*time.Second)
		end := checkRecords(t, ps)
		agreeNow(t, ps)
		st := r.relayStats()
		if st.Desyncs != 0 || st.NoMajority != 0 || st.Checked < uint64(len(ps))*uint64(end-100) || st.Commands == 0 {
			t.Errorf("relay %+v (committed through %d)", st, end)
		}
		if st.StatesSent != uint64(len(ps)) {
			t.Errorf("relay sent %d states, want one blank world to each of %d clients", st.StatesSent, len(ps))
		}
		for _, p := range ps {
			if cs := p.cc.Stats(); cs.Desyncs != 0 || cs.Resyncs != 0 {
				t.Errorf("client %d: %+v", p.id, cs)
			}
		}
		t.Logf("relay: %d commands, %d ticks committed, %d checksums compared", st.Commands, st.Commits, st.Checked)
	})
}

// TestRelayJoinerGetsState: three clients play for 5 s; a fourth joins:
// the relay asks the three for the digest of their committed state, one
// of them for its bytes, verifies the upload and sends it on; the
// joiner plays on in agreement with the others.
func TestRelayJoinerGetsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		t.Cleanup(r.close)
		ps := r.dialN(3, 20*time.Millisecond)
		stop := playAll(t, ps)
		time.Sleep(5 * time.Second)
		j := r.dial(4, 4, 30*time.Millisecond, "")
		ps = append(ps, j)
		stopJ := playAll(t, ps[3:])
		time.Sleep(10 * time.Second)
		stop()
		stopJ()
		time.Sleep(2 * time.Second)
		checkRecords(t, ps)
		agreeNow(t, ps)
		st := r.relayStats()
		if st.Verified != 1 || st.Uploads != 1 || st.Refused != 0 || st.Desyncs != 0 || st.StatesSent != 4 {
			t.Errorf("relay %+v", st)
		}
		if js := j.cc.Stats(); js.Issued == 0 || js.Desyncs != 0 || js.Resyncs != 0 {
			t.Errorf("joiner %+v", js)
		}
		up := uint64(0)
		for _, p := range ps[:3] {
			up += p.cc.Stats().StatesUploaded
		}
		if up != 1 {
			t.Errorf("%d uploads from the three, want 1", up)
		}
		if !regexp.MustCompile(`msg="committed state uploaded and verified" .*tick=`).MatchString(r.log()) {
			t.Error("no verified upload in the relay's log")
		}
	})
}

// TestRelayDesyncDetected: of three clients one has a bug at one tick;
// the relay, comparing the clients' checksums with each other, logs it
// with that tick as the first divergent one, counts it, and resyncs the
// client with a state the two others uploaded and agreed on; all three
// agree from then on.
func TestRelayDesyncDetected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		t.Cleanup(r.close)
		const at = 150
		w, _ := swarm.NewGame(1000)
		ps := []*commitPlayer{
			r.dial(1, 1, 20*time.Millisecond, ""),
			r.dial(2, 2, 20*time.Millisecond, ""),
			r.dialGame(3, 3, 20*time.Millisecond, "", &flawedSwarm{Game: w, at: at}),
		}
		runCommits(t, ps, 12*time.Second)
		checkRecords(t, ps)
		agreeNow(t, ps)
		m := regexp.MustCompile(`desync: .* conn=(\d+) first_divergent_tick=(\d+)`).FindAllStringSubmatch(r.log(), -1)
		if len(m) != 1 || m[0][1] != fmt.Sprint(ps[2].cc.Stats().Connection) || m[0][2] != fmt.Sprint(at) {
			t.Fatalf("desync log lines %v, want one naming client 3's connection and tick %d", m, at)
		}
		if st := r.relayStats(); st.Desyncs != 1 || st.Resyncs != 1 || st.Verified != 1 {
			t.Errorf("relay %+v", st)
		}
		if st := ps[2].cc.Stats(); st.Desyncs != 1 {
			t.Errorf("flawed client %+v", st)
		}
	})
}

// liar makes p a client whose uploads are its committed state with
// bytes changed (the same size; its digests stay the true ones).
func liar(p *commitPlayer) {
	p.cc.mu.Lock()
	p.cc.corruptUpload = func(b []byte) {
		for i := len(b) / 2; i < len(b) && i < len(b)/2+16; i++ {
			b[i] ^= 0x5a
		}
	}
	p.cc.mu.Unlock()
}

// TestRelayRefusesBadState: of three playing clients the first (the one
// the relay asks to upload) lies: it uploads a corrupted state of the
// right size. The relay does not believe it: it names the liar in its
// log and asks the next client, whose state it verifies; the joiner
// gets that one and agrees with the others. The liar plays on but is
// never asked again.
func TestRelayRefusesBadState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		t.Cleanup(r.close)
		ps := r.dialN(3, 20*time.Millisecond)
		liar(ps[0])
		stop := playAll(t, ps)
		time.Sleep(4 * time.Second)
		j := r.dial(4, 4, 20*time.Millisecond, "")
		ps = append(ps, j)
		time.Sleep(6 * time.Second)
		stop()
		time.Sleep(2 * time.Second)
		checkRecords(t, ps)
		agreeNow(t, ps)
		st := r.relayStats()
		if st.Refused != 1 || st.Verified != 1 || st.Uploads != 2 || st.StatesSent != 4 || st.NoState != 0 {
			t.Errorf("relay %+v", st)
		}
		liarConn := ps[0].cc.Stats().Connection
		m := regexp.MustCompile(`msg="state upload refused: the client's state is not the agreed one" .*conn=(\d+) client=(\d+) .*why="bytes differ from the agreed checksum"`).FindAllStringSubmatch(r.log(), -1)
		if len(m) != 1 || m[0][1] != fmt.Sprint(liarConn) || m[0][2] != "1" {
			t.Fatalf("refusals logged %v, want one naming the liar (conn %d, client 1)", m, liarConn)
		}
		if n := ps[0].cc.Stats().StatesUploaded; n != 1 {
			t.Errorf("the liar uploaded %d times", n)
		}
		if js := j.cc.Stats(); js.Desyncs != 0 || js.Resyncs != 0 {
			t.Errorf("joiner %+v", js)
		}
	})
}

// silent makes p a client that never answers the relay's state
// requests.
func silent(p *commitPlayer) {
	p.cc.mu.Lock()
	p.cc.ignoreStates = true
	p.cc.mu.Unlock()
}

// TestRelayRetriesSilentClient: the first client never answers a state
// request. A joiner still gets a state: after StateTimeout the relay
// gives up on it, names it in its log and asks the other client, within
// a bound of twice the timeout plus the upload.
func TestRelayRetriesSilentClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		r := newRelayRig(t, RelayConfig{StateTimeout: timeout})
		t.Cleanup(r.close)
		ps := []*commitPlayer{r.dial(1, 1, 20*time.Millisecond, ""), r.dial(2, 2, 20*time.Millisecond, "")}
		silent(ps[0])
		stop := playAll(t, ps)
		time.Sleep(4 * time.Second)
		joined := time.Now()
		j := r.dial(3, 3, 20*time.Millisecond, "")
		ps = append(ps, j)
		var loaded time.Duration
		for loaded == 0 && time.Since(joined) < 10*time.Second {
			time.Sleep(10 * time.Millisecond)
			j.mu.Lock()
			if j.loads > 0 {
				loaded = time.Since(joined)
			}
			j.mu.Unlock()
		}
		time.Sleep(4 * time.Second)
		stop()
		time.Sleep(2 * time.Second)
		if loaded == 0 || loaded > 2*timeout+time.Second {
			t.Fatalf("joiner loaded its state after %v (bound %v)", loaded, 2*timeout+time.Second)
		}
		checkRecords(t, ps)
		agreeNow(t, ps)
		st := r.relayStats()
		if st.Silent == 0 || st.Verified != 1 || st.NoState != 0 {
			t.Errorf("relay %+v", st)
		}
		silentConn := ps[0].cc.Stats().Connection
		if !regexp.MustCompile(fmt.Sprintf(`msg="client did not answer the state request in time" .*conn=%d `, silentConn)).MatchString(r.log()) {
			t.Errorf("the silent client (conn %d) is not named in the log", silentConn)
		}
		t.Logf("joiner waited %v for its state; relay %+v", loaded, st)
	})
}

// silentGame starts a relay whose only client, playing for 4 s, never
// answers a state request.
func silentGame(t *testing.T, timeout time.Duration) *commitRig {
	r := newRelayRig(t, RelayConfig{StateTimeout: timeout})
	t.Cleanup(r.close)
	p := r.dial(1, 1, 20*time.Millisecond, "")
	silent(p)
	t.Cleanup(playAll(t, []*commitPlayer{p}))
	time.Sleep(4 * time.Second)
	return r
}

// TestRelayNoHealthyClient: the only playing client never answers: a
// joiner is disconnected with reason "no committed state" (it does not
// rejoin), within a bound of three timeouts, and the relay says why.
func TestRelayNoHealthyClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		r := silentGame(t, timeout)
		j := r.dial(2, 2, 20*time.Millisecond, "")
		if waited := awaitNoState(t, j); waited > 3*timeout+time.Second {
			t.Errorf("joiner refused after %v (bound %v)", waited, 3*timeout+time.Second)
		}
		if !regexp.MustCompile(`msg="no committed state for the client: disconnecting it" .*why="no client can give the committed state"`).MatchString(r.log()) {
			t.Errorf("no refusal with its reason in the log:\n%s", r.log())
		}
		if st := r.relayStats(); st.NoState != 1 || st.Silent == 0 {
			t.Errorf("relay %+v", st)
		}
	})
}

// TestRelayRefusesEveryWaitingClient: as TestRelayNoHealthyClient, with
// two joiners waiting at once: the relay disconnects both ("no committed
// state") while it ranges over the game's clients, which each
// disconnection takes one out of.
func TestRelayRefusesEveryWaitingClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := silentGame(t, time.Second)
		js := []*commitPlayer{r.dial(2, 2, 20*time.Millisecond, ""), r.dial(3, 3, 20*time.Millisecond, "")}
		for _, j := range js {
			awaitNoState(t, j)
		}
		if st := r.relayStats(); st.NoState != 2 {
			t.Errorf("relay %+v", st)
		}
	})
}

// awaitNoState waits until j is disconnected, with reason "no committed
// state", and returns how long that took.
func awaitNoState(t *testing.T, j *commitPlayer) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-j.cc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the joiner is still waiting")
	}
	var de *tickwire.DisconnectError
	if err := j.cc.Err(); !errors.As(err, &de) || de.Reason != proto.DisconnectNoState {
		t.Fatalf("joiner ended with %v, want reason %v", err, proto.DisconnectNoState)
	}
	return time.Since(start)
}

// TestRelaySlowClientKicked: one client's path slows to a second each
// way: the relay kicks it out of the commit (the others' commits never
// wait longer than MaxBuffer) and it comes back with a state another
// client uploaded, verified, and plays on in agreement.
func TestRelaySlowClientKicked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		t.Cleanup(r.close)
		ps := r.dialN(3, 20*time.Millisecond)
		stop := playAll(t, ps)
		time.Sleep(5 * time.Second)
		r.setPath(3, time.Second)
		time.Sleep(6 * time.Second)
		r.setPath(3, 20*time.Millisecond)
		time.Sleep(8 * time.Second)
		stop()
		time.Sleep(2 * time.Second)
		checkRecords(t, ps)
		agreeNow(t, ps)
		if st := ps[2].cc.Stats(); st.Kicks == 0 || st.Resyncs == 0 {
			t.Errorf("slow client: %+v", st)
		}
		for _, p := range ps[:2] {
			if st := p.cc.Stats(); st.StallMax > time.Second+3*time.Second/commitRate {
				t.Errorf("client %d: committed tick stalled %v (MaxBuffer 1 s)", p.id, st.StallMax)
			}
		}
		st := r.relayStats()
		if st.Kicks == 0 || st.Verified == 0 || st.Desyncs != 0 || st.Resyncs == 0 {
			t.Errorf("relay %+v", st)
		}
	})
}

// TestRelayRefusesOversizedState: a game whose committed state is over
// the relay's MaxState: the upload is refused for its size before any
// of it is buffered, and the joiner is disconnected, with the reason.
func TestRelayRefusesOversizedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{MaxState: 1024})
		t.Cleanup(r.close)
		ps := []*commitPlayer{r.dial(1, 1, 20*time.Millisecond, ""), r.dial(2, 2, 20*time.Millisecond, "")}
		stop := playAll(t, ps)
		defer stop()
		time.Sleep(4 * time.Second)
		j := r.dial(3, 3, 20*time.Millisecond, "")
		awaitNoState(t, j)
		log := r.log()
		if !regexp.MustCompile(`msg="state upload refused: over the relay's bound" .*max_state=1024`).MatchString(log) ||
			!regexp.MustCompile(`msg="no committed state for the client: disconnecting it" .*is over the relay's bound`).MatchString(log) {
			t.Errorf("log:\n%s", log)
		}
		if st := r.relayStats(); st.Refused != 1 || st.NoState != 1 || st.Verified != 0 {
			t.Errorf("relay %+v", st)
		}
		// The relay buffered none of it.
		r.srv.Do(func() {
			for _, g := range r.relay.games {
				if x := g.relayed.xfer; x != nil && cap(x.blob) > 0 {
					t.Errorf("upload buffer of %d bytes", cap(x.blob))
				}
			}
		})
	})
}

// bigSwarm is swarm with a megabyte more of state, incompressible and
// changed every tick: the joins' worst case.
type bigSwarm struct {
	*swarm.Game
	blob []byte
}

const bigBlob = 1 << 20

func newBigSwarm() sim.CommitGame {
	w, _ := swarm.NewGame(1000)
	g := &bigSwarm{Game: w, blob: make([]byte, bigBlob)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range g.blob {
		g.blob[i] = byte(rng.Uint32())
	}
	return g
}

func (g *bigSwarm) Clone() sim.CommitGame {
	return &bigSwarm{Game: g.Game.Clone().(*swarm.Game), blob: slices.Clone(g.blob)}
}
func (g *bigSwarm) CopyFrom(src sim.CommitGame) {
	s := src.(*bigSwarm)
	g.Game.CopyFrom(s.Game)
	copy(g.blob, s.blob)
}
func (g *bigSwarm) Step(t *sim.Tick) {
	g.Game.Step(t)
	g.blob[int(t.Tick*7919)%len(g.blob)] ^= byte(t.Tick)
}
func (g *bigSwarm) AppendCanonical(b []byte) []byte {
	w := sim.NewCanonicalWriter(b)
	w.Blob(g.blob)
	return g.Game.AppendCanonical(w.Bytes())
}
func (g *bigSwarm) LoadCanonical(b []byte) error {
	r := sim.NewCanonicalReader(b)
	blob := r.Blob()
	if len(blob) != bigBlob {
		r.Fail(errors.New("bigSwarm: blob of another size"))
	}
	rest := r.Rest()
	if err := r.Finish(); err != nil {
		return err
	}
	if err := g.Game.LoadCanonical(rest); err != nil {
		return err
	}
	copy(g.blob, blob)
	return nil
}

// footprint is what the relay holds for a game, in bytes: the command
// buffer, the kept commands, the upload, the vote ring and the
// connections' tables (capacities, not lengths).
func (r *Relay) footprint(g *commitGame) int {
	rg := g.relayed
	n := r.cfg.Capacity*64 + cap(rg.held)*32 + cap(rg.heldData) + cap(g.relay)
	for i := range rg.votes {
		n += 48 + cap(rg.votes[i].reports)*16
	}
	if x := rg.xfer; x != nil {
		n += cap(x.blob) + cap(x.voters)*64
	}
	n += cap(r.raw)
	for _, cc := range g.conns {
		n += 512 + 16*(len(cc.lastSeq)+len(cc.stamp)+len(cc.meshRTT)) + 8*cap(cc.sums.Sums)
	}
	return n
}

// bigJoins is how many clients join, one after the other, in
// TestRelayJoinWaitBigState.
const bigJoins = 6

// TestRelayJoinWaitBigState measures, in virtual time, how long a
// joiner waits for a 1 MiB state (incompressible) with eight clients
// playing at 20 ms one-way: six joins one after the other, each by
// a client that then leaves. It logs the wait's p50 and p99 and the
// relay's footprint for the game, steady and during a transfer; every
// joiner agrees with the others.
func TestRelayJoinWaitBigState(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of virtual time with 1 MiB worlds")
	}
	synctest.Test(t, func(t *testing.T) {
		r := newRelayRig(t, RelayConfig{})
		r.world = newBigSwarm
		t.Cleanup(r.close)
		ps := r.dialN(8, 20*time.Millisecond)
		stop := playAll(t, ps)
		defer stop()
		time.Sleep(4 * time.Second)
		steady, peak := 0, 0
		r.srv.Do(func() {
			for _, g := range r.relay.games {
				steady = r.relay.footprint(g)
			}
		})
		var waits []time.Duration
		for k := range bigJoins {
			start := time.Now()
			j := r.dial(uint64(20+k), uint16(20+k), 20*time.Millisecond, "")
			for {
				time.Sleep(5 * time.Millisecond)
				r.srv.Do(func() {
					for _, g := range r.relay.games {
						peak = max(peak, r.relay.footprint(g))
					}
				})
				j.mu.Lock()
				n := j.loads
				j.mu.Unlock()
				if n > 0 {
					break
				}
				if time.Since(start) > 20*time.Second {
					t.Fatalf("joiner %d waits for its state after %v", k, time.Since(start))
				}
			}
			waits = append(waits, time.Since(start))
			time.Sleep(time.Second)
			agreeNow(t, append(slices.Clone(ps), j))
			j.cc.Close()
			time.Sleep(500 * time.Millisecond)
		}
		sort.Slice(waits, func(a, b int) bool { return waits[a] < waits[b] })
		p := func(q float64) time.Duration { return waits[int(q*float64(len(waits)-1)+0.5)] }
		st := r.relayStats()
		if st.Verified != bigJoins || st.Refused != 0 || st.NoState != 0 {
			t.Errorf("relay %+v", st)
		}
		t.Logf("1 MiB state, 8 clients at 20 ms: a joiner waited p50 %v, p99 %v (max %v) for its state; relay footprint for the game %d KiB steady, %d KiB at most during a transfer",
			p(0.5), p(0.99), waits[len(waits)-1], steady>>10, peak>>10)
	})
}

// standbyHooks make client 1's connection the relay's warm standby,
// holding what its committed world holds.
type standbyHooks struct {
	mu   sync.Mutex
	conn *tickwire.Conn
	cc   *Client
}

func (h *standbyHooks) Tick(time.Time) bool { return true }
func (h *standbyHooks) Joined(c *tickwire.Conn, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.ClientID() == 1 {
		h.conn = c
	}
}
func (h *standbyHooks) Left(*tickwire.Conn, proto.DisconnectReason) {}
func (h *standbyHooks) Frame(_ *tickwire.Conn, t proto.FrameType, _ []byte) error {
	return errFrameKind(t)
}
func (h *standbyHooks) Standbys(_ uint64, dst []*tickwire.Conn) ([]*tickwire.Conn, uint32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil || h.cc == nil {
		return dst, 0, false
	}
	return append(dst, h.conn), h.cc.Stats().Committed, true
}

// TestRelayMigration: four clients play swarm through a relay whose
// warm standby is client 1, which hears nothing of the relay's last
// 400 ms (all 20 ms away); the relay goes deaf and mute (killed); 1.5 s
// later (a peer's host timeout) a second relay adopts the game from
// client 1's worlds (Client.RelayState, Relay.Adopt) and every client
// resumes on it (Client.Resume) and plays on. Every client's committed
// record is the same list through the end; every command issued, those
// issued while the relay was gone included, ran exactly once; every
// client commits again within 2 s of the relay's loss.
func TestRelayMigration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks := &standbyHooks{}
		r := newRelayRig(t, RelayConfig{Config: Config{Hooks: hooks}})
		t.Cleanup(r.close)
		var deaf atomic.Bool
		r.sessWrap = func(id uint64, pc *udptest.Conn) net.PacketConn {
			if id == 1 {
				return deafConn{pc, &deaf}
			}
			return pc
		}
		ps := r.dialN(4, 20*time.Millisecond)
		ps[0].cc.KeepCommitted(2 * commitRate)
		hooks.mu.Lock()
		hooks.cc = ps[0].cc
		hooks.mu.Unlock()
		stop := playAll(t, ps)
		time.Sleep(5 * time.Second)

		// The standby hears nothing for the relay's last 400 ms: without
		// the commit held for it, the others would commit commands it
		// does not have.
		deaf.Store(true)
		time.Sleep(400 * time.Millisecond)
		cutAt := time.Now()
		r.cut.Store(true)
		deaf.Store(false)
		before := make([]uint32, len(ps))
		for i, p := range ps {
			before[i] = p.cc.Stats().Committed
		}
		time.Sleep(1500 * time.Millisecond)

		// Client 1 takes over: its own relay adopts the game.
		addrB := netip.MustParseAddrPort("10.0.0.2:7777")
		keyB, _ := tickwire.GenerateKey()
		srvB, err := tickwire.NewServer(keyB, tickwire.Config{TickRate: commitRate, Logger: r.srv.Config().Logger})
		if err != nil {
			t.Fatal(err)
		}
		relayB, err := NewRelay(srvB, RelayConfig{})
		if err != nil {
			t.Fatal(err)
		}
		srvB.Handle(relayB)
		pcB, err := r.net.ListenAddrPort(addrB)
		if err != nil {
			t.Fatal(err)
		}
		doneB := make(chan error, 1)
		go func() { doneB <- srvB.Serve(udp.FromPacketConn(pcB)) }()
		defer func() { srvB.Close(); <-doneB }()
		st, ok := ps[0].cc.RelayState(time.Now())
		if !ok {
			t.Fatal("the standby holds no state")
		}
		srvB.Do(func() {
			err = relayB.Adopt(rigGame, st, Migration{Epoch: 2, Host: 1, Addr: addrB.String(), Grace: 3 * time.Second})
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			a := netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", p.id))
			r.net.SetLink(a, addrB.Addr(), udptest.Link{Latency: 20 * time.Millisecond})
			r.net.SetLink(addrB.Addr(), a, udptest.Link{Latency: 20 * time.Millisecond})
			pc, err := r.net.Listen(fmt.Sprintf("10.0.1.%d:%d", p.id, 5001))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tickwire.MintToken(keyB, tickwire.TokenParams{GameID: rigGame, ClientID: p.id, Players: []uint16{p.slot},
				ServerAddrs: []string{addrB.String()}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			p.cc.Resume()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = (&tickwire.Dialer{Game: p.cc, Conn: udp.FromPacketConn(pc)}).Dial(ctx, tok)
			cancel()
			if err != nil {
				t.Fatalf("client %d: %v", i+1, err)
			}
		}
		back := make([]time.Duration, len(ps))
		for range 300 {
			time.Sleep(10 * time.Millisecond)
			for i, p := range ps {
				if back[i] == 0 && int32(p.cc.Stats().Committed-before[i]) > 0 && p.cc.Stats().Connection != 0 {
					if st := p.cc.Stats(); st.Committed > before[i] {
						back[i] = time.Since(cutAt)
					}
				}
			}
		}
		time.Sleep(5 * time.Second)
		stop()
		time.Sleep(2 * time.Second)

		end := checkRecords(t, ps)
		ref := ps[0]
		ref.mu.Lock()
		ran := map[commitKey]int{}
		for _, rec := range ref.committed {
			ran[commitKey{rec.player, rec.tag}]++
		}
		ref.mu.Unlock()
		issued := 0
		for _, p := range ps {
			p.mu.Lock()
			for _, k := range p.issued {
				issued++
				if ran[k] != 1 {
					t.Errorf("command %+v of client %d ran %d times", k, p.id, ran[k])
				}
			}
			p.mu.Unlock()
		}
		var stB RelayStats
		srvB.Do(func() { stB = relayB.Stats() })
		for i, p := range ps {
			cs := p.cc.Stats()
			t.Logf("client %d: committed %d → %d, back in %v, resent %d, resyncs %d, desyncs %d", p.id, before[i], cs.Committed,
				back[i], cs.Resent, cs.Resyncs, cs.Desyncs)
			if back[i] == 0 || back[i] > 2*time.Second {
				t.Errorf("client %d committed again %v after the relay's loss, want within 2 s", p.id, back[i])
			}
			if cs.Resyncs != 0 || cs.Desyncs != 0 {
				t.Errorf("client %d: %d resyncs, %d desyncs", p.id, cs.Resyncs, cs.Desyncs)
			}
		}
		t.Logf("%d commands issued, records agree through tick %d; successor: %d duplicates dropped, %d late, %d desyncs",
			issued, end, stB.Duplicates, stB.Late, stB.Desyncs)
		if testing.Verbose() {
			t.Log(r.log())
		}
		if stB.Desyncs != 0 {
			t.Errorf("the successor found %d desyncs", stB.Desyncs)
		}
	})
}

// deafConn is a client's socket that drops what arrives while deaf is
// set.
type deafConn struct {
	net.PacketConn
	deaf *atomic.Bool
}

func (c deafConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil || !c.deaf.Load() {
			return n, addr, err
		}
	}
}
