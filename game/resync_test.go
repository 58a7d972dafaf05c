package game

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/udptest"
)

// The join, leave, resync and desync flows of seed 001, end to end over
// the in-memory network in virtual time: a server running the arena
// through a Host, GameClients dialling it, faults injected inside the
// client (behind the AEAD) with a testrig.FilterLayer. Every case ends with
// the client's replica equal to the server's state at the replica's tick.

const rigGame = 11

// gameRig is a game server on a udptest network.
type gameRig struct {
	t    *testing.T
	net  *udptest.Network
	srv  *tickwire.Server
	host *Host
	key  tickwire.Key
	stop func()
	// hist holds the game's state after each server tick, by game tick.
	// Written and read on the server's loop (Handler.Tick, Server.Do).
	hist map[uint32]stateCopy
	wrap func(pc net.PacketConn, seed uint64) net.PacketConn
	// factoryErr, if set, makes the game factory refuse new games (read
	// on the server's loop).
	factoryErr error
	// inputs, if set, makes dial's players play it instead of
	// randomInputs; inputInterval, if set, is their
	// Client.SetInputInterval.
	inputs        func(seed uint64) InputFunc
	inputInterval int
	// npcs, if set, is how many NPCs the arena holds (default 8).
	npcs int
	// arena, if set, makes the arena's games (the server's with npcs
	// NPCs, the clients' with none) instead of arena.NewGame.
	arena func(npcs int) Game
}

// newArena is the rig's arena with npcs NPCs.
func (r *gameRig) newArena(npcs int) Game {
	if r.arena != nil {
		return r.arena(npcs)
	}
	return arena.NewGame(npcs)
}

type stateCopy = testrig.State

// newGameRig starts the server; call it inside the synctest bubble and
// stop it with close.
func newGameRig(t *testing.T) *gameRig { return newGameRigConfig(t, Config{}) }

func newGameRigConfig(t *testing.T, cfg Config) *gameRig {
	return newGameRigLink(t, cfg, 15*time.Millisecond, nil)
}

// newGameRigLink is newGameRig with a one-way latency and, if wrap is
// set, every socket (the server's and each client's) passed through it
// (an impairment) with a seed of its own.
func newGameRigLink(t *testing.T, cfg Config, latency time.Duration, wrap func(pc net.PacketConn, seed uint64) net.PacketConn) *gameRig {
	r := &gameRig{t: t, hist: map[uint32]stateCopy{}, wrap: wrap}
	r.net = udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: latency}})
	var err error
	r.key, _ = tickwire.GenerateKey()
	r.srv, err = tickwire.NewServer(r.key, tickwire.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Handler = &testrig.History{Engine: func() *sim.Server { return r.host.Engine(rigGame) }, States: r.hist}
	factory := func(uint64) (Game, error) {
		if r.factoryErr != nil {
			return nil, r.factoryErr
		}
		if r.npcs > 0 {
			return r.newArena(r.npcs), nil
		}
		return r.newArena(8), nil
	}
	if r.host, err = NewHost(r.srv, factory, cfg); err != nil {
		t.Fatal(err)
	}
	r.srv.Handle(r.host)
	r.stop = testrig.SimServe(t, r.net, "10.0.0.1:7777", r.srv, r.wrapSeed(1))
	return r
}

// wrapSeed is the rig's impairment with seed (nil without one).
func (r *gameRig) wrapSeed(seed uint64) func(net.PacketConn) net.PacketConn {
	if r.wrap == nil {
		return nil
	}
	return func(pc net.PacketConn) net.PacketConn { return r.wrap(pc, seed) }
}

func (r *gameRig) close() { r.stop() }

