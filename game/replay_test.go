package game

import (
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// TestGameRecorded: a game recorded by its host (Config.Record) and by
// its two clients (Client.Record), over a 20 ms link, the players
// moving: the host's recording re-runs to every checksum and full
// state it holds, and each client's first steps of its own avatar
// agree with the host's states on every tick whose inputs the server
// had in time (replay.Bisect). The host's recorder ends with the game.
func TestGameRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		serverPath := filepath.Join(dir, "server.replay")
		cfg := Config{Record: func(gameID uint64) (*replay.Writer, error) {
			return replay.Create(serverPath, replay.Config{Game: "arena", KeyEvery: 120})
		}}
		r := newGameRigLink(t, cfg, 20*time.Millisecond, nil)
		var clientPaths []string
		var closers []func()
		for i := range 2 {
			gc, err := NewClient(arena.NewGame(0), testrig.FiringInputs(uint64(i), 1, 1, 0), sim.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, fmt.Sprintf("client%d.replay", i+1))
			w, err := replay.Create(path, replay.Config{Game: "arena", GameID: rigGame, KeyEvery: 120})
			if err != nil {
				t.Fatal(err)
			}
			gc.Record(w)
			c := r.dialLayer(uint64(i+1), uint16(i+1), gc, nil)
			closers = append(closers, func() {
				c.Close()
				<-c.Done()
				if err := w.Close(); err != nil {
					t.Error(err)
				}
			})
			clientPaths = append(clientPaths, path)
		}
		time.Sleep(8 * time.Second)
		for _, close := range closers {
			close()
		}
		r.close() // the game ends: its recording is complete
		games := replay.Games{State: func() sim.Game { return arena.NewGame(0) }}
		srv, err := replay.ReadFile(serverPath)
		if err != nil || srv.Err != nil {
			t.Fatal(err, srv.Err)
		}
		rep, err := replay.Check(srv, games)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Mismatch != nil || rep.Steps < 400 || rep.Checksums < 6 || rep.States < 3 {
			t.Fatalf("the host's recording re-runs as %+v", rep)
		}
		for _, path := range clientPaths {
			cli, err := replay.ReadFile(path)
			if err != nil || cli.Err != nil {
				t.Fatal(err, cli.Err)
			}
			b, err := replay.Bisect(srv, cli, games)
			if err != nil {
				t.Fatal(err)
			}
			if b.Diverged || b.Compared < 300 || b.Skipped > b.Compared/10 {
				t.Fatalf("%s against the host's: %+v", path, b)
			}
			t.Logf("%s: %d ticks compared, %d skipped", path, b.Compared, b.Skipped)
		}
	})
}
