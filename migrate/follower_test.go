package migrate

import (
	"errors"
	"testing"
	"time"
)

// followGame is four players of one peer-hosted game in virtual time: the
// followers of slots 2, 3 and 4 (slot 1 hosts first), each advancing on
// its own 100 ms timer with its own phase.
type followGame struct {
	t     *testing.T
	f     map[uint16]*Follower
	phase map[uint16]time.Duration
	alive uint16 // the host now (0: none)
	epoch Epoch
	now   time.Time
}

func newFollowGame(t *testing.T) *followGame {
	g := &followGame{t: t, f: map[uint16]*Follower{}, phase: map[uint16]time.Duration{2: 0, 3: 37 * time.Millisecond, 4: 81 * time.Millisecond},
		alive: 1, epoch: 1, now: t0}
	r := roster4()
	for s := uint16(2); s <= 4; s++ {
		f := &Follower{Self: s}
		f.Roster(&r)
		f.Heard(t0)
		g.f[s] = f
	}
	return g
}

// run advances virtual time by d in 1 ms steps: the live host sends a
// heartbeat every 500 ms; each follower advances every 100 ms (its
// phase); a promoting player announces itself 200 ms after its decision
// and the dialing players hear it then (when they dial the right one).
func (g *followGame) run(d time.Duration) (acts map[uint16][]Action, at map[uint16]time.Time) {
	acts, at = map[uint16][]Action{}, map[uint16]time.Time{}
	type announce struct {
		when  time.Time
		slot  uint16
		epoch Epoch
	}
	var pending []announce
	end := g.now.Add(d)
	for ; g.now.Before(end); g.now = g.now.Add(time.Millisecond) {
		since := g.now.Sub(t0)
		if g.alive != 0 && since%Heartbeat == 0 {
			for s, f := range g.f {
				if s != g.alive {
					f.Heard(g.now)
				}
			}
		}
		for _, a := range pending {
			if a.when.Equal(g.now) {
				g.alive, g.epoch = a.slot, a.epoch
				for s, f := range g.f {
					if s != a.slot && f.Announced(g.now, a.slot, a.epoch) {
						r := Roster{Epoch: a.epoch, Host: a.slot}
						r.Members = append(r.Members, f.Following().Members...)
						if !f.Roster(&r) {
							g.t.Fatalf("slot %d refused the new host's roster", s)
						}
					}
				}
			}
		}
		for s, f := range g.f {
			if s == g.alive || (since-g.phase[s])%(100*time.Millisecond) != 0 {
				continue
			}
			a := f.Advance(g.now)
			if a.Kind == ActNone {
				continue
			}
			acts[s] = append(acts[s], a)
			if _, ok := at[s]; !ok {
				at[s] = g.now
			}
			if a.Kind == ActPromote {
				f.Promoted(a.Epoch)
				pending = append(pending, announce{g.now.Add(200 * time.Millisecond), s, a.Epoch})
			}
		}
	}
	return acts, at
}

// kill stops the current host: its heartbeats end and it is no longer a
// follower (its process is gone).
func (g *followGame) kill() {
	delete(g.f, g.alive)
	g.alive = 0
}

