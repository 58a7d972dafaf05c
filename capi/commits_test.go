//go:build cgo

package main

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/sim"
)

// startRelay serves a commits.Relay (tickwire-server -game relay) on a
// loopback socket until the test ends; its tokens come from
// testServer.token.
func startRelay(t testing.TB, cfg tickwire.Config, rcfg commits.RelayConfig) *testServer {
	t.Helper()
	s := startServer(t, false, cfg)
	relay, err := commits.NewRelay(s.srv, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	s.srv.Handle(relay)
	return s
}

// ledger is a foreign game as a C game plays through the ABI, in Go
// over the handle's events: each player's total of the commands it ran,
// and the ticks' checksums. Its canonical bytes: per player (ascending)
// the slot (uint16 LE) and the total (uint64 LE).
type ledger struct {
	k       *commitsClient
	totals  map[uint16]uint64
	pending []uint64 // the tick's commands' values, not yet stepped
	who     []uint16
	tick    uint32
	sums    map[uint32]uint64
	ran     map[uint64]uint32 // command value → tick it ran
	loaded  int
	loadLen int
	asked   int
}

func newLedger(k *commitsClient) *ledger {
	return &ledger{k: k, totals: map[uint16]uint64{}, sums: map[uint32]uint64{}, ran: map[uint64]uint32{}}
}

func (g *ledger) canonical() []byte {
	var b []byte
	for _, p := range slices.Sorted(maps.Keys(g.totals)) {
		b = binary.LittleEndian.AppendUint16(b, p)
		b = binary.LittleEndian.AppendUint64(b, g.totals[p])
	}
	return b
}

// present reports whether the player's join has run in the committed
// world: its commands run from then on.
func (g *ledger) present() bool {
	tc, r := g.k.accepted()
	if r != resOK {
		return false
	}
	for _, p := range tc.Players() {
		if _, ok := g.totals[p]; ok {
			return true
		}
	}
	return false
}

// frame runs one frame: update, then every event.
func (g *ledger) frame(t testing.TB) {
	t.Helper()
	g.k.update(0)
	for {
		var e event
		r := g.k.poll(func(ev *event) (result, string) {
			if ev != nil {
				e = *ev
			}
			return resOK, ""
		})
		if r != resOK {
			t.Fatal(r)
		}
		switch e.kind {
		case eventNone:
			return
		case eventDisconnected:
			t.Fatalf("disconnected: %s", g.k.lastErr())
		case eventCommitsState:
			g.totals = map[uint16]uint64{}
			for b := e.data; len(b) >= 10; b = b[10:] {
				g.totals[binary.LittleEndian.Uint16(b)] = binary.LittleEndian.Uint64(b[2:])
			}
			g.tick, g.pending, g.who = e.tick, nil, nil
			g.loaded++
			g.loadLen = len(e.data)
		case eventCommitsCommand:
			switch sim.CommandKind(e.command) {
			case sim.CommandJoin:
				g.totals[uint16(e.player)] += 0
			case sim.CommandLeave:
				delete(g.totals, uint16(e.player))
			}
			if e.command == uint32(sim.CommandInput) {
				g.pending = append(g.pending, binary.LittleEndian.Uint64(e.data))
				g.who = append(g.who, uint16(e.player))
			}
		case eventCommitsTick:
			if e.tick != g.tick+1 {
				t.Fatalf("tick %d after %d", e.tick, g.tick)
			}
			for i, v := range g.pending {
				g.totals[g.who[i]] += v
				g.ran[v] = e.tick
			}
			g.tick, g.pending, g.who = e.tick, nil, nil
			h := fnv.New64a()
			h.Write(g.canonical())
			g.sums[e.tick] = h.Sum64()
			g.k.report(e.tick, g.sums[e.tick])
		case eventCommitsStateRequest:
			if e.tick != g.tick {
				t.Fatalf("state asked for tick %d at %d", e.tick, g.tick)
			}
			g.asked++
			g.k.answer(e.tick, g.canonical())
		}
	}
}

// TestCommitsRelay plays a foreign game through the commits ABI's Go
// side against a relay: two clients issue commands for a second, a third
// joins and loads the state one of them uploaded, and all three run the
// same commands at the same ticks with the same checksums.
func TestCommitsRelay(t *testing.T) {
	srv := startRelay(t, tickwire.Config{}, commits.RelayConfig{})
	var games []*ledger
	join := func(id uint64) *ledger {
		k, err := newCommitsClient(srv.token(t, id, uint16(id)), "", tickwire.Config{}, nil, 8, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			handles.remove(k.handle)
			k.free()
		})
		g := newLedger(k)
		games = append(games, g)
		return g
	}
	run := func(until func() bool) {
		deadline := time.Now().Add(30 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatal("not within 30 s")
			}
			for _, g := range games {
				g.frame(t)
			}
			time.Sleep(5 * time.Millisecond) // a frame
		}
	}
	a, b := join(1), join(2)
	run(func() bool { return a.present() && b.present() })
	issued := 0
	var value uint64 = 1000
	start, n := a.tick, 0
	var last uint32 // the latest tick a command was scheduled for
	run(func() bool {
		if n++; n%4 != 0 {
			return false
		}
		for _, g := range []*ledger{a, b} {
			value++
			var cmd [8]byte
			binary.LittleEndian.PutUint64(cmd[:], value)
			if at, r := g.k.issue(cmd[:]); r == resOK {
				issued++
				last = max(last, at)
			}
		}
		return a.tick > start+200 // past the relay's genesis (half its 4 s buffer): a joiner needs a state
	})
	c := join(3)
	run(func() bool {
		return c.loaded > 0 && len(c.sums) > 40 && a.k.cc.Stats().Committed > last && b.k.cc.Stats().Committed > last
	})
	if c.loadLen == 0 || a.asked+b.asked == 0 {
		t.Fatalf("the joiner loaded %d bytes; states asked of the others: %d", c.loadLen, a.asked+b.asked)
	}
	checked := 0
	for tick, sum := range c.sums {
		for _, g := range []*ledger{a, b} {
			if s, ok := g.sums[tick]; ok {
				checked++
				if s != sum {
					t.Fatalf("tick %d: checksum %x and %x", tick, s, sum)
				}
			}
		}
	}
	for v, at := range a.ran {
		if b.ran[v] != at {
			t.Fatalf("command %d ran at tick %d and %d", v, at, b.ran[v])
		}
	}
	// Every command's tick is committed by now. A client the relay took
	// out of the commit for being slow (a starved process on a busy
	// machine) loses the commands it had not yet had committed: most
	// issued commands run only when neither was.
	as, bs := a.k.cc.Stats(), b.k.cc.Stats()
	kicks := as.Kicks + bs.Kicks + as.Rejoins + bs.Rejoins
	if checked < 10 || len(a.ran) == 0 || kicks == 0 && len(a.ran) < issued*3/4 {
		t.Fatalf("%d commands issued, %d ran; %d checksums compared; %d kicks and rejoins", issued, len(a.ran), checked, kicks)
	}
	st := a.k.stats()
	t.Logf("%d kicks and rejoins of the two players", kicks)
	t.Logf("%d commands issued, %d ran; the joiner loaded %d bytes at tick %d; %d checksums compared; a: %d sums sent, %d states uploaded",
		issued, len(a.ran), c.loadLen, c.k.cc.Stats().Committed, checked, st.SumsSent, st.StatesUploaded+b.k.stats().StatesUploaded)
}
