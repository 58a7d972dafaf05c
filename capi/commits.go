//go:build cgo

package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// commitsClient is a commits-mode client behind a handle: a
// commits.Client whose committed world the C game steps (tickwire.h,
// "Commits mode").
//
// The commits.Client plays a stand-in game (remoteGame) that holds no
// world: the committed stand-in's steps, the commands the committed
// world runs and the states loaded become events (pushed by the
// Client's callbacks, on its loop, under its lock, into in); update
// moves them into the client's event queue, after the connection's own.
// The game's answers, its checksums and its states, wait in sums and
// answer until the Client asks for them (ClientConfig.External), on its
// loop: nothing waits for the game, and no code of the game's runs on
// the library's threads.
//
// Locks: the Client's lock, then inMu or sumMu or ansMu (its callbacks
// and External). The client's own mu (events) is never held while the
// Client is called; the Client never calls what takes it.
type commitsClient struct {
	*client
	cc        *commits.Client
	inputSize int

	inMu      sync.Mutex
	in        []event     // made by the Client's callbacks, for update
	committed *remoteGame // the Client's committed world (Loaded says which)
	loads     uint64

	sumMu    sync.Mutex
	sums     [sumRing]tickSum // the game's checksums by tick
	reported uint64

	ansMu  sync.Mutex
	asked  bool   // a state request was made pollable ...
	askFor uint32 // ... for this tick
	ans    []byte // the game's answer ...
	ansFor uint32 // ... for this tick
	ansOK  bool

	// counters seen by the last update (under client.mu)
	seenKicks, seenDesyncs uint64
	ended                  bool // DISCONNECTED was made pollable
	ticks, commands        uint64
}

// sumRing is how many ticks' checksums are kept (tw_commits_sum).
const sumRing = 4096

type tickSum struct {
	tick uint32
	sum  uint64
	ok   bool
}

// maxGameState bounds the game's canonical bytes: the relay's largest
// state less the head the Lockstep adds (the tick, the players).
const maxGameState = proto.MaxStateSize - 6 - 2*proto.MaxSpawner

// newCommitsClient starts dialing with a commits.Client whose game is
// the C caller's, and gives it a handle.
func newCommitsClient(tok *tickwire.ConnectToken, addr string, cfg tickwire.Config, rejoin *tickwire.Rejoin, inputSize, capacity int, mesh bool) (*commitsClient, error) {
	k := &commitsClient{inputSize: inputSize}
	cc, err := commits.NewClient(&remoteGame{k: k}, commits.ClientConfig{
		Capacity:  capacity,
		Mesh:      mesh,
		External:  (*externalGame)(k),
		Committed: k.command,
		Loaded:    k.loaded,
	})
	if err != nil {
		return nil, err
	}
	k.cc = cc
	k.client = dialClient(tok, addr, tickwire.Dialer{Config: cfg, Game: cc, Rejoin: rejoin})
	k.handle = handles.add(k)
	return k, nil
}

func (k *commitsClient) kind() kind { return kindCommits }

// pushIn makes e an event for the next update (the Client's callbacks).
func (k *commitsClient) pushIn(e event) {
	k.inMu.Lock()
	k.in = append(k.in, e)
	k.inMu.Unlock()
}

// command is ClientConfig.Committed: a command the committed world runs.
func (k *commitsClient) command(c *sim.Command) {
	k.pushIn(event{kind: eventCommitsCommand, tick: c.Tick, player: uint32(c.Player), seq: c.Seq, command: uint32(c.Kind),
		data: append([]byte(nil), c.Data...)})
}

// loaded is ClientConfig.Loaded: a state replaced the worlds.
func (k *commitsClient) loaded(committed sim.CommitGame, tick uint32) {
	g := committed.(*remoteGame)
	k.inMu.Lock()
	k.committed = g
	e := event{kind: eventCommitsState, tick: tick, data: g.state}
	if k.loads > 0 {
		e.flags |= flagResync
	}
	k.loads++
	k.in = append(k.in, e)
	k.inMu.Unlock()
	g.state = nil // the event has it; the stand-in needs none
}

// step is the committed stand-in's Step: the game steps tick.
func (k *commitsClient) step(g *remoteGame, tick uint32) {
	k.inMu.Lock()
	if g == k.committed {
		k.in = append(k.in, event{kind: eventCommitsTick, tick: tick})
	}
	k.inMu.Unlock()
}

