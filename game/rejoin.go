package game

import (
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// A hiccup is not a leave. When a connection goes silent (the
// transport's Config.Interrupt), its players stay in the game and the
// others hear ControlPlayerInterrupted; their inputs run missing, which
// the engine plays as it plays any missing input. When the session ends
// without a leave, the players keep their slots, entities and score for
// the transport's rejoin grace (tickwire.Conn.RejoinUntil): a connection
// that rejoins with its credential takes them back, gets the game as it
// stands (proto.CauseRejoin), and the others hear ControlPlayerBack, not
// a leave and a join. Past the grace the players leave with the reason
// their session ended for.

// rejoinWait is a player whose session ended without a leave.
type rejoinWait struct {
	until  time.Time
	reason string // why its session ended: the leave's reason past the grace
}

// Interrupted tells the game's other players that c's players went
// silent or are heard again, and passes it on to Config.Handler if it
// is a tickwire.InterruptHandler.
func (h *Host) Interrupted(c *tickwire.Conn, on bool) {
	if gc := h.conns[c]; gc != nil {
		code := proto.ControlPlayerBack
		if on {
			code = proto.ControlPlayerInterrupted
			h.stats.Interruptions++
		}
		gc.game.broadcastPlayers(code, c.Players())
	}
	if ih, ok := h.cfg.Handler.(tickwire.InterruptHandler); ok {
		ih.Interrupted(c, on)
	}
}

// broadcastPlayers queues control code for each of players, at the
// game's tick.
func (g *hostedGame) broadcastPlayers(code proto.ControlCode, players []uint16) {
	for _, p := range players {
		g.queueBroadcast(&proto.ControlFrame{Code: code, Player: p, Tick: g.eng.Tick()})
	}
}

// awaitRejoin keeps the players of c, whose session ended for r, in g
// until the end of its rejoin grace. It reports whether it did.
func (h *Host) awaitRejoin(g *hostedGame, c *tickwire.Conn, r proto.DisconnectReason) bool {
	until, ok := c.RejoinUntil()
	if !ok || len(c.Players()) == 0 {
		return false
	}
	if g.rejoining == nil {
		g.rejoining = map[uint16]rejoinWait{}
	}
	for _, p := range c.Players() {
		g.rejoining[p] = rejoinWait{until: until, reason: r.String()}
	}
	if !c.Interrupted() {
		// Replaced before it went silent: the others hear it now.
		g.broadcastPlayers(proto.ControlPlayerInterrupted, c.Players())
	}
	h.log.Info("players await their rejoin", "game", g.id, "players", c.Players(), "reason", r, "until", until, "conn", c.ID())
	return true
}

// rejoins reports whether a rejoined connection's players all wait for
// it in g, and if so takes them back.
func (g *hostedGame) rejoins(c *tickwire.Conn) bool {
	if !c.Rejoined() || len(g.rejoining) == 0 {
		return false
	}
	for _, p := range c.Players() {
		if _, ok := g.rejoining[p]; !ok {
			return false
		}
	}
	for _, p := range c.Players() {
		delete(g.rejoining, p)
	}
	g.broadcastPlayers(proto.ControlPlayerBack, c.Players())
	return true
}

// expireRejoins makes the players whose grace is over leave.
func (h *Host) expireRejoins(g *hostedGame, now time.Time) {
	left := false
	for p, w := range g.rejoining {
		if now.Before(w.until) {
			continue
		}
		left = true
		delete(g.rejoining, p)
		if ctrl, err := g.eng.Leave(p, w.reason); err == nil {
			h.stats.Leaves++
			h.log.Info("player left", "game", g.id, "player", p, "tick", ctrl.Frame.Tick, "reason", w.reason+", not back in its grace")
			g.queueBroadcast(&ctrl.Frame)
		}
	}
	if left {
		h.endIfEmpty(g)
	}
}

// endIfEmpty ends g if nobody plays it or is awaited.
func (h *Host) endIfEmpty(g *hostedGame) {
	if len(g.conns) == 0 && len(g.awaited) == 0 && len(g.rejoining) == 0 && h.games[g.id] == g {
		h.end(g)
		h.log.Info("game ended", "game", g.id)
	}
}
