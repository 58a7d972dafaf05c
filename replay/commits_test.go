package replay

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// swarmGames is the swarm for a re-run.
var swarmGames = Games{Commits: func() sim.CommitGame { g, _ := swarm.NewGame(1); return g }}

// commitRig drives a commits-mode Lockstep over the swarm with a
// recorder on it: four players join at tick 2 and order their groups
// about at random.
type commitRig struct {
	t   testing.TB
	ls  *sim.Lockstep
	rec *CommitRecorder
	rng *rand.Rand
	seq map[uint16]uint32
	cmd []byte
}

func newCommitRig(t testing.TB, path string, cfg Config, role Role, game sim.CommitGame) *commitRig {
	t.Helper()
	w, err := Create(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewCommitRecorder(w, role, 7, game, []uint16{1}, 60)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := sim.NewLockstep(game, 0, nil, sim.LockstepConfig{SumHistory: 8, Committed: rec.Command, CommittedTick: rec.CommittedTick})
	if err != nil {
		t.Fatal(err)
	}
	rec.Use(ls)
	rec.Loaded(ls, 0)
	r := &commitRig{t: t, ls: ls, rec: rec, rng: rand.New(rand.NewPCG(3, 4)), seq: map[uint16]uint32{}}
	for p := uint16(1); p <= 4; p++ {
		ls.Add(&sim.Command{Kind: sim.CommandJoin, Player: p, Tick: 2, Seq: uint32(p)})
	}
	return r
}

// tick orders a few groups about at the next tick and commits it.
func (r *commitRig) tick() {
	next := r.ls.CommittedTick() + 1
	for p := uint16(1); p <= 4; p++ {
		if next < 3 || r.rng.IntN(8) != 0 {
			continue
		}
		r.seq[p]++
		r.cmd = swarm.AppendCommand(r.cmd[:0], swarm.Command{Op: swarm.OpMove, Group: uint8(r.rng.IntN(swarm.Groups)),
			X: uint16(r.rng.IntN(swarm.WorldSize)), Y: uint16(r.rng.IntN(swarm.WorldSize))})
		if err := r.ls.Add(&sim.Command{Player: p, Tick: next, Seq: r.seq[p], Data: r.cmd}); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.ls.Commit(next); err != nil {
		r.t.Fatal(err)
	}
}

func (r *commitRig) close() {
	if err := r.rec.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// TestCommitRecordingReruns: a commits-mode recording re-runs to every
// committed checksum and state it holds.
func TestCommitRecordingReruns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "commits.replay")
	g, _ := swarm.NewGame(200)
	r := newCommitRig(t, path, Config{Game: "swarm", KeyEvery: 100}, RoleCommitsServer, g)
	for range 450 {
		r.tick()
	}
	r.close()
	rec, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(rec, swarmGames)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mismatch != nil || rep.Steps != 450 || rep.Checksums != 450 || rep.States != 4 {
		t.Fatalf("re-run %+v", rep)
	}
}

// recordCommitClients records two commits-mode clients of the same
// game, B with the corrupt rule at tick 150; B's server finds its
// desync at tick 200 (its recorder writes the states it kept) if
// found.
func recordCommitClients(t *testing.T, found bool) (a, b *Recording) {
	dir := t.TempDir()
	for i, name := range []string{"a.replay", "b.replay"} {
		g, _ := swarm.NewGame(100)
		var game sim.CommitGame = g
		if i == 1 {
			game = &testrig.FlawedSwarm{Game: g, At: 150, Unit: 17}
		}
		r := newCommitRig(t, filepath.Join(dir, name), Config{Game: "swarm", KeyEvery: 100}, RoleCommitsClient, game)
		for range 300 {
			r.tick()
			if i == 1 && found && r.ls.CommittedTick() == 200 {
				r.rec.Loaded(r.ls, proto.ResyncChecksum)
			}
		}
		r.close()
	}
	var err error
	if a, err = ReadFile(filepath.Join(dir, "a.replay")); err != nil {
		t.Fatal(err)
	}
	if b, err = ReadFile(filepath.Join(dir, "b.replay")); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestBisectCommits: two commits-mode clients, one of which runs a rule
// that takes 7 hp from unit 17 at tick 150: Bisect names tick 150, unit
// 17 and its hp, with the values of each, and the commands of the tick.
// Without the states B kept before its desync, it names tick 150 from
// the checksums and compares the next states both recorded.
func TestBisectCommits(t *testing.T) {
	a, b := recordCommitClients(t, true)
	rep, err := Bisect(a, b, swarmGames)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if !rep.Diverged || rep.Tick != 150 || rep.StateTick != 150 || len(rep.Differences) != 1 {
		t.Fatalf("bisect %+v", rep)
	}
	d := rep.Differences[0]
	if d.Entity != "unit 17" || len(d.Fields) != 1 || d.Fields[0].Name != "hp" || d.Fields[0].A-d.Fields[0].B != 7 {
		t.Fatalf("difference %+v", d)
	}

	a, b = recordCommitClients(t, false)
	rep, err = Bisect(a, b, swarmGames)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if !rep.Diverged || rep.Tick != 150 || rep.StateTick != 200 || len(rep.Differences) == 0 || rep.Note == "" {
		t.Fatalf("bisect without B's states %+v", rep)
	}
}

// TestTimeline: the timeline of a bisection draws a lane per recording
// with its checksums, full states and joins, the agreeing ticks, and
// the divergence marked at its tick; the timeline of a re-run draws its
// one lane.
func TestTimeline(t *testing.T) {
	a, b := recordCommitClients(t, true)
	rep, err := Bisect(a, b, swarmGames)
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	tl := Timeline{Recordings: []*Recording{a, b}, Bisect: &rep}
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	for _, want := range []string{"<svg", `class="lane"`, `id="divergence"`, "first divergence: tick 150", `class="agree"`,
		"ticks 1 to 149 agree", "full state, tick 100", "player 3 joins", "</svg>"} {
		if !strings.Contains(s, want) {
			t.Errorf("the timeline has no %q", want)
		}
	}
	if n := strings.Count(s, `<g class="lane"`); n != 2 {
		t.Errorf("%d lanes, want 2", n)
	}

	rec, err := Check(a, swarmGames)
	if err != nil {
		t.Fatal(err)
	}
	page.Reset()
	tl = Timeline{Recordings: []*Recording{a}, Checks: []*CheckReport{&rec}}
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if s := page.String(); strings.Count(s, `<g class="lane"`) != 1 || strings.Contains(s, `id="divergence"`) || !strings.Contains(s, "No divergence") {
		t.Errorf("the timeline of a re-run that agrees:\n%s", s)
	}
}
