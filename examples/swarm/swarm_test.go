package swarm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/sim/fixed"
)

// step runs one tick with cmds (player → command) through ValidateAction
// as the engine does.
func step(g *Game, tick uint32, players []uint16, cmds map[uint16]Command) {
	t := &sim.Tick{Tick: tick}
	for _, p := range players {
		in := sim.PlayerInput{Player: p, Data: make([]byte, InputSize), Missing: true}
		if c, ok := cmds[p]; ok {
			in.Data = AppendCommand(in.Data[:0], c)
			in.Missing = false
			if g.ValidateAction(p, tick, in.Data) != nil {
				clear(in.Data)
				in.Rejected = true
			}
		}
		t.Inputs = append(t.Inputs, in)
	}
	g.Step(t)
}

func randomCommands(r *rand.Rand, players []uint16) map[uint16]Command {
	m := map[uint16]Command{}
	for _, p := range players {
		if r.IntN(4) == 0 {
			m[p] = Command{Op: OpMove, Group: uint8(r.IntN(Groups)), X: uint16(r.IntN(WorldSize)), Y: uint16(r.IntN(WorldSize)), Tag: uint16(r.Uint32())}
		}
	}
	return m
}

func TestDeterministic(t *testing.T) {
	players := []uint16{1, 2, 3, 4, 5, 6, 7, 8, 9}
	a, _ := NewGame(DefaultUnits)
	b, _ := NewGame(DefaultUnits)
	c, _ := NewGame(DefaultUnits)
	ra, rc := rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 1))
	for tick := uint32(1); tick <= 300; tick++ {
		cmds := randomCommands(ra, players)
		ccmds := randomCommands(rc, players)
		if tick == 150 {
			ccmds[3] = Command{Op: OpMove, Group: 2, X: 5, Y: 5}
		}
		step(a, tick, players, cmds)
		step(b, tick, players, cmds)
		step(c, tick, players, ccmds)
		if !bytes.Equal(a.AppendCanonical(nil), b.AppendCanonical(nil)) {
			t.Fatalf("tick %d: identical runs differ", tick)
		}
	}
	if bytes.Equal(a.AppendCanonical(nil), c.AppendCanonical(nil)) {
		t.Fatal("a different command changed nothing")
	}
}

// TestFight: two teams sent to one cell fight there; the weaker side
// loses hit points and respawns at its base.
func TestFight(t *testing.T) {
	g, _ := NewGame(DefaultUnits)
	// team 0 sends two groups, team 1 one: team 1 is outnumbered
	step(g, 1, []uint16{1, 2}, map[uint16]Command{1: {Op: OpMove, Group: 0, X: 2048, Y: 2048}, 2: {Op: OpMove, Group: 0, X: 2048, Y: 2048}})
	step(g, 2, []uint16{1}, map[uint16]Command{1: {Op: OpMove, Group: 1, X: 2048, Y: 2048}})
	respawned := false
	for tick := uint32(3); tick < 3000 && !respawned; tick++ {
		step(g, tick, nil, nil)
		for i := range g.Units() {
			if u := g.Unit(i); u.Team == 1 && u.Group == 0 && u.HP < MaxHP {
				respawned = respawned || u.HP == 1
			}
		}
	}
	if !respawned {
		t.Fatal("the outnumbered group never lost a fight")
	}
	for i := range g.Units() {
		if u := g.Unit(i); u.Team == 0 && u.Group <= 1 && u.HP < MaxHP {
			t.Fatalf("the stronger side lost hit points: %+v", u)
		}
	}
}