// TestFollowersMigrate: in virtual time, the host of four is killed
// after 10 s; every follower finds it lost between 1.5 s and 1.6 s after
// its last heartbeat (its own 100 ms timer), all agree on slot 4 (lowest
// client id among candidates), slot 4 promotes at epoch 2 and the others
// dial it; then slot 4 is killed, slot 2 takes over at epoch 3; then
// slot 2 is killed and slot 3, who never offered to host, is told no
// host is left.
func TestFollowersMigrate(t *testing.T) {
	g := newFollowGame(t)
	if acts, _ := g.run(10 * time.Second); len(acts) != 0 {
		t.Fatalf("actions while the host is alive: %v", acts)
	}
	lastBeat := g.now.Add(-Heartbeat) // the run ends just before the 10 s heartbeat
	g.kill()
	acts, at := g.run(3 * time.Second)
	for s, want := range map[uint16]ActionKind{2: ActDial, 3: ActDial, 4: ActPromote} {
		a := acts[s]
		if len(a) != 1 || a[0].Kind != want || a[0].Member.Slot != 4 || a[0].Epoch != 2 {
			t.Fatalf("first migration: slot %d did %+v, want one %v of slot 4 at epoch 2", s, a, want)
		}
		if d := at[s].Sub(lastBeat); d < DefaultTimeout || d >= DefaultTimeout+100*time.Millisecond {
			t.Fatalf("slot %d acted %v after the last heartbeat", s, d)
		}
	}
	if g.alive != 4 || g.epoch != 2 {
		t.Fatalf("host %d at epoch %d after the first migration", g.alive, g.epoch)
	}
	for _, s := range []uint16{2, 3} {
		if g.f[s].Electing() || g.f[s].Following().Host != 4 {
			t.Fatalf("slot %d does not follow slot 4", s)
		}
	}
	// A stale roster of the first host, arriving late, is refused.
	old := roster4()
	if g.f[2].Roster(&old) || g.f[2].StaleRosters() != 1 {
		t.Fatal("a roster of epoch 1 was followed at epoch 2")
	}

	g.kill()
	acts, _ = g.run(3 * time.Second)
	if a := acts[2]; len(a) != 1 || a[0].Kind != ActPromote || a[0].Epoch != 3 {
		t.Fatalf("second migration: slot 2 did %+v", a)
	}
	if a := acts[3]; len(a) != 1 || a[0].Kind != ActDial || a[0].Member.Slot != 2 || a[0].Epoch != 3 {
		t.Fatalf("second migration: slot 3 did %+v", a)
	}

	g.kill()
	acts, _ = g.run(3 * time.Second)
	if a := acts[3]; len(a) != 1 || a[0].Kind != ActNoHost || !errors.Is(a[0].Err, ErrNoHost) {
		t.Fatalf("no candidate left: slot 3 did %+v", a)
	}
}

// TestFollowerSilentSuccessor: a successor that never announces itself
// is struck off after the promote timeout and the next one is dialed (or
// promotes), one epoch further.
func TestFollowerSilentSuccessor(t *testing.T) {
	r := roster4()
	f3 := &Follower{Self: 3}
	f2 := &Follower{Self: 2}
	for _, f := range []*Follower{f2, f3} {
		f.Roster(&r)
		f.Heard(t0)
	}
	lost := t0.Add(DefaultTimeout)
	if a := f3.Advance(lost); a.Kind != ActDial || a.Member.Slot != 4 || a.Epoch != 2 {
		t.Fatalf("slot 3: %+v", a)
	}
	if a := f2.Advance(lost); a.Kind != ActDial || a.Member.Slot != 4 {
		t.Fatalf("slot 2: %+v", a)
	}
	if a := f3.Advance(lost.Add(DefaultPromoteTimeout / 2)); a.Kind != ActNone || f3.Pending().Member.Slot != 4 {
		t.Fatalf("slot 3 moved on before the promote timeout: %+v", a)
	}
	later := lost.Add(DefaultPromoteTimeout)
	if a := f3.Advance(later); a.Kind != ActDial || a.Member.Slot != 2 || a.Epoch != 3 {
		t.Fatalf("slot 3 after slot 4's silence: %+v", a)
	}
	if a := f2.Advance(later); a.Kind != ActPromote || a.Epoch != 3 {
		t.Fatalf("slot 2 after slot 4's silence: %+v", a)
	}
	// Slot 4 wakes up and announces epoch 2: too late.
	if f3.Announced(later, 4, 2) {
		t.Fatal("a struck-off successor was followed")
	}
	if !f3.Announced(later, 2, 3) || f3.Following().Host != 2 {
		t.Fatal("the elected successor was not followed")
	}
	if ActDial.String() != "dial" || ActionKind(9).String() != "unknown" {
		t.Fatal("ActionKind.String")
	}
}

// TestFollowerHostGone: a host declared gone (it handed the game over)
// stays gone though its packets still arrive before the next Advance,
// which starts the election at once, long before the silence timeout.
func TestFollowerHostGone(t *testing.T) {
	f := following(3)
	f.HostGone(t0.Add(100 * time.Millisecond))
	f.Heard(t0.Add(110 * time.Millisecond))
	a := f.Advance(t0.Add(120 * time.Millisecond))
	if a.Kind != ActDial || a.Member.Slot != 4 || a.Epoch != 2 {
		t.Fatalf("after HostGone and a late packet: %+v, want a dial of slot 4 for epoch 2", a)
	}
	if !f.Announced(t0.Add(200*time.Millisecond), 4, 2) {
		t.Fatal("the successor's announcement was refused")
	}
	if a := f.Advance(t0.Add(300 * time.Millisecond)); a.Kind != ActNone {
		t.Fatalf("following the successor: %+v", a)
	}
}

