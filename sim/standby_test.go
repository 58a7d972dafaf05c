package sim

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// standbyHost drives a host engine with random inputs (some missing,
// some rejected, fire and disarm actions), postmarked messages, a join
// and a leave, and rewinds for player 1 every step.
type standbyHost struct {
	t   *testing.T
	s   *Server
	tg  *tgTest
	rng *rand.Rand
	now time.Time
	// past keeps a copy of every tick's snapshot (what a host's delta
	// ring holds)
	past map[uint32]*deltacomp.Snapshot
}

func newStandbyHost(t *testing.T, seed uint64) *standbyHost {
	tg := &tgTest{record: true, rewindFor: 1}
	g := newTestGame(tg)
	g.strict = true // the host rejects actOdd; a replica's world would not
	s, err := NewServer(g, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(t0, 0)
	mustJoin(t, s, 1, 2, 3)
	return &standbyHost{t: t, s: s, tg: tg, rng: rand.New(rand.NewPCG(seed, 15)), now: t0, past: map[uint32]*deltacomp.Snapshot{}}
}

// step runs the host's next tick, with the membership change due then.
func (h *standbyHost) step() {
	s, next := h.s, h.s.Tick()+1
	switch next {
	case 30:
		mustJoin(h.t, s, 4)
	case 55:
		if _, err := s.Leave(2, "gone"); err != nil {
			h.t.Fatal(err)
		}
	}
	for _, p := range s.Players(nil) {
		if h.rng.IntN(5) == 0 {
			continue // missing
		}
		var act, count byte
		switch h.rng.IntN(8) {
		case 0:
			act, count = actFire, byte(1+h.rng.IntN(3))
		case 1:
			act = actDisarm
		case 2:
			act = actBad
		case 3:
			act = actOdd
		}
		data := tgInputBytes(int8(h.rng.IntN(7)-3), int8(h.rng.IntN(7)-3), act, count)
		v := View{From: next - 3, To: next - 2, Blend: uint16(h.rng.IntN(65536))}
		input(h.t, s, h.now, p, next, data, v)
		if h.rng.IntN(6) == 0 {
			m := proto.MessageFrame{Channel: uint8(h.rng.IntN(3)), Postmarked: true, Tick: next, Data: []byte{byte(p), byte(next)}}
			if err := s.ReceiveMessage(h.now, p, &m); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	h.now = s.Scheduled(next)
	if n := s.Due(h.now); n != 1 {
		h.t.Fatalf("tick %d: %d due", next, n)
	}
	s.Step()
	h.past[s.Tick()] = copySnapshot(s.Snapshot())
}

func copySnapshot(src *deltacomp.Snapshot) *deltacomp.Snapshot {
	var s deltacomp.Snapshot
	s.CopyFrom(src)
	return &s
}

// standbyOf restores a standby engine from the host's current state and
// its snapshots of the last pastTicks ticks, as a warm standby does from
// the host's standby state frame.
func (h *standbyHost) standbyOf(tg *tgTest, pastTicks uint32) *Server {
	t := h.t
	t.Helper()
	g := newTestGame(tg)
	if err := g.ReadSnapshot(copySnapshot(h.s.Snapshot())); err != nil {
		t.Fatal(err)
	}
	var past []*deltacomp.Snapshot
	for tick := h.s.Tick() - min(pastTicks, h.s.Tick()); tick < h.s.Tick(); tick++ {
		if p := h.past[tick]; p != nil {
			past = append(past, p)
		}
	}
	sb, err := RestoreServer(g, ServerConfig{}, h.s.State(nil), past...)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestReplayMatchesHost: a standby restored from the host's state at
// tick 20 (and its snapshots of the 20 ticks before, for lag
// compensation) and fed the host's step records ends every tick with the
// host's world, revision, players, what the game saw (inputs as taken,
// rejected actions, messages) and the same rewind, across a join, a
// leave, spawns, rejections and missing inputs; after Resume it ticks on
// by itself.
func TestReplayMatchesHost(t *testing.T) {
	h := newStandbyHost(t, 1)
	for h.s.Tick() < 20 {
		h.step()
	}
	stg := &tgTest{record: true, rewindFor: 1}
	sb := h.standbyOf(stg, 20)
	if !slices.Equal(canonical(sb.World()), canonical(h.s.World())) {
		t.Fatal("restored world differs")
	}
	var rec StepRecord
	rejected, most, msgs := 0, 0, 0
	for h.s.Tick() < 90 {
		h.step()
		h.s.Record(&rec)
		if err := sb.Replay(&rec); err != nil {
			t.Fatalf("tick %d: %v", rec.Tick, err)
		}
		tick := h.s.Tick()
		if sb.Tick() != tick || sb.Revision() != h.s.Revision() || !slices.Equal(sb.Players(nil), h.s.Players(nil)) {
			t.Fatalf("tick %d: standby at tick %d rev %d players %v, host rev %d players %v",
				tick, sb.Tick(), sb.Revision(), sb.Players(nil), h.s.Revision(), h.s.Players(nil))
		}
		if !slices.Equal(canonical(sb.World()), canonical(h.s.World())) {
			t.Fatalf("tick %d: worlds differ", tick)
		}
		if got, want := stg.steps[len(stg.steps)-1], h.tg.steps[len(h.tg.steps)-1]; !reflect.DeepEqual(got, want) {
			t.Fatalf("tick %d: standby step saw %+v, host %+v", tick, got, want)
		}
		if stg.rewind.Used != h.tg.rewind.Used || !slices.Equal(stg.rewound, h.tg.rewound) {
			t.Fatalf("tick %d: rewind %+v, host %+v", tick, stg.rewind, h.tg.rewind)
		}
		most = max(most, len(h.s.Snapshot().IDs)-len(h.s.Players(nil)))
		msgs += len(rec.Messages)
		for _, in := range rec.Inputs {
			if in.Rejected {
				rejected++
			}
		}
	}
	if rejected == 0 || most == 0 || msgs == 0 {
		t.Fatalf("the run did not exercise rejections (%d), spawns (at most %d bullets) or messages (%d)", rejected, most, msgs)
	}
	if st, hst := sb.State(nil), h.s.State(nil); !reflect.DeepEqual(st, hst) {
		t.Fatalf("state %+v, host %+v", st, hst)
	}
	// Promoted: it runs its own clock from here.
	now := t0.Add(time.Hour)
	sb.Resume(now)
	if n := sb.Due(now.Add(sb.Period())); n != 1 {
		t.Fatalf("%d ticks due one period after Resume, want 1", n)
	}
	sb.Step()
	if sb.Tick() != 91 {
		t.Fatalf("promoted standby at tick %d, want 91", sb.Tick())
	}
}

// TestReplayRefusesMismatch: a record for another tick or other players
// is an error and leaves the standby where it was.
func TestReplayRefusesMismatch(t *testing.T) {
	h := newStandbyHost(t, 2)
	h.step()
	sb := h.standbyOf(&tgTest{}, 0)
	before := canonical(sb.World())
	var rec StepRecord
	h.step()
	h.step()
	h.s.Record(&rec)
	if err := sb.Replay(&rec); !errors.Is(err, ErrReplayTick) {
		t.Fatalf("record two ticks ahead: %v", err)
	}
	rec.Tick = sb.Tick() + 1
	rec.Inputs = rec.Inputs[:1]
	if err := sb.Replay(&rec); !errors.Is(err, ErrReplayPlayers) {
		t.Fatalf("record with one player of three: %v", err)
	}
	if !slices.Equal(canonical(sb.World()), before) || sb.Tick() != 1 {
		t.Fatal("a refused record changed the standby")
	}
	if _, err := RestoreServer(newTestGame(nil), ServerConfig{}, ServerState{Players: []uint16{2, 1}}); err == nil {
		t.Fatal("restored players out of order")
	}
	if _, err := RestoreServer(newTestGame(nil), ServerConfig{}, ServerState{Tick: 2}, h.past[3]); err == nil {
		t.Fatal("restored with a past snapshot after the state")
	}
}

// TestReplayNeedsHistory: a standby restored without the host's past
// snapshots refuses a record that rewinds before its state instead of
// diverging from the host.
func TestReplayNeedsHistory(t *testing.T) {
	h := newStandbyHost(t, 4)
	for h.s.Tick() < 10 {
		h.step()
	}
	sb := h.standbyOf(&tgTest{rewindFor: 1}, 0)
	var rec StepRecord
	for {
		h.step()
		h.s.Record(&rec)
		if rec.Inputs[0].Rewound && rec.Inputs[0].View.From < 10 {
			break
		}
		if err := sb.Replay(&rec); err != nil {
			t.Fatalf("tick %d: %v", rec.Tick, err)
		}
	}
	if err := sb.Replay(&rec); !errors.Is(err, ErrReplayHistory) {
		t.Fatalf("rewind to tick %d before the restored state: %v", rec.Inputs[0].View.From, err)
	}
}

// TestRecordAllocs: recording a step into a record that has grown does
// not allocate.
func TestRecordAllocs(t *testing.T) {
	h := newStandbyHost(t, 3)
	h.tg.record = false
	var rec StepRecord
	h.step()
	h.s.Record(&rec)
	if n := testing.AllocsPerRun(100, func() { h.s.Record(&rec) }); n != 0 {
		t.Fatalf("Record: %v allocs", n)
	}
}
