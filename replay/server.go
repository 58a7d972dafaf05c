package replay

import (
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/sim"
)

// ServerRecorder records a state-sync server's game (a sim.Server, as
// game.Host runs it): after every step, what the step consumed
// (sim.StepRecord: joins and leaves, every player's input as the step
// took it, the messages that ran, the views lag compensation rewound
// to) and the checksum when one was due; every Config.KeyEvery ticks
// the full state. That is everything a re-run needs to step the same
// world (sim.Server.Replay), and nothing that depends on arrival times.
// Call its methods from the goroutine that steps the engine.
type ServerRecorder struct {
	w    *Writer
	rate int
	step sim.StepRecord
	// past holds copies of the last snapshots, by tick modulo its
	// length: a full state that starts a file carries those lag
	// compensation may rewind to.
	past    []deltacomp.Snapshot
	order   []*deltacomp.Snapshot
	players []uint16
	key     uint32
	hasKey  bool
}

// NewServerRecorder starts recording eng's game gameID on w: the header
// and the state eng holds now (a new game's first, tick 0).
func NewServerRecorder(w *Writer, gameID uint64, eng *sim.Server) (*ServerRecorder, error) {
	cfg := eng.Config()
	period := eng.Period()
	schema := eng.World().Schema()
	history := int(cfg.History / period)
	h := Header{Role: RoleServer, GameID: gameID, TickRate: int(time.Second / period), Schema: schema,
		SpawnsPerTick: cfg.SpawnsPerTick, HistoryTicks: history}
	if err := w.begin(&h); err != nil {
		return nil, err
	}
	// Views older than MaxRewind are clamped to it; a few ticks more
	// for the blend and the input's own tick, as a warm standby keeps.
	past := min(int(cfg.MaxRewind/period)+4, history)
	s := &ServerRecorder{w: w, rate: h.TickRate, past: make([]deltacomp.Snapshot, past)}
	s.keep(eng)
	s.writeState(eng, false)
	w.tickDone(eng.Tick(), s.rate)
	return s, nil
}

// Stepped records the step eng just ran: call it after every Step,
// before anything else changes the engine (game.Config.Stepped's
// place).
func (s *ServerRecorder) Stepped(eng *sim.Server) {
	w := s.w
	tick := eng.Tick()
	eng.Record(&s.step)
	at := w.open(RecordStep, tick)
	var ok bool
	if w.buf, ok = appendStep(w.buf, &s.step); ok {
		w.end(at)
	} else {
		// More than a step record holds: the file has a gap here, and
		// a full state after it.
		w.buf = w.buf[:at]
		w.lost++
	}
	if sum, ok := eng.Checksum(); ok {
		at := w.open(RecordChecksum, tick)
		w.buf = le.AppendUint64(w.buf, sum.Sum)
		w.end(at)
	}
	s.keep(eng)
	if due, selfContained := w.keyDue(tick, s.key, s.hasKey); due {
		s.writeState(eng, selfContained)
	}
	w.tickDone(tick, s.rate)
}

// keep copies eng's snapshot into the past, in the ticks before a full
// state is due: the only ones a full state may start a segment at. (A
// full state after a gap carries what the past holds then.)
func (s *ServerRecorder) keep(eng *sim.Server) {
	snap := eng.Snapshot()
	if len(s.past) == 0 || s.hasKey && int64(s.key)+int64(s.w.cfg.KeyEvery)-int64(snap.Tick) > int64(len(s.past)) {
		return
	}
	s.past[int(snap.Tick%uint32(len(s.past)))].CopyFrom(snap)
}

// writeState records eng's full state, with the past if withPast.
func (s *ServerRecorder) writeState(eng *sim.Server, withPast bool) {
	st := eng.State(s.players[:0])
	s.players = st.Players
	snap := eng.Snapshot()
	s.order = append(s.order[:0], snap)
	if withPast {
		n := uint32(len(s.past))
		for d := n - 1; d >= 1; d-- {
			if p := &s.past[(st.Tick-d)%n]; p.Tick == st.Tick-d && p.RecordSize != 0 {
				s.order = append(s.order, p)
			}
		}
	}
	at := s.w.open(RecordState, st.Tick)
	s.w.buf = appendServerState(s.w.buf, &st, s.order)
	s.w.end(at)
	clear(s.order)
	s.key, s.hasKey = st.Tick, true
}

// Close ends the recording and closes its Writer.
func (s *ServerRecorder) Close() error { return s.w.Close() }
