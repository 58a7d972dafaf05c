package migrate

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// PendingInput is an input the host received (and acknowledged) for a
// tick it has not simulated yet, with the view its packet named.
type PendingInput struct {
	Player uint16
	Tick   uint32
	Data   []byte
	View   sim.View
}

// PendingMessage is a postmarked message the host received for a tick it
// has not simulated yet.
type PendingMessage struct {
	Player  uint16
	Channel uint8
	Tick    uint32
	Data    []byte
}

// Bounds of what a standby buffers beyond its engine: inputs and
// messages the host received for ticks not yet recorded. Beyond them
// the oldest go (and are counted): a player re-sends its unacknowledged
// inputs after a migration anyway.
const (
	MaxPendingInputs   = 4096
	MaxPendingMessages = 1024
)

// Standby errors.
var (
	ErrNotLoaded  = errors.New("migrate: standby has no state (not ready)")
	ErrStaleEpoch = errors.New("migrate: frame of an older epoch")
)

// StandbyStats count what a standby did.
type StandbyStats struct {
	Loads, Steps         uint64
	StaleFrames          uint64 // frames of an older epoch
	ReplayErrors         uint64 // records that did not replay (the standby waits for a new state)
	PendingInputsDropped uint64
	PendingMsgsDropped   uint64
}

// Standby is the warm standby of the next host in line: an engine
// restored from the host's state (Load) that replays every step record
// the host sends (Step), so it is at the host's tick, with the host's
// exact world, whenever the host goes; plus the inputs and messages the
// host received for later ticks (AddInput, AddMessage). Promote turns it
// into the new authority. It does no I/O and reads no clock.
type Standby struct {
	epoch   Epoch
	eng     *sim.Server
	inputs  []PendingInput
	msgs    []PendingMessage
	stats   StandbyStats
	scratch proto.InputFrame
}

// Stats returns the counters.
func (s *Standby) Stats() StandbyStats { return s.stats }

// Epoch is the host epoch the standby follows.
func (s *Standby) Epoch() Epoch { return s.epoch }

// admit checks a frame's epoch: an older one is refused, a newer one
// (a new host after a migration) drops everything of the old one.
func (s *Standby) admit(e Epoch) error {
	switch {
	case e < s.epoch:
		s.stats.StaleFrames++
		return ErrStaleEpoch
	case e > s.epoch:
		s.epoch, s.eng = e, nil
		s.inputs, s.msgs = s.inputs[:0], s.msgs[:0]
	}
	return nil
}

// Load replaces the standby's engine with the host's state of epoch e:
// world already holds the state of st.Tick (its ReadSnapshot of the
// host's snapshot), past are the host's snapshots before it (see
// sim.RestoreServer). Pending inputs and messages for ticks after
// st.Tick are kept.
func (s *Standby) Load(e Epoch, world sim.Game, cfg sim.ServerConfig, st sim.ServerState, past ...*deltacomp.Snapshot) error {
	if err := s.admit(e); err != nil {
		return err
	}
	eng, err := sim.RestoreServer(world, cfg, st, past...)
	if err != nil {
		s.eng = nil
		return err
	}
	s.eng = eng
	s.stats.Loads++
	s.trim(st.Tick)
	return nil
}

// Step replays the host's record of its next tick. A record that does
// not replay (a gap, other players, a rewind beyond the history) drops
// the engine: the standby is not ready until the next Load.
func (s *Standby) Step(e Epoch, r *sim.StepRecord) error {
	if err := s.admit(e); err != nil {
		return err
	}
	if s.eng == nil {
		return ErrNotLoaded
	}
	if err := s.eng.Replay(r); err != nil {
		s.eng = nil
		s.stats.ReplayErrors++
		return err
	}
	s.stats.Steps++
	for _, m := range r.Messages {
		s.ran(m)
	}
	s.trim(r.Tick)
	return nil
}