func TestCloneAndCanonicalRoundTrip(t *testing.T) {
	players := []uint16{1, 2}
	r := rand.New(rand.NewPCG(2, 2))
	g, _ := NewGame(1000)
	g.OnPlayerJoin(nil, 2)
	g.OnPlayerJoin(nil, 1)
	for tick := uint32(1); tick <= 100; tick++ {
		step(g, tick, players, randomCommands(r, players))
	}
	c := g.Clone().(*Game)
	l := &Game{}
	if err := l.LoadCanonical(g.AppendCanonical(nil)); err != nil {
		t.Fatal(err)
	}
	for tick := uint32(101); tick <= 150; tick++ {
		cmds := randomCommands(r, players)
		step(g, tick, players, cmds)
		step(c, tick, players, cmds)
		step(l, tick, players, cmds)
	}
	want := g.AppendCanonical(nil)
	if !bytes.Equal(want, c.AppendCanonical(nil)) || !bytes.Equal(want, l.AppendCanonical(nil)) {
		t.Fatal("clone or loaded copy stepped differently")
	}
	for _, cut := range []int{0, 7, 8, 100, len(want) - 1} {
		if err := l.LoadCanonical(want[:cut]); err == nil {
			t.Fatalf("LoadCanonical accepted %d of %d bytes", cut, len(want))
		}
	}
	bad := bytes.Clone(want)
	bad[8+8] = Teams // first unit's team
	if err := l.LoadCanonical(bad); err == nil {
		t.Fatal("LoadCanonical accepted a bad team")
	}
	if !bytes.Equal(want, l.AppendCanonical(nil)) {
		t.Fatal("a refused state changed the world")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	g, _ := NewStateSync(500)
	var s deltacomp.Snapshot
	s.Reset(1, RecordSize)
	g.WriteSnapshot(&s)
	h := &StateSync{&Game{}}
	if err := h.ReadSnapshot(&s); err != nil {
		t.Fatal(err)
	}
	var s2 deltacomp.Snapshot
	s2.Reset(1, RecordSize)
	h.WriteSnapshot(&s2)
	if !bytes.Equal(s.Records, s2.Records) {
		t.Fatal("records differ after a round trip")
	}
	// A record's named fields (sim.RecordFields) are the unit's values.
	u := g.Unit(2)
	got := map[string]int64{}
	for _, f := range g.AppendRecordFields(nil, s.Record(2)) {
		got[f.Name] = f.Value
	}
	if got["x"] != int64(u.X) || got["y"] != int64(u.Y) || got["team"] != int64(u.Team) || got["group"] != int64(u.Group) || got["hp"] != int64(u.HP) {
		t.Fatalf("fields %v of unit %+v", got, u)
	}
	s.Records[4] = 0xff
	if err := h.ReadSnapshot(&s); err == nil {
		t.Fatal("bad team accepted")
	}
}

func TestValidateAction(t *testing.T) {
	g, _ := NewGame(10)
	cases := []struct {
		c    Command
		want error
	}{
		{Command{Op: OpMove, Group: 1, X: 10, Y: 10}, nil},
		{Command{Op: 2}, ErrUnknownOp},
		{Command{Op: OpMove, Group: Groups}, ErrGroup},
		{Command{Op: OpMove, X: WorldSize}, ErrOutside},
		{Command{Op: OpMove, Y: WorldSize}, ErrOutside},
	}
	for _, c := range cases {
		if err := g.ValidateAction(1, 1, AppendCommand(nil, c.c)); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.c, err, c.want)
		}
	}
}

func TestGroupsMoveToTheirTarget(t *testing.T) {
	g, _ := NewGame(DefaultUnits)
	const tx, ty = 3000, 2500
	dist := func() int64 {
		var sx, sy, n int64
		for i := range g.Units() {
			if u := g.Unit(i); u.Team == 4 && u.Group == 3 {
				sx, sy, n = sx+int64(u.X), sy+int64(u.Y), n+1
			}
		}
		dx, dy := sx/n-(tx*Sub+Sub/2), sy/n-(ty*Sub+Sub/2)
		return fixed.Length(int32(dx), int32(dy))
	}
	before := dist()
	step(g, 1, []uint16{5}, map[uint16]Command{5: {Op: OpMove, Group: 3, X: tx, Y: ty}})
	for tick := uint32(2); tick < 2000; tick++ {
		step(g, tick, []uint16{5}, nil)
	}
	if after := dist(); after*10 > before {
		t.Fatalf("group centroid %d sixteenths from its target, was %d", after, before)
	}
}

func TestStepAllocs(t *testing.T) {
	g, _ := NewGame(DefaultUnits)
	h := g.Clone()
	tick := &sim.Tick{Tick: 1, Inputs: []sim.PlayerInput{{Player: 1, Data: AppendCommand(nil, Command{Op: OpMove, X: 9, Y: 9})}}}
	g.Step(tick)
	if n := testing.AllocsPerRun(20, func() { tick.Tick++; g.Step(tick) }); n != 0 {
		t.Errorf("Step: %v allocs", n)
	}
	if n := testing.AllocsPerRun(20, func() { h.CopyFrom(g) }); n != 0 {
		t.Errorf("CopyFrom: %v allocs", n)
	}
}

