package replay

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Side describes one of the two recordings Bisect compares.
type Side struct {
	Path   string
	Role   Role
	Game   string
	GameID uint64
}

// TickInput is an input or a command of the tick Bisect names, as one
// recording holds it.
type TickInput struct {
	// From is "A" or "B": the recording that holds it.
	From   string
	Player uint16
	// Kind is "input" (a state-sync input as the server's step took it
	// or the client sampled it, a commits-mode command), "join" or
	// "leave".
	Kind string
	// Seq is a commits-mode command's number.
	Seq uint32 `json:",omitempty"`
	// Data is the input's bytes, in hex.
	Data string `json:",omitempty"`
	// Missing and Rejected are the server's step's: no input arrived in
	// time (the previous one repeated, its action zeroed), or
	// ValidateAction refused its action.
	Missing  bool `json:",omitempty"`
	Rejected bool `json:",omitempty"`
}

// BisectReport is what Bisect found.
type BisectReport struct {
	A, B Side
	// How is what was compared: "prediction" (a state-sync client's
	// first steps against the server's states), "checksums" (every
	// tick's checksums, then the states of the first that differs).
	How string
	// Compared counts the ticks compared; From and To are the first and
	// last.
	Compared int
	From, To uint32
	// Skipped counts, for a prediction, the ticks not compared because
	// the server ran the client's players with other inputs than the
	// client sampled (late, lost or rejected): the difference those
	// make is not the game code's.
	Skipped int `json:",omitempty"`
	// Diverged is set when the recordings disagree; Tick is then the
	// first tick at which their states differ.
	Diverged bool
	Tick     uint32 `json:",omitempty"`
	// StateTick is the tick whose states Differences compares: Tick,
	// unless a recording does not hold its state there (Note says so).
	StateTick uint32 `json:",omitempty"`
	// Differences lists, entity by entity, what differs (A's value,
	// B's value).
	Differences []Difference `json:",omitempty"`
	// Inputs are the inputs or commands of Tick.
	Inputs []TickInput `json:",omitempty"`
	// Note says what the comparison could not do, or why it stopped.
	Note string `json:",omitempty"`

	skipped []uint32 // the ticks Skipped counts, for the timeline
}

// Bisect finds the first tick at which two recordings of the same game
// disagree and names what differs there: the entities, their fields
// (by the game's names, sim.RecordFields and sim.CanonicalFields), and
// the inputs or commands of that tick. It compares
//
//   - a state-sync server's recording with a client's: the client's
//     own entities as its game code stepped them from each
//     authoritative state (ClientRecorder.FirstStep) against the
//     server's state at that tick, re-run from the server's recording,
//     on the ticks where the server ran the client's players with the
//     inputs the client sampled;
//   - two state-sync servers' recordings, or two commits-mode
//     recordings (clients', or a client's and the server's): the
//     checksums of every tick, then the states of the first tick whose
//     checksums differ, as recorded or re-run from the commands.
func Bisect(a, b *Recording, games Games) (BisectReport, error) {
	rep := BisectReport{A: side(a), B: side(b)}
	if a.Header.Game != b.Header.Game {
		return rep, fmt.Errorf("replay: the recordings are of different games (%q and %q)", a.Header.Game, b.Header.Game)
	}
	ra, rb := a.Header.Role, b.Header.Role
	switch {
	case ra == RoleServer && rb == RoleClient || ra == RoleClient && rb == RoleServer:
		if games.State == nil {
			return rep, fmt.Errorf("replay: no state-sync game %q to re-run", a.Header.Game)
		}
		err := bisectPrediction(&rep, a, b, games)
		return rep, err
	case ra == RoleServer && rb == RoleServer:
		if games.State == nil {
			return rep, fmt.Errorf("replay: no state-sync game %q to re-run", a.Header.Game)
		}
		err := bisectServers(&rep, a, b, games)
		return rep, err
	case ra.Commits() && rb.Commits():
		if games.Commits == nil {
			return rep, fmt.Errorf("replay: no commits-mode game %q to re-run", a.Header.Game)
		}
		err := bisectCommits(&rep, a, b, games)
		return rep, err
	}
	return rep, fmt.Errorf("replay: cannot compare a %v's recording with a %v's: bisect a state-sync server's with a client's "+
		"or another server's, or two commits-mode recordings", ra, rb)
}

