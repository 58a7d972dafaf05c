package migrate

import (
	"errors"
	"strings"
	"testing"
)

// roster4 is the roster of a four-player peer-hosted game hosted by slot
// 1: slots 2 and 4 offered to host, slot 3 did not.
func roster4() Roster {
	return Roster{Epoch: 1, Host: 1, Members: []Member{
		{Slot: 1, ClientID: 0x50, Candidate: true, Addr: "10.0.0.1:7000"},
		{Slot: 2, ClientID: 0x90, Candidate: true, Addr: "10.0.0.2:7000"},
		{Slot: 3, ClientID: 0x10},
		{Slot: 4, ClientID: 0x30, Candidate: true, Addr: "10.0.0.4:7000"},
	}}
}

func slots(ms []Member) []uint16 {
	var out []uint16
	for _, m := range ms {
		out = append(out, m.Slot)
	}
	return out
}

// TestSuccession: the candidates other than the host, by client id;
// players who did not offer to host never appear.
func TestSuccession(t *testing.T) {
	r := roster4()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	got := slots(r.Succession(nil))
	if len(got) != 2 || got[0] != 4 || got[1] != 2 {
		t.Fatalf("succession %v, want [4 2] (client ids 0x30, 0x90)", got)
	}
	w, e, ok := Elect(&r, nil)
	if !ok || w.Slot != 4 || e != 2 {
		t.Fatalf("elected %d at epoch %d (%v), want 4 at 2", w.Slot, e, ok)
	}
	w, e, ok = Elect(&r, func(s uint16) bool { return s == 4 })
	if !ok || w.Slot != 2 || e != 3 {
		t.Fatalf("with 4 struck: elected %d at epoch %d, want 2 at 3", w.Slot, e)
	}
	if _, _, ok := Elect(&r, func(uint16) bool { return true }); ok {
		t.Fatal("elected someone with every candidate struck")
	}
	// The next host's roster: 4 hosts at epoch 2, 1 is gone.
	r2 := Roster{Epoch: 2, Host: 4, Members: []Member{r.Members[1], r.Members[2], r.Members[3]}}
	if got := slots(r2.Succession(nil)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after the first migration: succession %v, want [2]", got)
	}
	r3 := Roster{Epoch: 3, Host: 2, Members: []Member{r.Members[1], r.Members[2]}}
	if _, _, ok := Elect(&r3, nil); ok {
		t.Fatal("a roster whose only candidate is the host elected someone")
	}
}

// TestRosterValidate: each rule, on a roster that breaks only it.
func TestRosterValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(r *Roster)
		want   error
	}{
		{"epoch zero", func(r *Roster) { r.Epoch = 0 }, ErrRosterEpochZero},
		{"empty", func(r *Roster) { r.Members = nil }, ErrRosterSize},
		{"too many", func(r *Roster) { r.Members = make([]Member, MaxMembers+1) }, ErrRosterSize},
		{"slot zero", func(r *Roster) { r.Members[0].Slot = 0 }, ErrRosterOrder},
		{"unsorted", func(r *Roster) { r.Members[1].Slot, r.Members[2].Slot = 3, 2 }, ErrRosterOrder},
		{"duplicate slot", func(r *Roster) { r.Members[2].Slot = 2 }, ErrRosterOrder},
		{"client id zero", func(r *Roster) { r.Members[2].ClientID = 0 }, ErrRosterClientID},
		{"duplicate client id", func(r *Roster) { r.Members[3].ClientID = 0x50 }, ErrRosterClientID},
		{"candidate without address", func(r *Roster) { r.Members[1].Addr = "" }, ErrRosterAddr},
		{"address without candidacy", func(r *Roster) { r.Members[2].Addr = "x:1" }, ErrRosterAddr},
		{"long address", func(r *Roster) { r.Members[1].Addr = strings.Repeat("a", MaxAddrLength+1) }, ErrRosterAddr},
		{"host not a member", func(r *Roster) { r.Host = 9 }, ErrRosterHost},
	} {
		r := roster4()
		c.change(&r)
		if err := r.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	r := roster4()
	r.Host = 0 // a dedicated host that is not a player
	if err := r.Validate(); err != nil {
		t.Fatalf("roster of a non-player host: %v", err)
	}
	if got := slots(r.Succession(nil)); len(got) != 3 || got[0] != 4 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("succession without a player host %v, want [4 1 2]", got)
	}
}

// TestEpochGate: a gate follows the newest epoch and refuses older ones.
func TestEpochGate(t *testing.T) {
	var g EpochGate
	if !g.Admit(1) || g.Current() != 1 {
		t.Fatal("gate refused its first epoch")
	}
	if !g.Admit(1) || !g.Admit(3) || g.Current() != 3 {
		t.Fatal("gate refused a current or newer epoch")
	}
	if g.Admit(2) || g.Stale != 1 || g.Current() != 3 {
		t.Fatalf("gate admitted epoch 2 after 3 (stale %d)", g.Stale)
	}
	if Replaced(3, 3) || !Replaced(3, 4) || Replaced(3, 2) {
		t.Fatal("Replaced")
	}
}
