package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// newGame builds the handler that runs the embedded game named by -game
// on srv.
func newGame(o *options, log *slog.Logger, srv *tickwire.Server) (*gameHost, error) {
	switch o.game {
	case "arena":
		world, sched := arena.Interest()
		if o.allAvatars {
			// Avatars are seen wherever they are (the browser's
			// minimap shows every player); the rest within the view
			// radius.
			world.Kinds = []interest.Kind{arena.KindPlayer: {AlwaysRelevant: true}}
		}
		host, err := game.NewHost(srv, func(gameID uint64) (game.Game, error) {
			return arena.NewGame(o.npcs), nil
		}, game.Config{
			Interest:  world,
			Scheduler: sched,
			View:      arena.View,
			// The shooter hears how the server judged each of its
			// hitscan shots (the browser's debug overlay draws it).
			SendEffects:      arena.SendShots,
			Sim:              sim.ServerConfig{MaxRewind: o.maxRewind},
			SnapshotInterval: o.snapshotInterval,
			Record:           o.recorder(),
		})
		if err != nil {
			return nil, err
		}
		return newGameHost(o.game, o.tick, log, host), nil
	case "swarm":
		// Commits mode: the server relays the players' group orders and
		// commits ticks; every client simulates all the units.
		host, err := commits.NewHost(srv, func(gameID uint64) (sim.CommitGame, error) {
			return swarm.NewGame(o.units)
		}, commits.Config{Record: o.recorder()})
		if err != nil {
			return nil, err
		}
		return newGameHost(o.game, o.tick, log, host), nil
	case "relay":
		// Commits mode with no game on the server: it orders, relays
		// and commits the clients' commands, compares their checksums
		// with each other, and gets the states that joining and
		// resynchronised clients need from the other clients, checked
		// against the digest a majority of them reported. Any
		// commits-mode game plays on it (the bots' -game swarm).
		relay, err := commits.NewRelay(srv, commits.RelayConfig{InputSize: o.relayInputSize,
			MaxState: o.relayMaxState, StateTimeout: o.relayStateTimeout})
		if err != nil {
			return nil, err
		}
		return newGameHost(o.game, o.tick, log, relay), nil
	}
	return nil, fmt.Errorf("game %q is not embedded", o.game)
}

// recorder is the game hosts' Config.Record for -record: a file per
// game in the directory, named by the game, its id and when it started
// (nil without -record).
func (o *options) recorder() func(gameID uint64) (*replay.Writer, error) {
	if o.record == "" {
		return nil
	}
	return func(gameID uint64) (*replay.Writer, error) {
		if err := os.MkdirAll(o.record, 0o755); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s-game%d-%s.replay", o.game, gameID, time.Now().UTC().Format("20060102T150405.000Z"))
		return replay.Create(filepath.Join(o.record, name), replay.Config{Game: o.game})
	}
}
