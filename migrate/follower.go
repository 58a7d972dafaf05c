package migrate

import (
	"time"
)

// ActionKind is what a Follower asks its owner to do.
type ActionKind uint8

// Actions of a Follower.
const (
	ActNone    ActionKind = iota
	ActDial               // dial Action.Member, the successor of Action.Epoch
	ActPromote            // this player is the successor of Action.Epoch: promote
	ActNoHost             // the host is lost and nobody can take over (Action.Err)
)

var actNames = [...]string{ActNone: "none", ActDial: "dial", ActPromote: "promote", ActNoHost: "no host"}

func (k ActionKind) String() string {
	if int(k) < len(actNames) {
		return actNames[k]
	}
	return "unknown"
}

// Action is a Follower's decision.
type Action struct {
	Kind   ActionKind
	Member Member // the successor (ActDial, ActPromote)
	Epoch  Epoch  // its epoch
	Err    error  // ActNoHost: ErrNoHost
}

// Follower is a player's side of host migration, without I/O: it follows
// the host's rosters (refusing stale epochs), watches the host's
// packets with a HostMonitor, and once the host is lost runs the
// Election, telling its owner whom to dial, when to promote itself, or
// that nobody can take over. Drive it with the arrival time of every
// packet from the host (Heard), every roster (Roster) and a periodic
// Advance. A player cut off the network cannot tell its own silence
// from the host's: if its owner finds the host alive after all (a
// rejoin), Rejoined puts the follower back under the same roster.
type Follower struct {
	Self    uint16 // this player's slot
	Monitor HostMonitor
	// PromoteTimeout configures the Election (DefaultPromoteTimeout when
	// zero).
	PromoteTimeout time.Duration

	gate     EpochGate
	roster   Roster
	election Election
	electing bool
	gone     bool // HostGone: the host counts as lost whatever is heard
	over     bool
	retry    bool // Retry: the next Advance starts the election over
	changed  bool // Unanswered moved the election on: the next Advance says so
	last     Action
}

// Heard records a packet from the current host at now. Once the host is
// gone (HostGone) or lost, nothing it sends revives it.
func (f *Follower) Heard(now time.Time) {
	if !f.electing && !f.gone {
		f.Monitor.Heard(now)
	}
}

// Roster follows r if its epoch is current or newer; a stale roster is
// refused (false) and counted in StaleRosters. r must be valid.
func (f *Follower) Roster(r *Roster) bool {
	if !f.gate.Admit(r.Epoch) {
		return false
	}
	f.roster = r.Clone()
	return true
}

// StaleRosters counts rosters of an older epoch refused.
func (f *Follower) StaleRosters() uint64 { return f.gate.Stale }

// Following is the roster followed now.
func (f *Follower) Following() *Roster { return &f.roster }

// Advance checks the host at now and returns what to do: a new action
// when the host was just found lost or the election moved on, ActNone
// otherwise.
func (f *Follower) Advance(now time.Time) Action {
	switch {
	case f.retry:
		f.retry, f.over = false, false
		f.election.Start(now, &f.roster)
		f.election.StrikeOff(now, f.Self)
	case f.over:
		return Action{}
	case !f.electing:
		if !f.gone && !f.Monitor.Lost(now) {
			return Action{}
		}
		f.electing, f.gone = true, false
		f.election.PromoteTimeout = f.PromoteTimeout
		f.election.Start(now, &f.roster)
	case !f.election.Advance(now) && !f.changed:
		return Action{}
	}
	f.changed = false
	return f.decide()
}

func (f *Follower) decide() Action {
	w, e, err := f.election.Winner()
	switch {
	case err != nil:
		f.over = true
		f.last = Action{Kind: ActNoHost, Err: err}
	case w.Slot == f.Self:
		f.last = Action{Kind: ActPromote, Member: w, Epoch: e}
	default:
		f.last = Action{Kind: ActDial, Member: w, Epoch: e}
	}
	return f.last
}

// Electing reports whether the host is lost and no successor has
// announced itself yet; Pending is then the last action given.
func (f *Follower) Electing() bool { return f.electing && !f.over }