// dial connects a game client for player slot; filter (may be nil) sees
// its game frames.
func (r *gameRig) dial(clientID uint64, slot uint16, filter func(proto.FrameType, []byte) []byte) (*tickwire.Client, *Client) {
	r.t.Helper()
	inputs := randomInputs
	if r.inputs != nil {
		inputs = r.inputs
	}
	gc, err := NewClient(r.newArena(0), inputs(clientID), sim.ClientConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	if r.inputInterval > 0 {
		if err := gc.SetInputInterval(r.inputInterval); err != nil {
			r.t.Fatal(err)
		}
	}
	return r.dialLayer(clientID, slot, gc, filter), gc
}

// dialLayer connects a client for player slot that plays with layer.
func (r *gameRig) dialLayer(clientID uint64, slot uint16, layer tickwire.ClientLayer, filter func(proto.FrameType, []byte) []byte) *tickwire.Client {
	r.t.Helper()
	return r.dialSlots(clientID, []uint16{slot}, layer, filter)
}

// dialSlots connects a client for player slots (one connection) that
// plays with layer.
func (r *gameRig) dialSlots(clientID uint64, slots []uint16, layer tickwire.ClientLayer, filter func(proto.FrameType, []byte) []byte) *tickwire.Client {
	r.t.Helper()
	tok, err := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: rigGame, ClientID: clientID, Players: slots,
		ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	if filter != nil {
		layer = testrig.FilterLayer{ClientLayer: layer, Filter: filter}
	}
	return testrig.SimDial(r.t, r.net, fmt.Sprintf("10.0.1.%d:5000", clientID), r.wrapSeed(100+clientID), tok, layer)
}

// replica copies the client's replicated state.
func replica(gc *Client) (uint32, stateCopy) { return testrig.ReplicaOf(gc) }

// waitSynced polls (in virtual time) until cond holds for every client's
// stats and each client's replica equals the server's state at the
// replica's tick; it fails the test after 10 s.
func (r *gameRig) waitSynced(what string, cond func(i int, st ClientStats) bool, gcs ...*Client) {
	r.t.Helper()
	waitSynced(r.t, what, r.srv, r.hist, cond, gcs...)
}

// waitSynced is testrig.WaitSynced for game clients: cond on each
// client's stats, and its replica equal to the server's recorded state.
func waitSynced(t testing.TB, what string, srv *tickwire.Server, hist map[uint32]stateCopy, cond func(i int, st ClientStats) bool, gcs ...*Client) {
	t.Helper()
	testrig.WaitSynced(t, what, srv, hist, len(gcs), func(i int) (bool, string, uint32, testrig.State) {
		st := gcs[i].Stats()
		tick, cl := replica(gcs[i])
		return cond(i, st), fmt.Sprintf("%+v", st), tick, cl
	})
}

func (r *gameRig) hostStats() HostStats {
	var st HostStats
	r.srv.Do(func() { st = r.host.Stats() })
	return st
}

func holds(gc *Client, id proto.NetworkID) bool {
	_, s := replica(gc)
	_, ok := slices.BinarySearch(s.IDs, id)
	return ok
}

func checksummed(n uint64) func(int, ClientStats) bool {
	return func(_ int, st ClientStats) bool { return st.ChecksumsOK >= n }
}

func TestGameJoinAtTickZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		c, gc := r.dial(1, 3, nil)
		defer c.Close()
		r.waitSynced("join", checksummed(2), gc)
		st := gc.Stats()
		if st.FullSnapshots != 1 || st.Resyncs != 0 || st.Desyncs != 0 || st.Deltas == 0 {
			t.Fatalf("client stats %+v", st)
		}
		if !holds(gc, arena.PlayerID(3)) {
			t.Fatal("replica lacks the player's avatar")
		}
		joinedAt := -1
		r.srv.Do(func() {
			// The game started with this join at tick 0: the first step's
			// state holds the player.
			for tick := range uint32(10) {
				s, ok := r.hist[tick]
				if _, has := slices.BinarySearch(s.IDs, arena.PlayerID(3)); ok && has {
					joinedAt = int(tick)
					break
				}
			}
		})
		if joinedAt != 1 {
			t.Fatalf("player first in the recorded state at tick %d, want 1 (joined at tick 0)", joinedAt)
		}
		if hs := r.hostStats(); hs.Joins != 1 || hs.Resyncs != 0 || hs.Desyncs != 0 {
			t.Fatalf("host stats %+v", hs)
		}
	})
}

func TestGameJoinMidGameAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		ca, a := r.dial(1, 3, nil)
		defer ca.Close()
		r.waitSynced("first join", checksummed(2), a)

		// A second client joins two seconds into the game.
		cb, b := r.dial(2, 9, nil)
		r.waitSynced("mid-game join", checksummed(a.Stats().ChecksumsOK+1), a, b)
		for i, gc := range []*Client{a, b} {
			if !holds(gc, arena.PlayerID(3)) || !holds(gc, arena.PlayerID(9)) {
				t.Fatalf("client %d does not hold both avatars", i)
			}
		}
		if st := b.Stats(); st.FullSnapshots != 1 || st.Resyncs != 0 || st.Desyncs != 0 {
			t.Fatalf("late joiner stats %+v", st)
		}

		// It leaves: the other client sees its avatar removed.
		cb.Close()
		okA := a.Stats().ChecksumsOK
		r.waitSynced("leave", func(_ int, st ClientStats) bool { return st.ChecksumsOK > okA }, a)
		if holds(a, arena.PlayerID(9)) {
			t.Fatal("the leaver's avatar is still in the other client's replica")
		}
		if st := a.Stats(); st.Resyncs != 0 || st.Desyncs != 0 || st.FullSnapshots != 1 {
			t.Fatalf("remaining client stats %+v", st)
		}
		var players []uint16
		r.srv.Do(func() { players = r.host.Engine(rigGame).Players(nil) })
		if hs := r.hostStats(); hs.Joins != 2 || hs.Leaves != 1 || !slices.Equal(players, []uint16{3}) {
			t.Fatalf("host stats %+v, players %v", hs, players)
		}
	})
}