func side(r *Recording) Side {
	return Side{Path: r.Path, Role: r.Header.Role, Game: r.Header.Game, GameID: r.Header.GameID}
}

// bisectPrediction compares a state-sync client's first steps with the
// server's states.
func bisectPrediction(rep *BisectReport, a, b *Recording, games Games) error {
	rep.How = "prediction"
	srv, cli, cliName, srvName := a, b, "B", "A"
	if a.Header.Role == RoleClient {
		srv, cli, cliName, srvName = b, a, "A", "B"
	}
	if srv.Header.Schema != cli.Header.Schema {
		return errors.New("replay: the recordings' schemas (input and record sizes) differ")
	}
	h := &cli.Header
	predicted := map[uint32][]byte{}
	type sampled struct {
		player uint16
		data   []byte
	}
	inputs := map[uint32][]sampled{}
	for _, x := range cli.Records {
		switch x.Type {
		case RecordPredicted:
			predicted[x.Tick] = x.Body
		case RecordInput:
			if p, in, err := ParseInput(x.Body, h.Schema.InputSize); err == nil {
				inputs[x.Tick] = append(slices.DeleteFunc(inputs[x.Tick], func(s sampled) bool { return s.player == p }), sampled{p, in})
			}
		}
	}
	if len(predicted) == 0 {
		rep.Note = "the client's recording holds no first steps (a headless client, or one that never got a state)"
		return nil
	}
	run := newServerRun(srv, games.State)
	var own func(proto.NetworkID) bool
	var pred deltacomp.Snapshot
	var check CheckReport
	err := run.run(&check, func(eng *sim.Server, step *sim.StepRecord) bool {
		tick := eng.Tick()
		body, ok := predicted[tick]
		if !ok {
			return true
		}
		if own == nil {
			own = ownerOf(eng.World(), h.Players)
		}
		for _, p := range h.Players {
			i := slices.IndexFunc(step.Inputs, func(in sim.RecordedInput) bool { return in.Player == p })
			j := slices.IndexFunc(inputs[tick], func(s sampled) bool { return s.player == p })
			if i < 0 || j < 0 || step.Inputs[i].Missing || step.Inputs[i].Rejected || !bytes.Equal(step.Inputs[i].Data, inputs[tick][j].data) {
				rep.Skipped++
				rep.skipped = append(rep.skipped, tick)
				return true
			}
		}
		if err := ParseEntities(&pred, body, tick, h.Schema.RecordSize); err != nil {
			rep.Note = fmt.Sprintf("the client's first step of tick %d is malformed: %v", tick, err)
			return false
		}
		if rep.Compared == 0 {
			rep.From = tick
		}
		rep.Compared++
		rep.To = tick
		sa, sb := eng.Snapshot(), &pred
		if srvName == "B" {
			sa, sb = sb, sa
		}
		if d := diffSnapshots(sa, sb, eng.World(), own); len(d) > 0 {
			rep.Diverged, rep.Tick, rep.StateTick, rep.Differences = true, tick, tick, d
			rep.Inputs = stepInputs(rep.Inputs, srvName, step)
			for _, s := range inputs[tick] {
				rep.Inputs = append(rep.Inputs, TickInput{From: cliName, Player: s.player, Kind: "input", Data: hex.EncodeToString(s.data)})
			}
			return false
		}
		return true
	})
	if err == nil && check.Mismatch != nil {
		rep.Note = fmt.Sprintf("the server's recording does not re-run past tick %d (its %s differs): this build's game code is not the server's",
			check.Mismatch.Tick, check.Mismatch.What)
	}
	return err
}