// ran forgets the pending message m, which a replayed step ran (a
// message postmarked beyond the input buffer runs before its tick).
func (s *Standby) ran(m sim.Message) {
	for i, p := range s.msgs {
		if p.Player == m.Player && p.Channel == m.Channel && p.Tick == m.Tick && string(p.Data) == string(m.Data) {
			s.msgs = slices.Delete(s.msgs, i, i+1)
			return
		}
	}
}

// trim forgets pending inputs and messages for ticks up to tick, which
// the engine has simulated (the record carried what ran).
func (s *Standby) trim(tick uint32) {
	s.inputs = slices.DeleteFunc(s.inputs, func(p PendingInput) bool { return int32(p.Tick-tick) <= 0 })
	s.msgs = slices.DeleteFunc(s.msgs, func(m PendingMessage) bool { return int32(m.Tick-tick) <= 0 })
}

// AddInput buffers an input the host received for a later tick (copied).
func (s *Standby) AddInput(e Epoch, in PendingInput) error {
	if err := s.admit(e); err != nil {
		return err
	}
	if s.eng != nil && int32(in.Tick-s.eng.Tick()) <= 0 {
		return nil // already simulated: the records carry it
	}
	if len(s.inputs) == MaxPendingInputs {
		s.inputs = append(s.inputs[:0], s.inputs[1:]...)
		s.stats.PendingInputsDropped++
	}
	in.Data = append([]byte(nil), in.Data...)
	s.inputs = append(s.inputs, in)
	return nil
}

// AddMessage buffers a postmarked message the host received for a later
// tick (copied).
func (s *Standby) AddMessage(e Epoch, m PendingMessage) error {
	if err := s.admit(e); err != nil {
		return err
	}
	if len(s.msgs) == MaxPendingMessages {
		s.msgs = append(s.msgs[:0], s.msgs[1:]...)
		s.stats.PendingMsgsDropped++
	}
	m.Data = append([]byte(nil), m.Data...)
	s.msgs = append(s.msgs, m)
	return nil
}

// Drop forgets the engine and the pending inputs and messages: the
// standby is not ready until the next Load. Its host stopped feeding it
// (it is a standby no more), or it is of an older epoch than the host
// lost: promoting it would start from a state the game left behind.
func (s *Standby) Drop() {
	s.eng = nil
	s.inputs, s.msgs = s.inputs[:0], s.msgs[:0]
}

// Ready reports whether the standby can take over now, and at which
// tick (the host's last recorded step).
func (s *Standby) Ready() (tick uint32, ok bool) {
	if s.eng == nil {
		return 0, false
	}
	return s.eng.Tick(), true
}

// Promote makes the standby's engine the authority at now: its schedule
// resumes (the next tick due one period later) and the pending inputs
// and messages go into its buffers as if the players had just sent
// them. The standby is empty afterwards (the new host records for its
// own successor). The new host's epoch is the election's.
func (s *Standby) Promote(now time.Time) (*sim.Server, error) {
	eng := s.eng
	if eng == nil {
		return nil, ErrNotLoaded
	}
	eng.Resume(now)
	for _, in := range s.inputs {
		h := proto.Header{Tick: in.Tick, InterpFrom: in.View.From, InterpTo: in.View.To, Blend: in.View.Blend}
		s.scratch = proto.InputFrame{Player: in.Player, Tick: in.Tick, Count: 1, Size: uint16(len(in.Data)), Data: in.Data}
		if err := eng.ReceiveInput(now, &h, &s.scratch); err != nil && !errors.Is(err, sim.ErrNoPlayer) {
			return nil, fmt.Errorf("migrate: pending input of player %d: %w", in.Player, err)
		}
	}
	for _, m := range s.msgs {
		f := proto.MessageFrame{Channel: m.Channel, Postmarked: true, Tick: m.Tick, Data: m.Data}
		if err := eng.ReceiveMessage(now, m.Player, &f); err != nil && !errors.Is(err, sim.ErrNoPlayer) {
			return nil, fmt.Errorf("migrate: pending message of player %d: %w", m.Player, err)
		}
	}
	s.eng, s.inputs, s.msgs = nil, s.inputs[:0], s.msgs[:0]
	return eng, nil
}
