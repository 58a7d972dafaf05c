package migrate

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestHostMonitor: three missed heartbeats (1,500 ms of silence) and
// the host is lost, not a moment earlier; heartbeats every 500 ms, even
// one late by 400 ms, keep it alive; a stop of the player's own loop is
// excused, but never moves the last packet past now.
func TestHostMonitor(t *testing.T) {
	var m HostMonitor
	if m.Lost(t0.Add(time.Hour)) || !m.Deadline().IsZero() {
		t.Fatal("an unarmed monitor lost its host")
	}
	now := t0
	m.Heard(now)
	for i := range 10 {
		d := Heartbeat
		if i == 5 {
			d += 400 * time.Millisecond
		}
		if m.Lost(now.Add(d)) {
			t.Fatalf("heartbeat %d: lost after %v", i, d)
		}
		now = now.Add(d)
		m.Heard(now)
	}
	m.Heard(now.Add(-time.Second)) // an older timestamp does not move the deadline back
	if m.Lost(now.Add(DefaultTimeout - time.Millisecond)) {
		t.Fatal("lost 1 ms before the timeout")
	}
	if !m.Lost(now.Add(DefaultTimeout)) || !m.Deadline().Equal(now.Add(DefaultTimeout)) {
		t.Fatal("not lost after the timeout")
	}
	// The player's own loop stopped for 5 s before its check at stop:
	// that silence is excused, never beyond stop.
	last, stop := now, now.Add(5*time.Second)
	m.Excuse(stop, 5*time.Second-100*time.Millisecond)
	if m.Lost(stop) || !m.Deadline().Equal(last.Add(5*time.Second-100*time.Millisecond+DefaultTimeout)) {
		t.Fatalf("deadline %v after the excuse, want %v", m.Deadline().Sub(last), 5*time.Second-100*time.Millisecond+DefaultTimeout)
	}
	m.Heard(stop)
	m.Excuse(stop, time.Hour)
	if !m.Deadline().Equal(stop.Add(DefaultTimeout)) {
		t.Fatalf("an excuse moved the last packet %v past now", m.Deadline().Sub(stop.Add(DefaultTimeout)))
	}
	fast := HostMonitor{Timeout: 100 * time.Millisecond}
	fast.Heard(t0)
	if !fast.Lost(t0.Add(100 * time.Millisecond)) {
		t.Fatal("Timeout ignored")
	}
}

// TestElection: in virtual time, every player of the same roster walks
// the same succession: the first successor, struck off after the promote
// timeout without an announcement, then the next (one epoch further),
// then ErrNoHost. An announcement ends it only from the winner with its
// epoch.
func TestElection(t *testing.T) {
	r := roster4()
	var players [3]Election // slots 2, 3, 4: everyone but the lost host
	for i := range players {
		players[i].Start(t0, &r)
	}
	check := func(when string, slot uint16, epoch Epoch, wantErr error) {
		t.Helper()
		for i := range players {
			w, e, err := players[i].Winner()
			if w.Slot != slot || e != epoch || !errors.Is(err, wantErr) {
				t.Fatalf("%s: player %d elects %d at epoch %d (%v), want %d at %d (%v)", when, i, w.Slot, e, err, slot, epoch, wantErr)
			}
		}
	}
	check("start", 4, 2, nil)
	for i := range players {
		if players[i].Advance(t0.Add(DefaultPromoteTimeout - time.Millisecond)) {
			t.Fatal("struck off before the promote timeout")
		}
	}
	check("just before the promote timeout", 4, 2, nil)
	// Players advance at different moments; they agree anyway.
	players[0].Advance(t0.Add(DefaultPromoteTimeout))
	players[1].Advance(t0.Add(DefaultPromoteTimeout + 300*time.Millisecond))
	players[2].Advance(t0.Add(DefaultPromoteTimeout + 999*time.Millisecond))
	check("after one promote timeout", 2, 3, nil)
	if players[0].Announced(4, 2) {
		t.Fatal("a struck-off successor's late announcement was accepted")
	}
	if players[0].Announced(2, 2) || players[0].Announced(3, 3) {
		t.Fatal("an announcement with the wrong epoch or from a non-winner was accepted")
	}
	if !players[0].Announced(2, 3) {
		t.Fatal("the winner's announcement was refused")
	}
	if players[0].Advance(t0.Add(time.Hour)) {
		t.Fatal("a decided election moved on")
	}
	// The others hear nothing more: after a long silence nobody is left.
	players[1].Advance(t0.Add(time.Hour))
	if _, _, err := players[1].Winner(); !errors.Is(err, ErrNoHost) {
		t.Fatalf("exhausted election: %v", err)
	}
	// A roster with no candidate besides the host: ErrNoHost at once.
	var e Election
	e.Start(t0, &Roster{Epoch: 5, Host: 1, Members: []Member{{Slot: 1, ClientID: 1, Candidate: true, Addr: "h:1"}, {Slot: 2, ClientID: 2}}})
	if _, _, err := e.Winner(); !errors.Is(err, ErrNoHost) {
		t.Fatalf("no candidates: %v", err)
	}
}
