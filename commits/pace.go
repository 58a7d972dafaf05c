package commits

import (
	"time"
)

// Fairness of the commit (docs/SECURITY.md, "Commits mode"): the commit
// waits only for clients whose reported live tick moves on at the pace
// of real time, a client kicked too often is disconnected, and the lead
// follows only clients that keep pace, one tick at a time.
const (
	// paceSlack is how many ticks a client's reported live tick may lag
	// the server's, beyond its path's delay (half the round trip and
	// twice the jitter) and a tick of rounding, and still be waited for.
	paceSlack = 5
	// keepPace is how long a client that fell off pace, was kicked or is
	// new must keep pace before the commit and the lead count it again.
	keepPace = time.Second
	// kickLimit kicks within kickWindow disconnect a client
	// (proto.DisconnectKicked): it cannot make the server send it the
	// committed state, nor the others wait for it, without end.
	kickLimit  = 3
	kickWindow = 30 * time.Second
	// kickGrace is how long a client must lag the game's most advanced
	// client past the kick limit before it is kicked: when every client
	// lagged at once (their machine starved), their reports come back a
	// tick or two apart, and none of them held the others back.
	kickGrace = 250 * time.Millisecond
	// leadStep is the shortest time between two moves of the lead, each
	// by one tick.
	leadStep = 100 * time.Millisecond
)

// onPace says whether cc's reported live tick keeps up with the server's
// clock, given its path: lag is the server's tick less cc's live tick.
func (h *commitServer) onPace(cc *commitConn, lag int32) bool {
	return lag <= int32(cc.oneway/h.period)+1+paceSlack
}

// counts decides whether cc counts in the commit and the lead this tick:
// it must be on pace, and have been for keepPace since it was off pace,
// kicked or new.
func (h *commitServer) counts(cc *commitConn, lag int32, now time.Time) bool {
	if !h.onPace(cc, lag) {
		if cc.counted {
			h.stats.OffPace++
			h.log.Info("client off pace: not waited for", "game", cc.g.id, "conn", cc.c.ID(), "live", cc.live, "tick", cc.tick)
		}
		cc.counted = false
		cc.paceSince = time.Time{}
		return false
	}
	if cc.counted {
		return true
	}
	if cc.paceSince.IsZero() {
		cc.paceSince = now
	}
	if now.Sub(cc.paceSince) < keepPace {
		return false
	}
	cc.counted = true
	return true
}

// kicked notes a kick of cc at now and reports whether it was one too
// many: then cc is disconnected.
func (h *commitServer) kicked(cc *commitConn, now time.Time) bool {
	keep := cc.kicks[:0]
	for _, at := range cc.kicks {
		if now.Sub(at) < kickWindow {
			keep = append(keep, at)
		}
	}
	cc.kicks = append(keep, now)
	cc.counted = false
	cc.paceSince = time.Time{}
	if len(cc.kicks) < kickLimit {
		return false
	}
	h.stats.KickedOut++
	h.log.Warn("client disconnected: kicked from the commit too often", "game", cc.g.id, "conn", cc.c.ID(),
		"kicks", len(cc.kicks), "window", kickWindow)
	// Closed after the games' loop: closing takes it out of g.conns.
	h.dropping = append(h.dropping, cc.c)
	return true
}