// update is tw_commits_update: the connection's events, then the
// commits events, the kicks and desyncs, then the disconnect.
func (k *commitsClient) update(now float64) {
	st := k.cc.Stats()
	k.inMu.Lock()
	in := k.in
	k.in = nil
	k.inMu.Unlock()

	k.client.update(now)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return
	}
	var end *event
	if n := len(k.events); n > k.head && k.events[n-1].kind == eventDisconnected {
		e := k.events[n-1]
		end = &e
		k.events = k.events[:n-1]
	}
	for _, e := range in {
		e.time = now
		switch e.kind {
		case eventCommitsTick:
			k.ticks++
		case eventCommitsCommand:
			k.commands++
		}
		k.push(e)
	}
	if st.Kicks > k.seenKicks {
		k.seenKicks = st.Kicks
		k.push(event{kind: eventCommitsKicked, time: now, detail: uint32(st.Kicks)})
	}
	if st.Desyncs > k.seenDesyncs {
		k.seenDesyncs = st.Desyncs
		k.push(event{kind: eventCommitsDesync, time: now, detail: uint32(st.Desyncs)})
	}
	if end != nil {
		k.push(*end)
		k.ended = true
	}
}

// issue is tw_commits_issue.
func (k *commitsClient) issue(data []byte) (uint32, result) {
	tc, r := k.connected()
	if r != resOK {
		return 0, r
	}
	players := tc.Players()
	if len(players) == 0 {
		k.setErr("tickwire: the connection has no player slot")
		return 0, resNotConnected
	}
	tick, err := k.cc.Issue(players[0], data)
	switch {
	case err == nil:
		return tick, resOK
	case errors.Is(err, sim.ErrCommandAhead), errors.Is(err, sim.ErrCommandConflict):
		k.setErr(err.Error())
		return 0, resQueueFull
	}
	return 0, k.fail(err)
}

// report is tw_commits_sum.
func (k *commitsClient) report(tick uint32, sum uint64) {
	k.sumMu.Lock()
	k.sums[tick%sumRing] = tickSum{tick: tick, sum: sum, ok: true}
	k.reported++
	k.sumMu.Unlock()
}

// answer is tw_commits_state.
func (k *commitsClient) answer(tick uint32, b []byte) {
	k.ansMu.Lock()
	k.ans = append(k.ans[:0], b...)
	k.ansFor, k.ansOK = tick, true
	k.ansMu.Unlock()
}

// stats is tw_commits_stats.
func (k *commitsClient) stats() commitsStats {
	st := k.cc.Stats()
	k.sumMu.Lock()
	reported := k.reported
	k.sumMu.Unlock()
	k.inMu.Lock()
	loads := k.loads
	k.inMu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	return commitsStats{ClientStats: st, reported: reported, loads: loads, ticks: k.ticks, commands: k.commands}
}

type commitsStats struct {
	commits.ClientStats
	reported, loads, ticks, commands uint64
}

// free closes the commits client and its connection.
func (k *commitsClient) free() {
	k.cc.Close()
	k.client.free()
}

// externalGame is the commitsClient as the Client's ExternalGame: the
// game's checksums and states (called on the Client's loop, under its
// lock).
type externalGame commitsClient

func (x *externalGame) Sum(tick uint32) (uint64, bool) {
	k := (*commitsClient)(x)
	k.sumMu.Lock()
	defer k.sumMu.Unlock()
	s := k.sums[tick%sumRing]
	return s.sum, s.ok && s.tick == tick
}

func (x *externalGame) AppendState(b []byte, tick uint32) ([]byte, bool) {
	k := (*commitsClient)(x)
	k.ansMu.Lock()
	defer k.ansMu.Unlock()
	if k.ansOK && k.ansFor == tick {
		return append(b, k.ans...), true
	}
	if !k.asked || k.askFor != tick {
		k.asked, k.askFor = true, tick
		k.pushIn(event{kind: eventCommitsStateRequest, tick: tick})
	}
	return b, false
}

// remoteGame is the stand-in world the commits.Client plays: the C game
// holds the real one. It holds only a loaded state's bytes until the
// game is handed them; the committed stand-in's Step asks the game to
// step.
type remoteGame struct {
	k     *commitsClient
	state []byte // LoadCanonical's bytes (copied)
}

var _ sim.CommitGame = (*remoteGame)(nil)

func (g *remoteGame) Schema() sim.Schema {
	return sim.Schema{InputSize: g.k.inputSize}
}
func (g *remoteGame) Clone() sim.CommitGame       { return &remoteGame{k: g.k, state: g.state} }
func (g *remoteGame) CopyFrom(src sim.CommitGame) { g.state = src.(*remoteGame).state }
func (g *remoteGame) Step(t *sim.Tick)            { g.k.step(g, t.Tick) }
func (*remoteGame) ValidateAction(uint16, uint32, []byte) error {
	return nil
}
func (*remoteGame) OnPlayerJoin(*sim.Tick, uint16) error    { return nil }
func (*remoteGame) OnPlayerLeave(*sim.Tick, uint16, string) {}
func (*remoteGame) AppendCanonical(b []byte) []byte         { return b }
func (g *remoteGame) LoadCanonical(b []byte) error {
	if len(b) > maxGameState {
		return fmt.Errorf("tickwire: a committed state of %d bytes", len(b))
	}
	g.state = append([]byte(nil), b...)
	return nil
}
