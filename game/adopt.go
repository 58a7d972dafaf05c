package game

import (
	"errors"
	"slices"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// LeftInMigration is the reason given when a player an adopted game
// awaited did not re-dial in time.
const LeftInMigration = "lost in migration"

// Migration describes the host migration that brings an adopted game
// here.
type Migration struct {
	Epoch uint32        // the new host's epoch
	Host  uint16        // the new host's player slot (0: not a player)
	Addr  string        // where the players reach the new host (≤ 255 bytes)
	Grace time.Duration // how long awaited players have to re-dial
	// Hold is how long at most the game's tick waits, from Adopt, for the
	// awaited players to re-dial and send their first inputs (default
	// 1 s): the successor resumes from its standby's last tick, and the
	// inputs the old host ran after it (some acknowledged) must be back
	// before it runs those ticks again.
	Hold time.Duration
	// Gone are awaited players not to hold the tick for (the old host's
	// own player: its process is what was lost).
	Gone []uint16
}

// Adopt makes eng the running game gameID on this host: the engine of a
// promoted warm standby (migrate.Standby.Promote), whose players are
// about to re-dial after a host migration. A connection whose players
// are all awaited resumes them: it gets the host migration control
// (proto.ControlHostMigration: m's host, the engine's tick, m's epoch and
// address) and a full snapshot of cause proto.CauseMigration instead of
// a join; an awaited player not back within m.Grace leaves with
// LeftInMigration. Call it from the server's loop (Server.Do) before the
// players dial.
func (h *Host) Adopt(gameID uint64, eng *sim.Server, m Migration) error {
	if h.games[gameID] != nil {
		return errors.New("game: Adopt: the game is already running here")
	}
	g := &hostedGame{
		id:       gameID,
		eng:      eng,
		ring:     deltacomp.NewRing(deltacomp.RingConfig{Size: h.cfg.Ring, Predictor: eng.World().Schema().Predictor}),
		world:    interest.NewWorld(h.cfg.Interest),
		awaited:  map[uint16]bool{},
		awaitEnd: h.srv.Now().Add(m.Grace),
		gone:     slices.Clone(m.Gone),
	}
	if m.Hold == 0 {
		m.Hold = time.Second
	}
	g.holdEnd = h.srv.Now().Add(m.Hold)
	g.returning = map[uint16]*returning{}
	if len(m.Addr) > proto.MaxControlText {
		return errors.New("game: Adopt: the new host's address is longer than a control frame's text")
	}
	g.migration = proto.ControlFrame{Code: proto.ControlHostMigration, Player: m.Host, Arg: uint64(m.Epoch), Text: []byte(m.Addr)}
	for _, p := range eng.Players(nil) {
		g.awaited[p] = true
		if !slices.Contains(m.Gone, p) {
			g.returning[p] = &returning{}
		}
	}
	h.games[gameID] = g
	g.publish()
	h.log.Info("game adopted", "game", gameID, "tick", eng.Tick(), "awaiting", len(g.awaited))
	return nil
}

// resumes reports whether players are all awaited by an adopted game,
// and if so stops awaiting them: their connection resumes them.
func (g *hostedGame) resumes(players []uint16) bool {
	if len(g.awaited) == 0 || len(players) == 0 {
		return false
	}
	for _, p := range players {
		if !g.awaited[p] {
			return false
		}
	}
	for _, p := range players {
		delete(g.awaited, p)
	}
	return true
}

// holds reports whether an adopted game's tick waits at now: until
// every awaited player (but the gone) has re-dialled and sent an input,
// at most until the hold's end.
func (g *hostedGame) holds(now time.Time) bool {
	if g.holdEnd.IsZero() {
		return false
	}
	wait := now.Before(g.holdEnd)
	if wait {
		wait = false
		for p := range g.awaited {
			if !slices.Contains(g.gone, p) {
				wait = true
			}
		}
		for _, gc := range g.conns {
			wait = wait || gc.holding
		}
	}
	if !wait {
		g.holdEnd = time.Time{} // for good
		for _, gc := range g.conns {
			gc.holding = false
		}
	}
	return wait
}

// returning is a player an adopted game resumed, on its way back: until
// its first input frame on this host arrives (back), the ticks that
// ran without its input (missing); then the newest tick that frame
// carried, the end of the inputs it brought back.
type returning struct {
	back    bool
	newest  uint32
	missing []uint32
}

// checkResumed counts, after a step of an adopted game, the inputs the
// returning players brought back that the step ran without
// (HostStats.ResumedMissing): each was an input the old host may have
// acknowledged that the successor did not run. For a player not back
// yet the tick is noted, and counted if its inputs cover it (brought).
// Once every returning player is back, or gone, and the game ran past
// the inputs they brought, there is nothing more to check.
func (h *Host) checkResumed(g *hostedGame) {
	if g.returning == nil {
		return
	}
	g.eng.Record(&g.rec)
	open := false
	for _, in := range g.rec.Inputs {
		r := g.returning[in.Player]
		switch {
		case r == nil:
		case !r.back:
			open = true
			if in.Missing && len(r.missing) < maxUnbrought {
				r.missing = append(r.missing, g.rec.Tick)
			}
		case int32(r.newest-g.rec.Tick) >= 0:
			open = true
			if in.Missing {
				h.stats.ResumedMissing++
			}
		}
	}
	if !open {
		g.returning = nil // every player back and past, or gone
	}
}

// maxUnbrought bounds the ticks noted for a returning player not back
// yet: its grace (Migration.Grace) at a high tick rate.
const maxUnbrought = 1024

// brought takes a returning player's first input frame on this host,
// whose newest input is for tick newest: the ticks that ran without
// its input meanwhile and that the frame covers are counted.
func (h *Host) brought(g *hostedGame, player uint16, newest uint32) {
	r := g.returning[player]
	if r == nil || r.back {
		return
	}
	r.back, r.newest = true, newest
	for _, t := range r.missing {
		if int32(newest-t) >= 0 {
			h.stats.ResumedMissing++
		}
	}
	r.missing = nil
}

// expireAwaited makes the awaited players leave once the grace is over.
func (h *Host) expireAwaited(g *hostedGame, now time.Time) {
	if len(g.awaited) == 0 || now.Before(g.awaitEnd) {
		return
	}
	for p := range g.awaited {
		if ctrl, err := g.eng.Leave(p, LeftInMigration); err == nil {
			h.stats.Leaves++
			g.queueBroadcast(&ctrl.Frame)
		}
	}
	clear(g.awaited)
	if len(g.conns) == 0 {
		// Nobody came back: the game ends like any game without players.
		h.end(g)
		h.log.Info("game ended", "game", g.id)
	}
}

// firstFull is the full snapshot a connection of g gets first: its join,
// or, when it resumes awaited players, the game as it stands after the
// host migration control.
func (gc *gameConn) firstFull(resumed bool) proto.SnapshotCause {
	if !resumed {
		return proto.CauseJoin
	}
	ctl := gc.game.migration
	ctl.Tick = gc.game.eng.Tick()
	gc.sendControl(&ctl)
	return proto.CauseMigration
}