// Pending is the last action Advance returned during this election.
func (f *Follower) Pending() Action { return f.last }

// Announced handles the successor's host_migration (slot, epoch) that
// arrived at now: if it is the elected one, the follower follows it (its
// roster comes next; until then the old roster's succession stands with
// the old host removed) and reports true. This player's own
// announcement (its own player back on the host it promoted) is never
// one.
func (f *Follower) Announced(now time.Time, slot uint16, epoch Epoch) bool {
	if !f.electing || f.over || slot == f.Self || !f.election.Announced(slot, epoch) {
		return false
	}
	f.electing = false
	f.gate.Admit(epoch)
	next := Roster{Epoch: epoch, Host: slot}
	for _, m := range f.roster.Members {
		if m.Slot != f.roster.Host {
			next.Members = append(next.Members, m)
		}
	}
	f.roster = next
	f.Monitor.Heard(now)
	f.last = Action{}
	return true
}

// Answered records that the successor slot, elected for epoch, accepted
// this player's session (Election.Answered): it is not struck off for
// a late announcement while that session lives. It reports whether slot
// and epoch are the election's winner.
func (f *Follower) Answered(slot uint16, epoch Epoch) bool {
	return f.electing && !f.over && f.election.Answered(slot, epoch)
}

// Unanswered records at now that the session the elected successor
// accepted ended before its announcement: the successor is struck off
// and the next one elected (at the next Advance).
func (f *Follower) Unanswered(now time.Time) {
	if f.electing && !f.over {
		f.election.Unanswered(now)
		f.changed = true
	}
}

// Promoted records that this player became the host of epoch (after
// ActPromote): it stops watching a host. A player that promoted while
// cut off itself, and finds the host alive after all, is back with it
// (Rejoined).
func (f *Follower) Promoted(epoch Epoch) {
	f.electing, f.over = false, true
	f.gate.Admit(epoch)
}

// Demoted records at now that the host this player promoted to (after
// ActPromote, Promoted) stepped down: a successor replaced it (its loop
// stalled past the players' timeout, or they followed another). The
// player follows the roster again — its own host's last — and counts
// that host lost: the next Advance elects as the other players did.
func (f *Follower) Demoted(now time.Time) {
	f.electing, f.over, f.retry, f.gone = false, false, false, false
	f.last = Action{}
	f.HostGone(now)
}

// Retry starts the election over at the next Advance, after it found
// nobody to take over (ActNoHost) while its owner may have been cut off
// itself: the successors it struck off for their silence may have been
// heard by everyone else, and one of them may host now. This player is
// struck off from the start (its own promotion, if it made one, was not
// followed). Retry reports whether anybody else is left to try; if not,
// it does nothing.
func (f *Follower) Retry() bool {
	if !f.over || !f.electing {
		return false
	}
	var buf [8]Member
	for _, m := range f.roster.Succession(buf[:0]) {
		if m.Slot != f.Self {
			f.retry = true
			return true
		}
	}
	return false
}

// Rejoined records that this player is back with the host it followed,
// at now, on a new session (its own path had been cut: the host was
// alive all along, and nobody took over): the election, if one runs,
// is over, and the host is watched again under the same roster.
func (f *Follower) Rejoined(now time.Time) {
	f.electing, f.gone, f.over, f.retry = false, false, false, false
	f.last = Action{}
	f.Monitor.Heard(now)
}

// Excuse tells the follower its own loop did not run for d before now
// (HostMonitor.Excuse): the host's silence over that time does not
// count.
func (f *Follower) Excuse(now time.Time, d time.Duration) {
	if !f.electing && !f.gone {
		f.Monitor.Excuse(now, d)
	}
}

// HostGone declares the current host lost at now without waiting for
// its silence (its session ended: it stepped down, or timed out; or it
// handed the game over): the next Advance starts the election, whatever
// arrives from the host meanwhile.
func (f *Follower) HostGone(now time.Time) {
	if !f.electing && !f.over {
		f.Monitor.Expire(now)
		f.gone = true
	}
}
