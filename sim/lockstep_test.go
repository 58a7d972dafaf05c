package sim

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// lsGame is the Lockstep tests' world: a running hash of everything that
// happened, in order (every step, join, leave and input with its tick and
// player), so that any difference in what ran, when or in which order
// changes its state.
type lsGame struct {
	h       uint64
	players []uint16
}

var errLsAction = errors.New("lsGame: action 0xff refused")

func (g *lsGame) mix(v uint64) { g.h = (g.h ^ v) * 1099511628211 }

func (g *lsGame) Schema() Schema    { return Schema{InputSize: 2, ActionBytes: 1} }
func (g *lsGame) Clone() CommitGame { c := *g; c.players = slices.Clone(g.players); return &c }
func (g *lsGame) CopyFrom(src CommitGame) {
	s := src.(*lsGame)
	g.h = s.h
	g.players = append(g.players[:0], s.players...)
}
func (g *lsGame) Step(t *Tick) {
	g.mix(uint64(t.Tick))
	for _, in := range t.Inputs {
		if !in.Missing {
			g.mix(uint64(in.Player)<<16 | uint64(in.Data[0])<<8 | uint64(in.Data[1]))
		}
	}
}
func (g *lsGame) ValidateAction(player uint16, tick uint32, action []byte) error {
	if action[0] == 0xff {
		return errLsAction
	}
	return nil
}
func (g *lsGame) OnPlayerJoin(t *Tick, p uint16) error {
	g.mix(1<<40 | uint64(p))
	g.players = append(g.players, p)
	return nil
}
func (g *lsGame) OnPlayerLeave(t *Tick, p uint16, reason string) {
	g.mix(2<<40 | uint64(p))
	g.players = slices.DeleteFunc(g.players, func(q uint16) bool { return q == p })
}
func (g *lsGame) AppendCanonical(b []byte) []byte {
	w := NewCanonicalWriter(b)
	w.Uint64(g.h)
	w.Count(len(g.players))
	for _, p := range g.players {
		w.Uint16(p)
	}
	return w.Bytes()
}
func (g *lsGame) LoadCanonical(b []byte) error {
	r := NewCanonicalReader(b)
	h := r.Uint64()
	players := make([]uint16, r.Count(2))
	for i := range players {
		players[i] = r.Uint16()
	}
	if err := r.Finish(); err != nil {
		return err
	}
	g.h, g.players = h, players
	return nil
}

// lsScript is a game's history: joins, leaves and commands by tick.
func lsScript(r *rand.Rand, ticks uint32) []Command {
	var cmds []Command
	seq := map[uint16]uint32{}
	sys := uint32(0)
	for _, p := range []uint16{1, 2, 3} {
		sys++
		cmds = append(cmds, Command{Kind: CommandJoin, Player: p, Tick: 1 + uint32(p), Seq: sys})
	}
	for t := uint32(5); t <= ticks; t++ {
		for _, p := range []uint16{1, 2, 3} {
			if r.IntN(3) == 0 {
				seq[p]++
				a := byte(r.IntN(4))
				if r.IntN(20) == 0 {
					a = 0xff
				}
				cmds = append(cmds, Command{Player: p, Tick: t, Seq: seq[p], Data: []byte{byte(r.IntN(256)), a}})
			}
		}
		if t == ticks/2 {
			sys++
			cmds = append(cmds, Command{Kind: CommandLeave, Player: 2, Tick: t, Seq: sys})
		}
	}
	return cmds
}

