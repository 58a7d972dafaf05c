package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/sim"
)

// Games makes the blank worlds a re-run starts from (a full state
// replaces them): a recording names its game (Header.Game), the caller
// knows its code.
type Games struct {
	// State makes a world of a state-sync game (nil: none).
	State func() sim.Game
	// Commits makes a world of a commits-mode game (nil: none).
	Commits func() sim.CommitGame
}

// Mismatch is where a re-run first disagreed with what was recorded.
type Mismatch struct {
	Tick uint32
	// What disagreed: "checksum" (Want recorded, Got re-run) or
	// "state" (the full state recorded, Differences from the re-run's:
	// A the recording's, B the re-run's).
	What        string
	Want, Got   uint64       `json:",omitempty"`
	Differences []Difference `json:",omitempty"`
}

// CheckReport is what Check did.
type CheckReport struct {
	Role Role
	Game string
	// First and Last are the ticks re-run (from the first full state).
	First, Last uint32
	// Steps counts the ticks re-run; Checksums and States the recorded
	// checksums and full states the re-run reproduced or not.
	Steps, Checksums, States int
	// Restarts counts the full states the re-run started again from,
	// after a gap, a resync or a corrupt record.
	Restarts int
	// Mismatch is the first disagreement (nil: none).
	Mismatch *Mismatch `json:",omitempty"`
	// Note says what could not be checked, and why.
	Note string `json:",omitempty"`
}

// Check re-runs a recording with the game's code and compares every
// checksum and full state it recorded: a state-sync server's from its
// first full state, step by step (sim.Server.Replay), a commits-mode
// recording tick by tick from its committed commands. The first
// mismatch is reported and ends the check. A state-sync client's
// recording does not re-run alone (the other players' inputs are the
// server's): Check counts what it holds, and Bisect compares it with
// the server's.
func Check(rec *Recording, games Games) (CheckReport, error) {
	h := &rec.Header
	rep := CheckReport{Role: h.Role, Game: h.Game}
	switch {
	case h.Role == RoleServer:
		if games.State == nil {
			return rep, fmt.Errorf("replay: no state-sync game %q to re-run", h.Game)
		}
		r := newServerRun(rec, games.State)
		err := r.run(&rep, nil)
		return rep, err
	case h.Role.Commits():
		if games.Commits == nil {
			return rep, fmt.Errorf("replay: no commits-mode game %q to re-run", h.Game)
		}
		r := newCommitRun(rec, games.Commits)
		err := r.run(&rep, nil)
		return rep, err
	}
	var inputs, predicted, checks, bad int
	for _, x := range rec.Records {
		switch x.Type {
		case RecordInput:
			inputs++
		case RecordPredicted:
			predicted++
		case RecordCheck:
			checks++
			if _, ok, err := ParseCheck(x.Body); err == nil && !ok {
				bad++
			}
		}
	}
	rep.Checksums = checks
	rep.Note = fmt.Sprintf("a state-sync client's recording (%d inputs, %d first steps, %d checksums received, %d of them not matched) "+
		"is checked against the server's: tickwire-replay -bisect server.replay client.replay", inputs, predicted, checks, bad)
	return rep, nil
}

// startAt notes that a re-run (started if it had before) starts again
// from the state of tick.
func (rep *CheckReport) startAt(tick uint32, started *bool) {
	if *started {
		rep.Restarts++
	} else {
		rep.First, *started = tick, true
	}
	rep.Last = tick
}

// serverRun re-runs a state-sync server's recording.
type serverRun struct {
	rec   *Recording
	make  func() sim.Game
	cfg   sim.ServerConfig
	eng   *sim.Server
	step  sim.StepRecord
	sum   sim.Checksummer
	world sim.Game // the last world made, for naming fields
}

func newServerRun(rec *Recording, mk func() sim.Game) *serverRun {
	h := &rec.Header
	period := time.Second / time.Duration(h.TickRate)
	history := time.Duration(max(h.HistoryTicks, 1)) * period
	return &serverRun{rec: rec, make: mk, world: mk(), cfg: sim.ServerConfig{TickRate: h.TickRate, SpawnsPerTick: h.SpawnsPerTick,
		History: history, MaxRewind: history, ChecksumInterval: -1}}
}

// run re-runs the recording, filling rep; stepped, if set, is called
// after every tick re-run with the step's record (it returns false to
// stop).
func (r *serverRun) run(rep *CheckReport, stepped func(eng *sim.Server, step *sim.StepRecord) bool) error {
	started := false
	for _, x := range r.rec.Records {
		switch x.Type {
		case RecordState:
			st, err := ParseServerState(x.Body, x.Tick, r.rec.Header.Schema.RecordSize)
			if err != nil {
				return fmt.Errorf("replay: full state of tick %d: %w", x.Tick, err)
			}
			if r.eng != nil && r.eng.Tick() == x.Tick {
				rep.States++
				if d := diffSnapshots(st.Snapshots[0], r.eng.Snapshot(), r.world, nil); len(d) > 0 {
					rep.Mismatch = &Mismatch{Tick: x.Tick, What: "state", Differences: d}
					return nil
				}
				continue
			}
			if err := r.restore(&st); err != nil {
				return err
			}
			rep.startAt(x.Tick, &started)
		case RecordStep:
			if r.eng == nil || x.Tick != r.eng.Tick()+1 {
				continue
			}
			if err := ParseStep(x.Body, x.Tick, r.rec.Header.Schema.InputSize, &r.step); err != nil {
				return fmt.Errorf("replay: step of tick %d: %w", x.Tick, err)
			}
			if err := r.eng.Replay(&r.step); err != nil {
				return fmt.Errorf("replay: re-running tick %d: %w", x.Tick, err)
			}
			rep.Steps++
			rep.Last = x.Tick
			if stepped != nil && !stepped(r.eng, &r.step) {
				return nil
			}
		case RecordChecksum:
			if r.eng == nil || x.Tick != r.eng.Tick() {
				continue
			}
			want, err := ParseChecksum(x.Body)
			if err != nil {
				return fmt.Errorf("replay: checksum of tick %d: %w", x.Tick, err)
			}
			rep.Checksums++
			if got := r.sum.SnapshotSum(r.eng.Snapshot()); got != want {
				rep.Mismatch = &Mismatch{Tick: x.Tick, What: "checksum", Want: want, Got: got}
				return nil
			}
		case RecordEvent:
			if e, err := ParseEvent(x.Body); err == nil && e.Kind == EventGap {
				r.eng = nil // records are missing: start again at the next state
			}
		}
	}
	if !started {
		return errors.New("replay: the recording holds no full state to start from")
	}
	return nil
}