// following is the follower of slot in roster4, which heard the host at
// t0.
func following(slot uint16) *Follower {
	r := roster4()
	f := &Follower{Self: slot}
	f.Roster(&r)
	f.Heard(t0)
	return f
}

// TestFollowerCutOff: slot 2, second in line, is cut off the network:
// it finds the host lost, dials slot 4, strikes it off after the
// promote timeout and elects itself; its own player's announcement on
// the host it promoted is no announcement, and if it could not promote
// (Promoted is not called), at its promote timeout it is struck off
// too and nobody is left. It tries the others again (Retry), never
// itself. Its path mended, it is back with the host (Rejoined): the
// host is watched again under the same roster, and a later silence
// starts a new election from the first in line. A player that did
// promote is back with the host the same way.
func TestFollowerCutOff(t *testing.T) {
	f := following(2)
	lost := t0.Add(DefaultTimeout)
	if a := f.Advance(lost); a.Kind != ActDial || a.Member.Slot != 4 || a.Epoch != 2 {
		t.Fatalf("host lost: %+v", a)
	}
	self := lost.Add(DefaultPromoteTimeout)
	if a := f.Advance(self); a.Kind != ActPromote || a.Epoch != 3 {
		t.Fatalf("slot 4 silent: %+v", a)
	}
	if f.Announced(self.Add(10*time.Millisecond), 2, 3) {
		t.Fatal("its own announcement ended the election")
	}
	if a := f.Advance(self.Add(DefaultPromoteTimeout - time.Millisecond)); a.Kind != ActNone || !f.Electing() {
		t.Fatalf("struck off before its promote timeout: %+v", a)
	}
	over := self.Add(DefaultPromoteTimeout)
	if a := f.Advance(over); a.Kind != ActNoHost || !errors.Is(a.Err, ErrNoHost) {
		t.Fatalf("nobody followed it: %+v", a)
	}
	// Still cut off, it tries the others again, never itself.
	for round := range 2 {
		if !f.Retry() {
			t.Fatal("nobody to try again")
		}
		if a := f.Advance(over); a.Kind != ActDial || a.Member.Slot != 4 || a.Epoch != 2 {
			t.Fatalf("round %d of the retries: %+v", round, a)
		}
		over = over.Add(DefaultPromoteTimeout)
		if a := f.Advance(over); a.Kind != ActNoHost {
			t.Fatalf("round %d of the retries, slot 4 silent: %+v", round, a)
		}
	}
	back := self.Add(3 * time.Second)
	f.Rejoined(back)
	if f.Electing() || f.Following().Epoch != 1 || f.Following().Host != 1 {
		t.Fatalf("back with the host: electing %v, following %+v", f.Electing(), f.Following())
	}
	for i := range 10 {
		f.Heard(back.Add(time.Duration(i) * Heartbeat))
		if a := f.Advance(back.Add(time.Duration(i) * Heartbeat)); a.Kind != ActNone {
			t.Fatalf("the host heard again: %+v", a)
		}
	}
	again := back.Add(9*Heartbeat + DefaultTimeout)
	if a := f.Advance(again); a.Kind != ActDial || a.Member.Slot != 4 || a.Epoch != 2 {
		t.Fatalf("the host lost again: %+v", a)
	}

	g := following(4)
	if a := g.Advance(lost); a.Kind != ActPromote {
		t.Fatalf("slot 4 first in line: %+v", a)
	}
	g.Promoted(2)
	if a := g.Advance(lost.Add(time.Hour)); a.Kind != ActNone || g.Retry() {
		t.Fatalf("promoted: %+v", a)
	}
	g.Rejoined(back)
	if a := g.Advance(back.Add(DefaultTimeout)); a.Kind != ActPromote || a.Epoch != 2 {
		t.Fatalf("back with the host, then lost again: %+v", a)
	}
}