// faultAt returns a frame filter that applies fault to the n-th frame of
// type ft (counting from 1) and passes every other frame; hit is set
// when it fired. It runs on the client's loop.
func faultAt(ft proto.FrameType, n int, hit *atomic.Bool, fault func(f []byte) []byte) func(proto.FrameType, []byte) []byte {
	seen := 0
	return func(t proto.FrameType, f []byte) []byte {
		if t != ft {
			return f
		}
		if seen++; seen != n {
			return f
		}
		hit.Store(true)
		return fault(f)
	}
}

func flipByte(i int) func([]byte) []byte {
	return func(f []byte) []byte {
		c := slices.Clone(f)
		if i < 0 {
			i += len(c)
		}
		c[i] ^= 0x5a
		return c
	}
}

// truncatePatch drops the last byte of a delta frame's data (keeping
// the frame well formed): the last entry no longer decodes, whatever it
// held.
func truncatePatch(f []byte) []byte {
	d, _, err := proto.ParseSnapshotDeltaFrame(f)
	if err != nil || len(d.Data) == 0 {
		panic("test setup: not a delta frame with data")
	}
	d.Data = d.Data[:len(d.Data)-1]
	b, err := d.Append(nil)
	if err != nil {
		panic(err)
	}
	return b
}

func TestGameResync(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval int // Config.Sim.ChecksumInterval
		frame    proto.FrameType
		n        int
		fault    func([]byte) []byte
		desyncs  bool // the path is a checksum mismatch
		either   bool // any path to a resync
	}{
		// A delta lost after its packet was acknowledged: the server uses
		// it as a baseline the client never had (a revision gap).
		{"revision gap", 0, proto.FrameSnapshotDelta, 30, func([]byte) []byte { return nil }, false, false},
		// A patch that does not apply.
		{"corrupt patch", 0, proto.FrameSnapshotDelta, 30, truncatePatch, false, false},
		// A flipped byte inside a patch: depending on what it hits, the
		// patch no longer applies, the game rejects the record, or (a
		// literal of a record) the checksum tells; any of the three must
		// lead to a resync.
		{"corrupt patch byte", 1, proto.FrameSnapshotDelta, 30, flipByte(proto.SnapshotDeltaHeaderSize + 7), false, true},
		// A checksum that does not match the client's state.
		{"checksum mismatch", 0, proto.FrameChecksum, 2, flipByte(-1), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := Config{}
				cfg.Sim.ChecksumInterval = tc.interval
				r := newGameRigConfig(t, cfg)
				defer r.close()
				var hit atomic.Bool
				gc, err := NewClient(arena.NewGame(0), randomInputs(1), sim.ClientConfig{})
				if err != nil {
					t.Fatal(err)
				}
				events := &eventLog{}
				gc.Handle(events)
				c := r.dialLayer(1, 3, gc, faultAt(tc.frame, tc.n, &hit, tc.fault))
				defer c.Close()
				r.waitSynced(tc.name, func(_ int, st ClientStats) bool {
					return hit.Load() && st.Resyncs >= 1 && st.FullSnapshots >= 2 && st.ChecksumsOK >= 3
				}, gc)
				st, hs := gc.Stats(), r.hostStats()
				if hs.Resyncs < 1 {
					t.Fatalf("host answered %d resyncs", hs.Resyncs)
				}
				// For the either cases Resyncs >= 1 (waitSynced) is the
				// proof; the others name their path.
				if !tc.either && (tc.desyncs != (st.Desyncs > 0) || tc.desyncs != (hs.Desyncs > 0)) {
					t.Fatalf("checksum mismatches: client %d, host %d; want some: %v", st.Desyncs, hs.Desyncs, tc.desyncs)
				}
				// The game heard of it: (a desync,) the resync's start and
				// end with the same cause, in that order.
				var seen []Event
				for _, e := range events.get() {
					switch e.Kind {
					case EventDesync, EventResyncStarted, EventResyncFinished:
						seen = append(seen, e)
					}
				}
				if len(seen) < 2 || seen[len(seen)-2].Kind != EventResyncStarted || seen[len(seen)-1].Kind != EventResyncFinished ||
					seen[len(seen)-2].Resync != seen[len(seen)-1].Resync || (tc.desyncs && (len(seen) != 3 || seen[0].Kind != EventDesync)) {
					t.Fatalf("resync events:\n%s", eventLines(seen))
				}
				t.Logf("resync events:\n%s", eventLines(seen))
			})
		})
	}
}

