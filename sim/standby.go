package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// A warm standby (host migration, docs/MIGRATION.md) keeps what it needs
// to continue a host's game at any tick: the engine state of some tick
// (ServerState plus the world's snapshot) and a StepRecord of every step
// since. Replaying the records from the state gives exactly the host's
// world: a record holds the inputs as the step took them (missing ones,
// rejected actions zeroed), the messages that ran, the players that
// joined or left before it and the lag-compensation view each rewind
// used, so nothing depends on arrival times or on the host's clock.

// ServerState is the engine state, besides the world, that a server
// continues from: the tick of the state, the revision, the joined players
// (ascending) and the server's spawn counter.
type ServerState struct {
	Tick        uint32
	Revision    uint32
	Players     []uint16
	ServerSpawn uint32
}

// State returns the engine state of the last step (Players appended to
// dst). With the world's snapshot (Snapshot) it is what RestoreServer
// continues from.
func (s *Server) State(dst []uint16) ServerState {
	return ServerState{Tick: s.tick, Revision: s.revision, Players: s.Players(dst), ServerSpawn: s.spawn.ids.server}
}

// MemberChange is a join (Join) or a leave (with its Reason) applied
// between two steps.
type MemberChange struct {
	Player uint16
	Join   bool
	Reason string
}

// RecordedInput is one player's input as a step took it.
type RecordedInput struct {
	Player   uint16
	Data     []byte // Schema.InputSize bytes, a rejected action zeroed
	Missing  bool
	Rejected bool
	// Rewound is set when the step called Tick.Rewind for the player;
	// View is then the view the rewind used.
	Rewound bool
	View    View
}

// StepRecord is what one server step consumed: the changes of
// membership applied before it, the inputs it took and the messages that
// ran. The record owns its memory (Record copies into it).
type StepRecord struct {
	Tick     uint32
	Changes  []MemberChange
	Inputs   []RecordedInput
	Messages []Message
	data     []byte
}

// Reset empties r for reuse, keeping its buffers.
func (r *StepRecord) Reset() {
	r.Tick = 0
	r.Changes = r.Changes[:0]
	r.Inputs = r.Inputs[:0]
	r.Messages = r.Messages[:0]
	r.data = r.data[:0]
}

// Errors of RestoreServer and Replay.
var (
	ErrReplayTick    = errors.New("sim: step record is not for the next tick")
	ErrReplayPlayers = errors.New("sim: step record's players differ from the server's")
	// ErrReplayHistory: the record rewinds into a tick the standby's
	// lag-compensation history does not hold (restore from a newer state,
	// with its past snapshots).
	ErrReplayHistory = errors.New("sim: step record rewinds beyond the restored history")
)

// Record copies the last step into r: call it after Step, before the next
// Join, Leave or Step. It allocates only while r's buffers grow.
func (s *Server) Record(r *StepRecord) {
	r.Reset()
	r.Tick = s.tick
	r.Changes = append(r.Changes, s.stepChanges...)
	// Copy the bytes first, then point the slices into r.data (appends
	// may move it).
	for _, in := range s.inputs {
		r.data = append(r.data, in.Data...)
		ri := RecordedInput{Player: in.Player, Data: in.Data, Missing: in.Missing, Rejected: in.Rejected}
		if p := s.player(in.Player); p != nil && p.rewound {
			ri.Rewound, ri.View = true, p.used
		}
		r.Inputs = append(r.Inputs, ri)
	}
	for _, m := range s.ran {
		r.data = append(r.data, m.Data...)
		r.Messages = append(r.Messages, m)
	}
	off := 0
	for i := range r.Inputs {
		n := len(r.Inputs[i].Data)
		r.Inputs[i].Data = r.data[off : off+n : off+n]
		off += n
	}
	for i := range r.Messages {
		n := len(r.Messages[i].Data)
		r.Messages[i].Data = r.data[off : off+n : off+n]
		off += n
	}
}

