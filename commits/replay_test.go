package commits

import (
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// TestCommitsRecorded: TestCommitsDesyncDetected's game, recorded by
// the host (Config.Record) and by both clients (ClientConfig.Record).
// The host's and the sound client's recordings re-run to every
// committed checksum; the flawed client's stops at tick 150. Bisecting
// the two clients' names tick 150 and compares their states there: the
// flawed client wrote the states it held once the server found its
// desync.
func TestCommitsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := func(name string) string { return filepath.Join(dir, name) }
		create := func(name string, id uint64) *replay.Writer {
			w, err := replay.Create(path(name), replay.Config{Game: "swarm", GameID: id, KeyEvery: 120})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		r := newCommitRig(t, Config{Record: func(id uint64) (*replay.Writer, error) { return create("host.replay", id), nil }})
		var writers []*replay.Writer
		r.record = func(id uint64) *replay.Writer {
			w := create(fmt.Sprintf("client%d.replay", id), rigGame)
			writers = append(writers, w)
			return w
		}
		const at = 150
		ps := r.dialFlawed(at)
		runCommits(t, ps, 8*time.Second)
		for _, p := range ps {
			p.cc.Close()
		}
		for _, w := range writers {
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r.close()
		games := replay.Games{Commits: func() sim.CommitGame { g, _ := swarm.NewGame(1); return g }}
		read := func(name string) *replay.Recording {
			rec, err := replay.ReadFile(path(name))
			if err != nil || rec.Err != nil {
				t.Fatal(err, rec.Err)
			}
			return rec
		}
		host, one, two := read("host.replay"), read("client1.replay"), read("client2.replay")
		for _, rec := range []*replay.Recording{host, one, two} {
			rep, err := replay.Check(rec, games)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v", rec.Path, rep)
			sound := rec != two && rep.Mismatch == nil && rep.Steps > 250
			flawed := rec == two && rep.Mismatch != nil && rep.Mismatch.Tick == at && rep.Mismatch.What == "checksum"
			if !sound && !flawed {
				t.Fatalf("%s re-runs as %+v", rec.Path, rep)
			}
		}
		b, err := replay.Bisect(one, two, games)
		if err != nil {
			t.Fatal(err)
		}
		if !b.Diverged || b.Tick != at || b.StateTick != at || len(b.Differences) == 0 || b.Note != "" {
			t.Fatalf("bisect %+v", b)
		}
		t.Logf("bisect: tick %d, %d entities differ, first %+v", b.Tick, len(b.Differences), b.Differences[0])
	})
}