// restore makes the engine continue from a recorded full state.
func (r *serverRun) restore(st *ServerState) error {
	r.world = r.make()
	if err := r.world.ReadSnapshot(st.Snapshots[0]); err != nil {
		return fmt.Errorf("replay: the full state of tick %d does not load: %w", st.State.Tick, err)
	}
	eng, err := sim.RestoreServer(r.world, r.cfg, st.State, st.Snapshots[1:]...)
	if err != nil {
		return fmt.Errorf("replay: restoring the state of tick %d: %w", st.State.Tick, err)
	}
	r.eng = eng
	return nil
}

// commitRun re-runs a commits-mode recording.
type commitRun struct {
	rec   *Recording
	make  func() sim.CommitGame
	ls    *sim.Lockstep
	world sim.CommitGame // a world of the game, for naming fields
}

func newCommitRun(rec *Recording, mk func() sim.CommitGame) *commitRun {
	return &commitRun{rec: rec, make: mk, world: mk()}
}

// run re-runs the recording, filling rep; committed, if set, is called
// after every tick committed (it returns false to stop).
func (r *commitRun) run(rep *CheckReport, committed func(ls *sim.Lockstep) bool) error {
	started := false
	for _, x := range r.rec.Records {
		switch x.Type {
		case RecordCommitted:
			c, err := ParseCommitted(x.Body, x.Tick)
			if err != nil {
				return fmt.Errorf("replay: committed state of tick %d: %w", x.Tick, err)
			}
			if c.Cause == StateBeforeDesync {
				continue // the client's own states before a desync: for Bisect
			}
			if r.ls != nil && c.Cause == StatePeriodic && r.ls.CommittedTick() == x.Tick {
				rep.States++
				if got := r.ls.AppendState(nil); string(got) != string(c.State) {
					d := diffCanonical(c.Canonical(), r.ls.Committed().AppendCanonical(nil), r.world)
					rep.Mismatch = &Mismatch{Tick: x.Tick, What: "state", Differences: d}
					return nil
				}
				continue
			}
			if err := r.load(&c); err != nil {
				return err
			}
			rep.startAt(x.Tick, &started)
		case RecordCommands:
			if r.ls == nil || int32(x.Tick-r.ls.CommittedTick()) <= 0 {
				continue
			}
			cmds, err := ParseCommands(x.Body, x.Tick, r.rec.Header.Schema.InputSize)
			if err != nil {
				return fmt.Errorf("replay: commands of tick %d: %w", x.Tick, err)
			}
			for i := range cmds {
				if err := r.ls.Add(&cmds[i]); err != nil {
					return fmt.Errorf("replay: command of tick %d: %w", x.Tick, err)
				}
			}
		case RecordChecksum:
			if r.ls == nil || int32(x.Tick-r.ls.CommittedTick()) <= 0 {
				continue
			}
			want, err := ParseChecksum(x.Body)
			if err != nil {
				return fmt.Errorf("replay: checksum of tick %d: %w", x.Tick, err)
			}
			if x.Tick != r.ls.CommittedTick()+1 {
				return fmt.Errorf("replay: the recording skips from tick %d to %d", r.ls.CommittedTick(), x.Tick)
			}
			if err := r.ls.Commit(x.Tick); err != nil {
				return fmt.Errorf("replay: committing tick %d: %w", x.Tick, err)
			}
			rep.Steps++
			rep.Checksums++
			rep.Last = x.Tick
			if got, _ := r.ls.CommittedSum(x.Tick); got != want {
				rep.Mismatch = &Mismatch{Tick: x.Tick, What: "checksum", Want: want, Got: got}
				return nil
			}
			if committed != nil && !committed(r.ls) {
				return nil
			}
		case RecordEvent:
			if e, err := ParseEvent(x.Body); err == nil && e.Kind == EventGap {
				r.ls = nil
			}
		}
	}
	if !started {
		return errors.New("replay: the recording holds no committed state to start from")
	}
	return nil
}

// load makes the re-run continue from a recorded committed state.
func (r *commitRun) load(c *Committed) error {
	if r.ls == nil {
		ls, err := sim.NewLockstep(r.make(), 0, nil, sim.LockstepConfig{SumHistory: 1})
		if err != nil {
			return err
		}
		r.ls = ls
	}
	if err := r.ls.LoadState(c.State); err != nil {
		return fmt.Errorf("replay: the committed state of tick %d does not load: %w", le.Uint32(c.State), err)
	}
	return nil
}
