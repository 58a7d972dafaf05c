package migrate

import (
	"errors"
	"fmt"

	"github.com/tickwire/tickwire/deltacomp"
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

// AppendStateFrame appends the standby state frame of eng's last step
// (epoch e) with the snapshots of past (earlier ticks, ascending; the
// host keeps them, deltacomp's ring does), each compressed with codec.
func AppendStateFrame(b []byte, c *deltacomp.Codecs, codec proto.Codec, e Epoch, eng *sim.Server, past []*deltacomp.Snapshot) ([]byte, error) {
	st := eng.State(nil)
	if len(past)+1 > proto.MaxStandbySnapshots {
		past = past[len(past)+1-proto.MaxStandbySnapshots:]
	}
	// Encode every snapshot into one buffer, then parse them back (the
	// frames alias it) to nest them.
	var full []byte
	ends := make([]int, 0, len(past)+1)
	for _, s := range append([]*deltacomp.Snapshot{eng.Snapshot()}, past...) {
		var err error
		if full, err = c.AppendFullSnapshot(full, s, proto.CauseMigration, st.Revision, codec); err != nil {
			return b, err
		}
		ends = append(ends, len(full))
	}
	f := proto.StandbyStateFrame{Epoch: uint32(e), Tick: st.Tick, Revision: st.Revision, ServerSpawn: st.ServerSpawn,
		Players: st.Players, Snapshots: make([]proto.FullSnapshotFrame, len(ends))}
	start := 0
	for i, end := range ends {
		s, _, err := proto.ParseFullSnapshotFrame(full[start:end])
		if err != nil {
			return b, err
		}
		f.Snapshots[i], start = s, end
	}
	return f.Append(b)
}

// ErrStateFrame wraps what makes a standby state frame unusable.
var ErrStateFrame = errors.New("migrate: bad standby state frame")

// LoadStateFrame loads the standby state f carries into sb: world (a
// fresh world of the game) gets the state's snapshot, the others become
// the lag-compensation past.
func LoadStateFrame(sb *Standby, f *proto.StandbyStateFrame, world sim.Game, cfg sim.ServerConfig, c *deltacomp.Codecs) error {
	if Epoch(f.Epoch) < sb.epoch {
		sb.stats.StaleFrames++
		return ErrStaleEpoch // before any decoding work
	}
	if len(f.Snapshots) == 0 || f.Snapshots[0].Tick != f.Tick {
		return fmt.Errorf("%w: the first snapshot is not of the state's tick", ErrStateFrame)
	}
	snaps := make([]*deltacomp.Snapshot, len(f.Snapshots))
	for i := range f.Snapshots {
		snaps[i] = new(deltacomp.Snapshot)
		if err := c.DecodeFullSnapshot(snaps[i], &f.Snapshots[i]); err != nil {
			return fmt.Errorf("%w: snapshot of tick %d: %w", ErrStateFrame, f.Snapshots[i].Tick, err)
		}
	}
	if err := world.ReadSnapshot(snaps[0]); err != nil {
		return fmt.Errorf("%w: %w", ErrStateFrame, err)
	}
	st := sim.ServerState{Tick: f.Tick, Revision: f.Revision, Players: f.Players, ServerSpawn: f.ServerSpawn}
	return sb.Load(Epoch(f.Epoch), world, cfg, st, snaps[1:]...)
}