// ownerOf reports the entities a client of players owns, as the client
// engine tells them by default (sim.ClientConfig.Own).
func ownerOf(world sim.Game, players []uint16) func(proto.NetworkID) bool {
	if o, ok := world.(sim.EntityOwner); ok {
		return func(id proto.NetworkID) bool { return slices.Contains(players, o.Owner(id)) }
	}
	return func(id proto.NetworkID) bool { return slices.Contains(players, id.Spawner()) }
}

// stepInputs appends a server step's inputs and joins and leaves.
func stepInputs(dst []TickInput, from string, step *sim.StepRecord) []TickInput {
	for _, c := range step.Changes {
		kind := "leave"
		if c.Join {
			kind = "join"
		}
		dst = append(dst, TickInput{From: from, Player: c.Player, Kind: kind})
	}
	for _, in := range step.Inputs {
		dst = append(dst, TickInput{From: from, Player: in.Player, Kind: "input", Data: hex.EncodeToString(in.Data),
			Missing: in.Missing, Rejected: in.Rejected})
	}
	return dst
}

// bisectServers compares two state-sync servers' recordings, re-run.
func bisectServers(rep *BisectReport, a, b *Recording, games Games) error {
	rep.How = "checksums"
	sums := func(r *Recording) (map[uint32]uint64, error) {
		m := map[uint32]uint64{}
		var sum sim.Checksummer
		var check CheckReport
		err := newServerRun(r, games.State).run(&check, func(eng *sim.Server, _ *sim.StepRecord) bool {
			m[eng.Tick()] = sum.SnapshotSum(eng.Snapshot())
			return true
		})
		return m, err
	}
	sa, err := sums(a)
	if err != nil {
		return fmt.Errorf("recording A: %w", err)
	}
	sb, err := sums(b)
	if err != nil {
		return fmt.Errorf("recording B: %w", err)
	}
	d, ok := firstDifference(rep, sa, sb)
	if !ok {
		return nil
	}
	at := func(r *Recording) (*deltacomp.Snapshot, *sim.StepRecord, sim.Game, error) {
		var snap deltacomp.Snapshot
		var step sim.StepRecord
		var world sim.Game
		var check CheckReport
		err := newServerRun(r, games.State).run(&check, func(eng *sim.Server, s *sim.StepRecord) bool {
			if eng.Tick() != d {
				return true
			}
			snap.CopyFrom(eng.Snapshot())
			step = copyStep(s)
			world = eng.World()
			return false
		})
		return &snap, &step, world, err
	}
	snapA, stepA, world, err := at(a)
	if err != nil {
		return err
	}
	snapB, stepB, _, err := at(b)
	if err != nil {
		return err
	}
	rep.StateTick = d
	rep.Differences = diffSnapshots(snapA, snapB, world, nil)
	rep.Inputs = stepInputs(stepInputs(rep.Inputs, "A", stepA), "B", stepB)
	return nil
}

// copyStep is a StepRecord that owns its memory.
func copyStep(s *sim.StepRecord) sim.StepRecord {
	c := sim.StepRecord{Tick: s.Tick, Changes: slices.Clone(s.Changes), Inputs: slices.Clone(s.Inputs), Messages: slices.Clone(s.Messages)}
	for i := range c.Inputs {
		c.Inputs[i].Data = slices.Clone(c.Inputs[i].Data)
	}
	for i := range c.Messages {
		c.Messages[i].Data = slices.Clone(c.Messages[i].Data)
	}
	return c
}

// firstDifference compares two recordings' checksums tick by tick: it
// fills the report's counts and, at the first tick they differ, its
// Diverged and Tick.
func firstDifference(rep *BisectReport, a, b map[uint32]uint64) (uint32, bool) {
	var common []uint32
	for t := range a {
		if _, ok := b[t]; ok {
			common = append(common, t)
		}
	}
	slices.SortFunc(common, func(x, y uint32) int { return int(int32(x - y)) })
	if len(common) == 0 {
		rep.Note = "the recordings have no tick in common"
		return 0, false
	}
	rep.From = common[0]
	for _, t := range common {
		rep.Compared++
		rep.To = t
		if a[t] != b[t] {
			rep.Diverged, rep.Tick = true, t
			return t, true
		}
	}
	return 0, false
}