// TestLockstepConvergesWhateverTheArrival: two peers get the same
// commands, one in tick order and on time, the other late and shuffled
// (each arrival a rollback); at every commit both committed worlds are
// equal, and at the end the late peer's live world equals the punctual
// one's. Every command is executed once by the committed world, at its
// tick, and shown once.
func TestLockstepConvergesWhateverTheArrival(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const ticks = 200
	script := lsScript(r, ticks)

	type key struct {
		k CommandKind
		p uint16
		s uint32
	}
	var execA, execB []Command
	shownB := map[key]int{}
	a, err := NewLockstep(&lsGame{}, 0, nil, LockstepConfig{Capacity: 64, SumHistory: 32,
		Committed: func(c *Command) {
			execA = append(execA, Command{Kind: c.Kind, Player: c.Player, Tick: c.Tick, Seq: c.Seq})
		}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLockstep(&lsGame{}, 0, nil, LockstepConfig{Capacity: 64, SumHistory: 32,
		Committed: func(c *Command) {
			execB = append(execB, Command{Kind: c.Kind, Player: c.Player, Tick: c.Tick, Seq: c.Seq})
		},
		Shown: func(c *Command) { shownB[key{c.Kind, c.Player, c.Seq}]++ }})

	next := 0
	var lateB []Command
	for now := uint32(1); now <= ticks+10; now++ {
		// a: every command of tick now+0 arrives before the tick runs.
		for next < len(script) && script[next].Tick <= now {
			c := script[next]
			if err := a.Add(&c); err != nil {
				t.Fatalf("a.Add %+v: %v", c, err)
			}
			lateB = append(lateB, c)
			next++
		}
		a.AdvanceLive(now)
		// b: its commands arrive 1..6 ticks late, in shuffled order.
		b.AdvanceLive(now)
		r.Shuffle(len(lateB), func(i, j int) { lateB[i], lateB[j] = lateB[j], lateB[i] })
		keep := lateB[:0]
		for _, c := range lateB {
			if now >= c.Tick+1+uint32(r.IntN(6)) {
				if err := b.Add(&c); err != nil {
					t.Fatalf("b.Add %+v: %v", c, err)
				}
			} else {
				keep = append(keep, c)
			}
		}
		lateB = keep
		// commit what both certainly have: 8 ticks back
		if now > 8 {
			c := now - 8
			if err := a.Commit(c); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(c); err != nil {
				t.Fatal(err)
			}
			sa, _ := a.CommittedSum(c)
			sb, ok := b.CommittedSum(c)
			if !ok || sa != sb {
				t.Fatalf("tick %d: committed sums %x %x", c, sa, sb)
			}
		}
	}
	var s Checksummer
	if s.WorldSum(a.Live()) != s.WorldSum(b.Live()) || a.LiveTick() != b.LiveTick() {
		t.Fatal("live worlds differ")
	}
	if !slices.EqualFunc(execA, execB, func(x, y Command) bool {
		return x.Kind == y.Kind && x.Player == y.Player && x.Tick == y.Tick && x.Seq == y.Seq
	}) {
		t.Fatal("committed worlds executed different commands")
	}
	seen := map[key]bool{}
	for _, c := range execA {
		k := key{c.Kind, c.Player, c.Seq}
		if seen[k] {
			t.Fatalf("command %+v executed twice", c)
		}
		seen[k] = true
	}
	for _, c := range script {
		if c.Tick > ticks+2 {
			continue
		}
		k := key{c.Kind, c.Player, c.Seq}
		if !seen[k] && !(c.Kind == CommandInput && c.Player == 2 && c.Tick >= ticks/2) {
			t.Fatalf("command %+v never executed", c)
		}
		if shownB[k] > 1 {
			t.Fatalf("command %+v shown %d times", c, shownB[k])
		}
	}
	st := b.Stats()
	if st.Rollbacks == 0 || st.Replayed == 0 {
		t.Fatalf("late peer never rolled back: %+v", st)
	}
	if a.Stats().Rollbacks != 0 {
		t.Fatalf("punctual peer rolled back: %+v", a.Stats())
	}
	if st.Rejected == 0 {
		t.Fatal("no action was rejected: the script's 0xff actions should be")
	}
	if got := b.Players(); !slices.Equal(got, []uint16{1, 3}) {
		t.Fatalf("players %v, want [1 3]", got)
	}
}

func TestLockstepMoveAndErrors(t *testing.T) {
	l, _ := NewLockstep(&lsGame{}, 10, []uint16{1, 2}, LockstepConfig{Capacity: 16})
	add := func(c Command) error { return l.Add(&c) }
	if err := add(Command{Player: 1, Tick: 10, Seq: 1, Data: []byte{1, 0}}); !errors.Is(err, ErrCommandLate) {
		t.Fatalf("late: %v", err)
	}
	if err := add(Command{Player: 1, Tick: 27, Seq: 1, Data: []byte{1, 0}}); !errors.Is(err, ErrCommandAhead) {
		t.Fatalf("ahead: %v", err)
	}
	if err := add(Command{Player: 1, Tick: 12, Seq: 1, Data: []byte{1}}); !errors.Is(err, ErrCommandSize) {
		t.Fatalf("size: %v", err)
	}
	if err := add(Command{Kind: 9, Player: 1, Tick: 12, Seq: 1}); !errors.Is(err, ErrCommandKind) {
		t.Fatalf("kind: %v", err)
	}
	if err := add(Command{Player: 1, Tick: 12, Seq: 1, Data: []byte{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := add(Command{Player: 1, Tick: 12, Seq: 1, Data: []byte{1, 0}}); err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if err := add(Command{Player: 1, Tick: 12, Seq: 2, Data: []byte{2, 0}}); !errors.Is(err, ErrCommandConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if err := add(Command{Player: 2, Tick: 12, Seq: 1, Data: []byte{3, 0}}); err != nil {
		t.Fatal(err)
	}
	l.AdvanceLive(14)
	// The server moved player 1's seq 1 to tick 13: live replays.
	if err := add(Command{Player: 1, Tick: 13, Seq: 1, Data: []byte{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if l.Buffered() != 2 {
		t.Fatalf("buffered %d, want 2", l.Buffered())
	}
	ref, _ := NewLockstep(&lsGame{}, 10, []uint16{1, 2}, LockstepConfig{Capacity: 16})
	ref.Add(&Command{Player: 2, Tick: 12, Seq: 1, Data: []byte{3, 0}})
	ref.Add(&Command{Player: 1, Tick: 13, Seq: 1, Data: []byte{1, 0}})
	ref.AdvanceLive(14)
	var s Checksummer
	if s.WorldSum(l.Live()) != s.WorldSum(ref.Live()) {
		t.Fatal("moved command: live differs from a world that had it there all along")
	}
	if l.Stats().Moved != 1 || l.Stats().Rollbacks != 1 {
		t.Fatalf("stats %+v", l.Stats())
	}
	if err := l.Commit(9); !errors.Is(err, ErrCommitBackwards) {
		t.Fatalf("commit backwards: %v", err)
	}
	// Live never runs past the buffer.
	if n := l.AdvanceLive(100); l.LiveTick() != 26 || n != 12 {
		t.Fatalf("live at %d after %d steps, want 26", l.LiveTick(), n)
	}
}

func TestLockstepState(t *testing.T) {
	l, _ := NewLockstep(&lsGame{}, 0, nil, LockstepConfig{})
	l.Add(&Command{Kind: CommandJoin, Player: 4, Tick: 1, Seq: 1})
	l.Add(&Command{Player: 4, Tick: 3, Seq: 1, Data: []byte{7, 1}})
	l.Commit(5)
	state := l.AppendState(nil)

	m, _ := NewLockstep(&lsGame{}, 0, nil, LockstepConfig{})
	m.Add(&Command{Player: 9, Tick: 2, Seq: 1, Data: []byte{1, 1}})
	if err := m.LoadState(state); err != nil {
		t.Fatal(err)
	}
	var s Checksummer
	if m.CommittedTick() != 5 || m.LiveTick() != 5 || s.WorldSum(m.Committed()) != s.WorldSum(l.Committed()) ||
		!slices.Equal(m.Players(), []uint16{4}) || m.Buffered() != 0 {
		t.Fatal("loaded state differs")
	}
	for _, bad := range [][]byte{nil, state[:5], state[:7], append(slices.Clone(state[:6]), 1, 2, 3)} {
		if err := m.LoadState(bad); err == nil {
			t.Fatalf("LoadState(%x) accepted", bad)
		}
	}
	dup := slices.Clone(state[:4])
	dup = append(dup, 2, 0, 4, 0, 4, 0)
	dup = append(dup, state[8:]...)
	if err := m.LoadState(dup); err == nil {
		t.Fatal("duplicate players accepted")
	}
	if s.WorldSum(m.Committed()) != s.WorldSum(l.Committed()) {
		t.Fatal("a refused state changed the committed world")
	}
}

// TestLockstepSteadyStateAllocs: adding, advancing and committing,
// rebuilds, callbacks and refusals included, allocate nothing.
func TestLockstepSteadyStateAllocs(t *testing.T) {
	calls := 0
	l, _ := NewLockstep(&lsGame{players: make([]uint16, 0, 8)}, 0, []uint16{1, 2, 3}, LockstepConfig{Capacity: 64, SumHistory: 64,
		Committed: func(*Command) { calls++ }, Shown: func(*Command) { calls++ }, Rejected: func(*Command, error) { calls++ }})
	tick := uint32(0)
	data := []byte{1, 0xff} // refused
	round := func() {
		tick++
		for p := uint16(1); p <= 3; p++ {
			l.Add(&Command{Player: p, Tick: tick + 2, Seq: tick, Data: data})
		}
		l.Add(&Command{Player: 1, Tick: tick + 1, Seq: 1 << 30, Data: data})
		l.AdvanceLive(tick)
		l.Commit(tick - 1)
	}
	for range 200 {
		round()
	}
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("%v allocations per tick", n)
	}
}

// TestLockstepTentative: a shortcut copy runs in live at once; its
// confirmed copy (same name) keeps it; one never confirmed is dropped
// before the committed world runs its tick, and live is rebuilt without
// it; a shortcut never moves a confirmed copy.
func TestLockstepTentative(t *testing.T) {
	l, _ := NewLockstep(&lsGame{}, 0, []uint16{1, 2}, LockstepConfig{})
	ref, _ := NewLockstep(&lsGame{}, 0, []uint16{1, 2}, LockstepConfig{})
	add := func(l *Lockstep, c Command) {
		if err := l.Add(&c); err != nil {
			t.Fatal(err)
		}
	}
	l.AdvanceLive(5)
	add(l, Command{Player: 1, Tick: 3, Seq: 1, Data: []byte{1, 0}, Tentative: true}) // confirmed later
	add(l, Command{Player: 2, Tick: 4, Seq: 1, Data: []byte{2, 0}, Tentative: true}) // never confirmed
	if p, tent := l.Has(CommandInput, 2, 1); !p || !tent {
		t.Fatal("tentative copy not held")
	}
	var s Checksummer
	live := s.WorldSum(l.Live())
	add(l, Command{Player: 1, Tick: 3, Seq: 1, Data: []byte{1, 0}})
	if s.WorldSum(l.Live()) != live || l.Stats().Rollbacks != 1 {
		t.Fatalf("confirming rebuilt live: %+v", l.Stats())
	}
	// A late shortcut of a confirmed command at another tick changes nothing.
	add(l, Command{Player: 1, Tick: 5, Seq: 1, Data: []byte{1, 0}, Tentative: true})
	if p, tent := l.Has(CommandInput, 1, 1); !p || tent {
		t.Fatal("confirmed copy lost or marked tentative")
	}
	if err := l.Commit(5); err != nil {
		t.Fatal(err)
	}
	add(ref, Command{Player: 1, Tick: 3, Seq: 1, Data: []byte{1, 0}})
	ref.Commit(5)
	if s.WorldSum(l.Committed()) != s.WorldSum(ref.Committed()) {
		t.Fatal("the committed world ran an unconfirmed copy")
	}
	if st := l.Stats(); st.Tentative != 2 || st.Confirmed != 1 || st.Discarded != 1 {
		t.Fatalf("stats %+v", st)
	}
	l.AdvanceLive(8)
	ref.AdvanceLive(8)
	if s.WorldSum(l.Live()) != s.WorldSum(ref.Live()) {
		t.Fatal("live still holds the discarded copy")
	}
}

// TestLockstepMoveKeepsTheOthersInputs: moving an input out of a tick
// leaves the inputs added after it intact, whatever the order they were
// added in.
func TestLockstepMoveKeepsTheOthersInputs(t *testing.T) {
	got := map[uint16][]byte{}
	l, _ := NewLockstep(&lsGame{}, 10, []uint16{1, 2, 3}, LockstepConfig{
		Committed: func(c *Command) { got[c.Player] = slices.Clone(c.Data) }})
	for _, c := range []Command{
		{Player: 2, Tick: 12, Seq: 1, Data: []byte{2, 2}},
		{Player: 3, Tick: 12, Seq: 1, Data: []byte{3, 3}},
		{Player: 1, Tick: 12, Seq: 1, Data: []byte{1, 1}},
		{Player: 2, Tick: 13, Seq: 1, Data: []byte{2, 2}}, // moves player 2's
	} {
		if err := l.Add(&c); err != nil {
			t.Fatal(err)
		}
	}
	l.Commit(13)
	for p, want := range map[uint16][]byte{1: {1, 1}, 2: {2, 2}, 3: {3, 3}} {
		if !slices.Equal(got[p], want) {
			t.Errorf("player %d ran %v, want %v", p, got[p], want)
		}
	}
}

// TestLockstepRejected: the committed world reports each command its
// ValidateAction refuses once, as sent (tick, seq, the refused action
// still in its data) with the game's reason; live's refusals, rebuilds
// included, are not reported.
func TestLockstepRejected(t *testing.T) {
	type refusal struct {
		player uint16
		tick   uint32
		seq    uint32
		data   []byte
		reason error
	}
	var got []refusal
	l, _ := NewLockstep(&lsGame{}, 0, []uint16{1, 2}, LockstepConfig{
		Rejected: func(c *Command, reason error) {
			got = append(got, refusal{c.Player, c.Tick, c.Seq, slices.Clone(c.Data), reason})
		}})
	for _, c := range []Command{
		{Player: 1, Tick: 3, Seq: 1, Data: []byte{7, 0xff}},
		{Player: 2, Tick: 3, Seq: 1, Data: []byte{7, 1}},
		{Player: 2, Tick: 5, Seq: 2, Data: []byte{9, 0xff}},
	} {
		if err := l.Add(&c); err != nil {
			t.Fatal(err)
		}
	}
	l.AdvanceLive(6)
	// A late command rebuilds live, which refuses both again.
	if err := l.Add(&Command{Player: 1, Tick: 2, Seq: 0, Data: []byte{1, 1}}); err != nil {
		t.Fatal(err)
	}
	l.AdvanceLive(6)
	if len(got) != 0 {
		t.Fatalf("live's refusals reported: %+v", got)
	}
	l.Commit(4)
	l.Commit(6)
	want := []refusal{{1, 3, 1, []byte{7, 0xff}, errLsAction}, {2, 5, 2, []byte{9, 0xff}, errLsAction}}
	if len(got) != len(want) {
		t.Fatalf("reported %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.player != w.player || g.tick != w.tick || g.seq != w.seq || !slices.Equal(g.data, w.data) || g.reason != w.reason {
			t.Errorf("refusal %d: %+v, want %+v", i, g, w)
		}
	}
	if st := l.Stats(); st.Rejected != 2 {
		t.Errorf("Rejected %d", st.Rejected)
	}
}

// TestLockstepCommittedTick: CommittedTick is called once per committed
// tick, in order, with the committed world's canonical bytes and the
// sum CommittedSum reports for that tick.
func TestLockstepCommittedTick(t *testing.T) {
	var ticks []uint32
	var states [][]byte
	var sums []uint64
	l, _ := NewLockstep(&lsGame{}, 0, nil, LockstepConfig{SumHistory: 16, CommittedTick: func(tick uint32, canonical []byte, sum uint64) {
		ticks = append(ticks, tick)
		states = append(states, slices.Clone(canonical))
		sums = append(sums, sum)
	}})
	l.Add(&Command{Kind: CommandJoin, Player: 4, Tick: 1, Seq: 1})
	l.Add(&Command{Player: 4, Tick: 3, Seq: 1, Data: []byte{7, 1}})
	l.Commit(2)
	l.Commit(5)
	if !slices.Equal(ticks, []uint32{1, 2, 3, 4, 5}) {
		t.Fatalf("called for ticks %v", ticks)
	}
	var s Checksummer
	for i, tick := range ticks {
		if want, _ := l.CommittedSum(tick); sums[i] != want {
			t.Errorf("tick %d: sum %x, CommittedSum %x", tick, sums[i], want)
		}
		if fnv1a(fnvOffset, states[i]) != sums[i] {
			t.Errorf("tick %d: the bytes are not those summed", tick)
		}
	}
	if string(states[4]) != string(l.Committed().AppendCanonical(nil)) || sums[4] != s.WorldSum(l.Committed()) {
		t.Error("the last call's bytes are not the committed world's")
	}
}