// refusingArena is the arena with joins refused.
type refusingArena struct{ *arena.Game }

func (g refusingArena) Clone() Game { return refusingArena{g.Game.Clone().(*arena.Game)} }
func (g refusingArena) CopyFrom(src Game) {
	g.Game.CopyFrom(src.(refusingArena).Game)
}
func (refusingArena) OnPlayerJoin(*sim.Tick, uint16) error { return errors.New("game full") }

// TestGameJoinRefused: a game that refuses the only joiner denies the
// connection — saying which slot and the game's reason — and does not
// keep running without players.
func TestGameJoinRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		r.host.factory = func(uint64) (Game, error) { return refusingArena{arena.NewGame(2)}, nil }
		pc, err := r.net.Listen("10.0.1.1:5000")
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := tickwire.MintToken(r.key, tickwire.TokenParams{GameID: rigGame, ClientID: 1, Players: []uint16{3},
			ServerAddrs: []string{"10.0.0.1:7777"}}, time.Now())
		d := tickwire.Dialer{Conn: udp.FromPacketConn(pc)}
		_, err = d.Dial(context.Background(), tok)
		var denied *tickwire.DeniedError
		if !errors.As(err, &denied) || denied.Reason != proto.DenyJoinRefused || denied.Slot != 3 || denied.Text != "game full" {
			t.Fatalf("dial: %v, want a denial naming slot 3 and the game's reason (issue 23, bug 2)", err)
		}
		if hs := r.hostStats(); hs.JoinFailures != 1 || hs.Joins != 0 || hs.Games != 0 {
			t.Fatalf("host stats %+v, want 1 join failure and no game left running", hs)
		}
	})
}

// resyncFlooder is a hostile client layer: every packet it sends is full
// of resync requests (as many frames as fit, up to 63: a payload holds at
// most 64 frames, and its session's reliable frame, with the acks that
// let the server send it the next full snapshot, takes the last), and it
// ignores what the server sends.
type resyncFlooder struct{ sent atomic.Int64 } // written on the client's loop

func (f *resyncFlooder) Attach(*tickwire.Client, tickwire.Accepted) (tickwire.FrameHandler, error) {
	return f, nil
}
func (f *resyncFlooder) Frame(proto.FrameType, []byte, *tickwire.PacketInfo) error { return nil }
func (f *resyncFlooder) Ticks() tickwire.Ticks                                     { return tickwire.Ticks{} }
func (f *resyncFlooder) AppendFrames(b []byte, room int, _ *tickwire.PacketInfo) []byte {
	req := proto.ResyncRequestFrame{Reason: proto.ResyncPatchError}
	for range 63 {
		if room < req.Len() {
			break
		}
		b, _ = req.Append(b)
		room -= req.Len()
		f.sent.Add(1)
	}
	return b
}

// TestResyncFlood: a client that asks for a resync in every frame of
// every packet for 10 s buys at most one full snapshot per cooldown, not
// one per request, and a well-behaved player in the same game stays in
// sync throughout.
func TestResyncFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		c, gc := r.dial(1, 3, nil)
		defer c.Close()
		flood := &resyncFlooder{}
		fc := r.dialLayer(2, 4, flood, nil)
		defer fc.Close()
		time.Sleep(10 * time.Second)
		r.waitSynced("under a resync flood", checksummed(8), gc)
		st := r.hostStats()
		t.Logf("flooder sent %d resync requests; host: %+v; honest client: %+v", flood.sent.Load(), st, gc.Stats())
		if flood.sent.Load() < 10_000 {
			t.Fatalf("the flooder sent only %d requests", flood.sent.Load())
		}
		// Two joins, then at most one resync per cooldown for 10 s.
		if limit := uint64(2 + 10*time.Second/resyncCooldown + 1); st.FullSnapshots > limit || st.FullEncodes > st.FullSnapshots {
			t.Fatalf("%d full snapshots sent (%d compressed) for %d requests, want at most %d", st.FullSnapshots, st.FullEncodes, flood.sent.Load(), limit)
		}
		if st.ResyncsIgnored == 0 || st.Desyncs != 0 {
			t.Fatalf("host stats %+v", st)
		}
		if cs := gc.Stats(); cs.Desyncs != 0 || cs.Resyncs != 0 {
			t.Fatalf("honest client %+v", cs)
		}
	})
}