// bisectCommits compares two commits-mode recordings.
func bisectCommits(rep *BisectReport, a, b *Recording, games Games) error {
	rep.How = "checksums"
	sa, sb := commitSums(a), commitSums(b)
	d, ok := firstDifference(rep, sa, sb)
	if !ok {
		return nil
	}
	world := games.Commits()
	for _, x := range []struct {
		name string
		r    *Recording
	}{{"A", a}, {"B", b}} {
		for _, rec := range x.r.Records {
			if rec.Type == RecordCommands && rec.Tick == d {
				cmds, err := ParseCommands(rec.Body, d, x.r.Header.Schema.InputSize)
				if err != nil {
					continue
				}
				for _, c := range cmds {
					in := TickInput{From: x.name, Player: c.Player, Seq: c.Seq, Kind: [...]string{"input", "join", "leave"}[c.Kind]}
					in.Data = hex.EncodeToString(c.Data)
					rep.Inputs = append(rep.Inputs, in)
				}
			}
		}
	}
	stA, whyA := commitStateAt(a, d, sa[d], games)
	stB, whyB := commitStateAt(b, d, sb[d], games)
	if stA != nil && stB != nil {
		rep.StateTick = d
		rep.Differences = diffCanonical(stA, stB, world)
		return nil
	}
	// One side's state at d is not to be had: compare the first states
	// both hold after it.
	rep.Note = joinNotes(whyA, whyB)
	for _, rec := range b.Records {
		if rec.Type != RecordCommitted || int32(rec.Tick-d) <= 0 {
			continue
		}
		c, err := ParseCommitted(rec.Body, rec.Tick)
		if err != nil || c.Cause == StateBeforeDesync {
			continue
		}
		if sta, _ := commitStateAt(a, rec.Tick, sa[rec.Tick], games); sta != nil {
			if stb, _ := commitStateAt(b, rec.Tick, sb[rec.Tick], games); stb != nil {
				rep.StateTick = rec.Tick
				rep.Differences = diffCanonical(sta, stb, world)
				rep.Note += fmt.Sprintf("; the states compared are those of tick %d, the first both recordings hold after it", rec.Tick)
				return nil
			}
		}
	}
	return nil
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return "recording B: " + b
	case b == "":
		return "recording A: " + a
	}
	return "recording A: " + a + "; recording B: " + b
}

// commitSums are a commits-mode recording's checksums by tick.
func commitSums(r *Recording) map[uint32]uint64 {
	m := map[uint32]uint64{}
	for _, x := range r.Records {
		if x.Type == RecordChecksum {
			if s, err := ParseChecksum(x.Body); err == nil {
				m[x.Tick] = s
			}
		}
	}
	return m
}

// commitStateAt is r's committed canonical state after tick, whose
// checksum r recorded as sum: as recorded (a full state, or one kept
// before a desync), or re-run from the last state before it. nil, and
// why, when neither gives it.
func commitStateAt(r *Recording, tick uint32, sum uint64, games Games) ([]byte, string) {
	for _, x := range r.Records {
		if x.Type == RecordCommitted && x.Tick == tick {
			if c, err := ParseCommitted(x.Body, x.Tick); err == nil {
				return c.Canonical(), ""
			}
		}
	}
	var state []byte
	var check CheckReport
	run := newCommitRun(r, games.Commits)
	err := run.run(&check, func(ls *sim.Lockstep) bool {
		if ls.CommittedTick() != tick {
			return true
		}
		if got, _ := ls.CommittedSum(tick); got == sum {
			state = ls.Committed().AppendCanonical(nil)
		}
		return false
	})
	switch {
	case state != nil:
		return state, ""
	case err != nil:
		return nil, err.Error()
	case check.Mismatch != nil:
		return nil, fmt.Sprintf("its state of tick %d is not recorded, and this build's game code does not reproduce its checksum of tick %d "+
			"(its machine computed something else there)", tick, check.Mismatch.Tick)
	}
	return nil, fmt.Sprintf("its state of tick %d is neither recorded nor re-run", tick)
}