// TestFollowerExcuse: a stop of the player's own loop is excused while
// it follows the host, not once the host is lost.
func TestFollowerExcuse(t *testing.T) {
	f := following(3)
	resumed := t0.Add(5 * time.Second)
	f.Excuse(resumed, 5*time.Second)
	if a := f.Advance(resumed); a.Kind != ActNone {
		t.Fatalf("after a stop of its own loop: %+v", a)
	}
	if a := f.Advance(resumed.Add(DefaultTimeout)); a.Kind != ActDial {
		t.Fatalf("silent past the excuse: %+v", a)
	}
	f.Excuse(resumed.Add(10*time.Second), 10*time.Second)
	if !f.Electing() || f.Pending().Member.Slot != 4 {
		t.Fatalf("an excuse during the election: electing %v, %+v", f.Electing(), f.Pending())
	}
}

// TestFollowerRetryAlone: a player who is the only candidate left has
// nobody to try again.
func TestFollowerRetryAlone(t *testing.T) {
	f := following(4)
	if f.Retry() {
		t.Fatal("Retry while following the host")
	}
	lost := t0.Add(DefaultTimeout)
	f.Advance(lost)
	if a := f.Advance(lost.Add(DefaultPromoteTimeout)); a.Kind != ActDial || a.Member.Slot != 2 {
		t.Fatalf("slot 4 struck itself off: %+v", a)
	}
	if a := f.Advance(lost.Add(2 * DefaultPromoteTimeout)); a.Kind != ActNoHost {
		t.Fatalf("slot 2 silent too: %+v", a)
	}
	if !f.Retry() {
		t.Fatal("slot 2 is left to try")
	}
	r := Roster{Epoch: 1, Host: 1, Members: []Member{{Slot: 1, ClientID: 1, Candidate: true, Addr: "a:1"}, {Slot: 4, ClientID: 4, Candidate: true, Addr: "b:1"}}}
	g := &Follower{Self: 4}
	g.Roster(&r)
	g.Heard(t0)
	g.Advance(lost)
	if a := g.Advance(lost.Add(DefaultPromoteTimeout)); a.Kind != ActNoHost || g.Retry() {
		t.Fatalf("alone: %+v, and Retry found somebody", a)
	}
}

// TestFollowerAnswered: a successor whose server accepted the follower
// is not struck off when its announcement is late (a lossy path
// repeating the control frame), and the follower that hears it then
// follows it; a successor that accepted and ended the session before
// announcing itself is struck off at once, and the next one elected.
// One that never answers is struck off after the promote timeout, as
// before.
func TestFollowerAnswered(t *testing.T) {
	r := roster4()
	lost := func() *Follower {
		f := &Follower{Self: 3}
		f.Roster(&r)
		f.Heard(t0)
		return f
	}
	f := lost()
	at := t0.Add(DefaultTimeout)
	act := f.Advance(at)
	if act.Kind != ActDial || act.Member.Slot != 4 {
		t.Fatalf("election: %+v, want to dial slot 4", act)
	}
	if !f.Answered(4, act.Epoch) || f.Answered(2, act.Epoch) {
		t.Fatal("Answered refused the winner, or accepted another")
	}
	late := at.Add(3 * DefaultPromoteTimeout)
	if a := f.Advance(late); a.Kind != ActNone {
		t.Fatalf("an answered successor late to announce itself: %+v, want no new action", a)
	}
	if !f.Announced(late, 4, act.Epoch) || f.Electing() {
		t.Fatal("the answered successor's late announcement was refused")
	}

	f = lost()
	act = f.Advance(at)
	f.Answered(4, act.Epoch)
	f.Unanswered(at.Add(100 * time.Millisecond))
	if a := f.Advance(at.Add(120 * time.Millisecond)); a.Kind != ActDial || a.Member.Slot != 2 || a.Epoch != act.Epoch+1 {
		t.Fatalf("after the answered successor's session ended: %+v, want to dial slot 2", a)
	}

	f = lost()
	f.Advance(at)
	if a := f.Advance(at.Add(DefaultPromoteTimeout)); a.Kind != ActDial || a.Member.Slot != 2 {
		t.Fatalf("a successor that never answered, after the promote timeout: %+v, want to dial slot 2", a)
	}
}
