package migrate

import (
	"errors"
	"time"
)

// ErrNoHost is the end of a game whose host was lost with no candidate
// left to take over.
var ErrNoHost = errors.New("migrate: the host is gone and no other player can host")

// Election is a player's side of a migration, from the moment its
// HostMonitor declares the host lost until a successor announces itself:
// it names the successor to dial (Winner), strikes it off after
// PromoteTimeout without an announcement — unless its server accepted
// this player (Answered): its announcement is then on its way — and
// elects the next, and ends
// with ErrNoHost when the succession is exhausted. Every player starts
// from the same roster, so every player walks the same succession.
type Election struct {
	// PromoteTimeout is how long an elected successor has to announce
	// itself (DefaultPromoteTimeout when zero).
	PromoteTimeout time.Duration

	roster Roster
	struck []uint16
	winner Member
	epoch  Epoch
	since  time.Time
	done   bool
	err    error
	// answered: the winner's server accepted this player's session,
	// which carries its announcement
	answered bool
}

// Start begins an election at now over roster (copied). A player that
// finds itself the winner promotes; the others dial the winner.
func (e *Election) Start(now time.Time, roster *Roster) {
	e.roster = roster.Clone()
	e.struck = e.struck[:0]
	e.done, e.err = false, nil
	e.elect(now)
}

func (e *Election) isStruck(slot uint16) bool {
	for _, s := range e.struck {
		if s == slot {
			return true
		}
	}
	return false
}

func (e *Election) elect(now time.Time) {
	w, ep, ok := Elect(&e.roster, e.isStruck)
	if !ok {
		e.winner, e.epoch, e.err = Member{}, 0, ErrNoHost
		return
	}
	e.winner, e.epoch, e.since, e.answered = w, ep, now, false
}

func (e *Election) promoteTimeout() time.Duration {
	if e.PromoteTimeout > 0 {
		return e.PromoteTimeout
	}
	return DefaultPromoteTimeout
}

// StrikeOff strikes slot off at now, as if its time had run out: if it
// is the winner, the next is elected (ErrNoHost when nobody is left).
func (e *Election) StrikeOff(now time.Time, slot uint16) {
	if e.isStruck(slot) {
		return
	}
	e.struck = append(e.struck, slot)
	if e.err == nil && !e.done && e.winner.Slot == slot {
		e.elect(now)
	}
}

// Winner is the successor elected now, and the epoch it takes over with;
// err is ErrNoHost when nobody is left.
func (e *Election) Winner() (Member, Epoch, error) { return e.winner, e.epoch, e.err }

// Deadline is when the current winner is struck off if it has not
// announced itself.
func (e *Election) Deadline() time.Time { return e.since.Add(e.promoteTimeout()) }

// Advance strikes off winners whose time ran out at now and elects the
// next; it reports whether the winner changed. Once the election is
// decided (Announced) or exhausted it does nothing.
func (e *Election) Advance(now time.Time) (changed bool) {
	for !e.done && e.err == nil && !e.answered && !now.Before(e.Deadline()) {
		e.struck = append(e.struck, e.winner.Slot)
		e.elect(e.Deadline())
		changed = true
	}
	return changed
}

// Answered records that the server of slot, elected for epoch, accepted
// this player's session: the successor runs, and its announcement comes
// on that session's reliable channel, however late a lossy path makes
// it, so it is not struck off for lateness while the session lives (its
// end is Unanswered). A first connect waits for its accept as long; a
// successor that never answers is still struck off after PromoteTimeout.
// It reports false when slot and epoch are not the winner's.
func (e *Election) Answered(slot uint16, epoch Epoch) bool {
	if e.done || e.err != nil || slot != e.winner.Slot || epoch != e.epoch {
		return false
	}
	e.answered = true
	return true
}

// Unanswered records at now that the session the winner accepted ended
// before its announcement: it is struck off at once.
func (e *Election) Unanswered(now time.Time) {
	if e.answered && !e.done && e.err == nil {
		e.StrikeOff(now, e.winner.Slot)
	}
}

// Announced reports whether a host_migration naming slot and epoch ends
// the election. Only the member elected now, with its epoch, is
// accepted, so that all players converge on one authority: a successor
// struck off for being late gets no players and steps down (it never
// hears from anyone of its epoch, and a newer one replaces it).
func (e *Election) Announced(slot uint16, epoch Epoch) bool {
	if e.done || e.err != nil || slot != e.winner.Slot || epoch != e.epoch {
		return false
	}
	e.done = true
	return true
}