func FuzzLoadCanonical(f *testing.F) {
	g, _ := NewGame(3)
	g.OnPlayerJoin(nil, 4)
	f.Add(g.AppendCanonical(nil))
	f.Add([]byte{})
	f.Add(make([]byte, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Game
		if err := l.LoadCanonical(b); err == nil {
			if !bytes.Equal(l.AppendCanonical(nil), b) {
				t.Fatal("accepted state does not re-encode to itself")
			}
		}
	})
}

func FuzzReadSnapshot(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0, 0x12, 50})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s deltacomp.Snapshot
		s.Reset(1, RecordSize)
		for i := 0; i+RecordSize <= len(b); i += RecordSize {
			s.Append(UnitID(i/RecordSize), b[i:i+RecordSize])
		}
		g := StateSync{&Game{}}
		_ = g.ReadSnapshot(&s)
	})
}

func BenchmarkStep(b *testing.B) {
	g, _ := NewGame(DefaultUnits)
	tick := &sim.Tick{Tick: 1, Inputs: []sim.PlayerInput{{Player: 1, Data: AppendCommand(nil, Command{Op: OpMove, X: 2000, Y: 2000})}}}
	b.ReportAllocs()
	for b.Loop() {
		tick.Tick++
		g.Step(tick)
	}
}

// TestSyncTest: swarm passes the engine's sync test (every tick rolled
// back 8 ticks and re-simulated, checksums compared), as a commits-mode
// game.
func TestSyncTest(t *testing.T) {
	g, _ := NewGame(DefaultUnits)
	rep, err := sim.SyncTest(g, sim.SyncTestConfig{Ticks: 120, Rollback: 8, Players: []uint16{1, 2, 3},
		Inputs: func(tick uint32, player uint16) []byte {
			h := fixed.Mix(uint64(tick), uint64(player))
			if h%4 != 0 {
				return nil
			}
			return AppendCommand(nil, Command{Op: OpMove, Group: uint8(h >> 8 % Groups), X: uint16(h >> 16 % WorldSize), Y: uint16(h >> 32 % WorldSize)})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rollbacks != 120 {
		t.Fatalf("%+v", rep)
	}
}

// stateSyncMethods names the methods only state sync calls (sim.Game's
// beyond sim.World) and sim.EntityKinder's.
type stateSyncMethods struct {
	WriteSnapshot, ReadSnapshot, AppendBodies, EntityKind struct{}
}

// commitsOnly puts Game's methods and those names at the same depth: a
// selector below compiles only while Game has no method of that name
// (otherwise it is ambiguous). So Game implements nothing commits mode
// does not call, checked at compile time. (It cannot be a sim.Game
// anyway: its Clone returns a sim.CommitGame.)
type commitsOnly struct {
	*Game
	stateSyncMethods
}

var _ = [...]struct{}{commitsOnly{}.WriteSnapshot, commitsOnly{}.ReadSnapshot, commitsOnly{}.AppendBodies, commitsOnly{}.EntityKind}

// TestCanonicalFields: a canonical state's named fields are the world's
// values, unit by unit; a malformed state is refused.
func TestCanonicalFields(t *testing.T) {
	g, _ := NewGame(10)
	g.OnPlayerJoin(nil, 3)
	g.units[7].HP = 17
	b := g.AppendCanonical(nil)
	fs, err := g.AppendCanonicalFields(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 5*10 + 3*Teams*Groups + 1; len(fs) != want {
		t.Fatalf("%d fields, want %d", len(fs), want)
	}
	found := false
	for _, f := range fs {
		if f.Entity == "unit 7" && f.Name == "hp" {
			found = f.Value == 17
		}
	}
	if !found {
		t.Error("unit 7's hp is not named with its value")
	}
	if _, err := g.AppendCanonicalFields(nil, b[:len(b)-1]); err == nil {
		t.Error("a truncated state was named")
	}
}