// RestoreServer returns a server engine that continues from st: game
// already holds the world of st.Tick (ReadSnapshot of the host's
// snapshot); the players are added without OnPlayerJoin (their entities
// are in the world). past are the host's snapshots of ticks before
// st.Tick, ascending, for the lag-compensation history: a replayed rewind
// into a tick the history lacks is refused (ErrReplayHistory), so send
// at least MaxRewind's worth. Replay the steps since, then Resume.
func RestoreServer(game Game, cfg ServerConfig, st ServerState, past ...*deltacomp.Snapshot) (*Server, error) {
	s, err := NewServer(game, cfg)
	if err != nil {
		return nil, err
	}
	for i, p := range st.Players {
		if p == 0 || p > proto.MaxSpawner || i > 0 && st.Players[i-1] >= p {
			return nil, fmt.Errorf("sim: restored players %v are not ascending slots", st.Players)
		}
		s.addPlayer(p)
	}
	s.revision = st.Revision
	s.spawn.ids.server = st.ServerSpawn
	s.histFirst = st.Tick
	for i, p := range past {
		if p == nil {
			return nil, errors.New("sim: nil past snapshot")
		}
		if int32(st.Tick-p.Tick) <= 0 || int(st.Tick-p.Tick) >= s.hist.Len() || i > 0 && int32(p.Tick-past[i-1].Tick) <= 0 {
			return nil, fmt.Errorf("sim: past snapshot of tick %d is not before %d, ascending, within the history", p.Tick, st.Tick)
		}
		if p.RecordSize != s.schema.RecordSize {
			return nil, fmt.Errorf("sim: past snapshot of tick %d has records of %d bytes", p.Tick, p.RecordSize)
		}
		if err := s.scratch.ReadSnapshot(p); err != nil {
			return nil, fmt.Errorf("sim: past snapshot of tick %d: %w", p.Tick, err)
		}
		s.hist.Set(p.Tick, s.scratch.AppendBodies(s.hist.Put(p.Tick)))
		if i == 0 {
			s.histFirst = p.Tick
		}
	}
	s.tick = st.Tick
	s.started = true
	s.writeState(st.Tick)
	return s, nil
}

// Replay runs the step r recorded on a server restored by RestoreServer
// (or on any server at r.Tick-1): it applies r's membership changes, then
// steps with r's inputs and messages, the rejected actions and rewind
// views as recorded (ValidateAction does not run again). Controls of a
// replayed step are not produced.
func (s *Server) Replay(r *StepRecord) error {
	if !s.started {
		return ErrNotStarted
	}
	if r.Tick != s.tick+1 {
		return fmt.Errorf("%w: record %d, server at %d", ErrReplayTick, r.Tick, s.tick)
	}
	for _, c := range r.Changes {
		var err error
		if c.Join {
			_, err = s.Join(c.Player)
		} else {
			_, err = s.Leave(c.Player, c.Reason)
		}
		if err != nil {
			return fmt.Errorf("sim: replaying a change of player %d: %w", c.Player, err)
		}
	}
	s.changes = s.changes[:0]
	if len(r.Inputs) != len(s.players) {
		return ErrReplayPlayers
	}
	for i, in := range r.Inputs {
		if s.players[i].slot != in.Player || len(in.Data) != s.schema.InputSize {
			return ErrReplayPlayers
		}
		if in.Rewound && (!s.hasHistory(in.View.From) || !s.hasHistory(in.View.To)) {
			return fmt.Errorf("%w: view %d..%d at tick %d", ErrReplayHistory, in.View.From, in.View.To, r.Tick)
		}
	}
	s.controls = s.controls[:0]
	s.text = s.text[:0]
	s.fx.events = s.fx.events[:0]
	s.inputs = s.inputs[:0]
	for i, in := range r.Inputs {
		p := s.players[i]
		p.cur = Taken{Data: in.Data, Missing: in.Missing, Age: proto.InputAgeMissing}
		p.rewound, p.used = in.Rewound, in.View
		p.ack = proto.InputAckFrame{Player: p.slot, Age: proto.InputAgeMissing}
		s.inputs = append(s.inputs, PlayerInput{Player: p.slot, Data: in.Data, Missing: in.Missing, Rejected: in.Rejected})
	}
	tick := r.Tick
	s.replay = true
	s.ctx.Tick = tick
	s.ctx.Inputs = s.inputs
	s.ctx.Messages = r.Messages
	s.ctx.Predicted = false
	s.spawn.ids.SetLive(s.snap.IDs)
	s.spawn.ids.Begin(tick)
	s.game.Step(&s.ctx)
	s.ran = r.Messages
	s.ctx.Messages = nil
	s.replay = false
	s.stepChanges = append(s.stepChanges[:0], r.Changes...)
	s.tick = tick
	s.stats.Ticks++
	s.writeState(tick)
	return nil
}

// hasHistory reports whether the lag-compensation history holds tick.
func (s *Server) hasHistory(tick uint32) bool {
	if int32(tick-s.histFirst) < 0 {
		return false
	}
	_, ok := s.hist.Get(tick)
	return ok
}

// Resume anchors the tick schedule of a restored server: the next tick
// is due one period after now.
func (s *Server) Resume(now time.Time) {
	s.clock.Start(now.Add(s.period), s.tick+1)
}

// replayRewind is the rewind of a replayed step: the recorded view, or
// the newest state when the host had none.
func (r *serverRewinder) replayRewind(p *serverPlayer, tick uint32) RewindInfo {
	newest := tick - 1
	if p == nil || !p.rewound {
		return RewindInfo{Unknown: true, Used: View{From: newest, To: newest}}
	}
	return RewindInfo{Requested: p.used, Used: p.used}
}
