package migrate

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Frame returns the roster frame of r. Its members and addresses are new
// memory.
func (r *Roster) Frame() proto.RosterFrame {
	f := proto.RosterFrame{Epoch: uint32(r.Epoch), Host: r.Host, Members: make([]proto.RosterMember, len(r.Members))}
	for i, m := range r.Members {
		f.Members[i] = proto.RosterMember{Slot: m.Slot, ClientID: m.ClientID, Candidate: m.Candidate, Addr: []byte(m.Addr)}
	}
	return f
}

// RosterFromFrame returns the roster f carries, validated (a player
// follows only a valid roster).
func RosterFromFrame(f *proto.RosterFrame) (Roster, error) {
	r := Roster{Epoch: Epoch(f.Epoch), Host: f.Host, Members: make([]Member, len(f.Members))}
	for i, m := range f.Members {
		r.Members[i] = Member{Slot: m.Slot, ClientID: m.ClientID, Candidate: m.Candidate, Addr: string(m.Addr)}
	}
	if err := r.Validate(); err != nil {
		return Roster{}, err
	}
	return r, nil
}

// StepFrame fills f (reusing its slices) with the record r of epoch e;
// the frame aliases r's memory. inputSize is the game's
// sim.Schema.InputSize.
func StepFrame(f *proto.StandbyStepFrame, e Epoch, inputSize int, r *sim.StepRecord) {
	*f = proto.StandbyStepFrame{Epoch: uint32(e), Tick: r.Tick, InputSize: uint16(inputSize),
		Changes: f.Changes[:0], Inputs: f.Inputs[:0], Messages: f.Messages[:0]}
	for _, c := range r.Changes {
		sc := proto.StandbyChange{Player: c.Player, Join: c.Join}
		if !c.Join {
			sc.Reason = []byte(c.Reason[:min(len(c.Reason), proto.MaxControlText)])
		}
		f.Changes = append(f.Changes, sc)
	}
	for _, in := range r.Inputs {
		f.Inputs = append(f.Inputs, proto.StandbyInput{Player: in.Player, Missing: in.Missing, Rejected: in.Rejected,
			Rewound: in.Rewound, From: in.View.From, To: in.View.To, Blend: in.View.Blend, Data: in.Data})
	}
	for _, m := range r.Messages {
		f.Messages = append(f.Messages, proto.StandbyMessage{Player: m.Player, Channel: m.Channel, Tick: m.Tick, Late: m.Late, Data: m.Data})
	}
}

// ErrStepFrame wraps what makes a standby step frame unusable.
var ErrStepFrame = errors.New("migrate: bad standby step frame")

// StepRecordFromFrame fills r (reusing its slices) with the record f
// carries, aliasing f's memory (copy before the packet buffer goes).
// Inputs must be in ascending player order, at most one per player;
// sim.Server.Replay checks them against the players it has.
func StepRecordFromFrame(r *sim.StepRecord, f *proto.StandbyStepFrame) (Epoch, error) {
	r.Reset()
	r.Tick = f.Tick
	for _, c := range f.Changes {
		r.Changes = append(r.Changes, sim.MemberChange{Player: c.Player, Join: c.Join, Reason: string(c.Reason)})
	}
	for i, in := range f.Inputs {
		if i > 0 && f.Inputs[i-1].Player >= in.Player {
			return 0, fmt.Errorf("%w: inputs not in ascending player order", ErrStepFrame)
		}
		r.Inputs = append(r.Inputs, sim.RecordedInput{Player: in.Player, Data: in.Data, Missing: in.Missing, Rejected: in.Rejected,
			Rewound: in.Rewound, View: sim.View{From: in.From, To: in.To, Blend: in.Blend}})
	}
	for _, m := range f.Messages {
		r.Messages = append(r.Messages, sim.Message{Player: m.Player, Channel: m.Channel, Tick: m.Tick, Late: m.Late, Data: m.Data})
	}
	return Epoch(f.Epoch), nil
}
