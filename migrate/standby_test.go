package migrate

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// arenaHost is a host engine running the demo arena (hitscan rays judged
// with lag compensation, predicted projectiles, NPCs) for four players
// with random inputs, some missing, and the snapshot of every tick.
type arenaHost struct {
	t    *testing.T
	eng  *sim.Server
	rng  *rand.Rand
	now  time.Time
	past map[uint32]*deltacomp.Snapshot
	rec  sim.StepRecord
}

func newArenaHost(t *testing.T, seed uint64) *arenaHost {
	eng, err := sim.NewServer(arena.NewGame(30), sim.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start(t0, 0)
	for p := uint16(1); p <= 4; p++ {
		if _, err := eng.Join(p); err != nil {
			t.Fatal(err)
		}
	}
	return &arenaHost{t: t, eng: eng, rng: rand.New(rand.NewPCG(seed, 15)), now: t0, past: map[uint32]*deltacomp.Snapshot{}}
}

// input is a random arena input of player for tick, as it arrives at
// the host (and, forwarded, at the standby).
func (h *arenaHost) input(player uint16, tick uint32) PendingInput {
	in := arena.Input{MoveX: int8(h.rng.IntN(255) - 127), MoveY: int8(h.rng.IntN(255) - 127), Aim: uint16(h.rng.Uint32())}
	switch h.rng.IntN(6) {
	case 0:
		in.Buttons = arena.FireRay
	case 1:
		in.Buttons = arena.FireProjectile
	}
	return PendingInput{Player: player, Tick: tick, Data: arena.AppendInput(nil, in),
		View: sim.View{From: tick - 4, To: tick - 3, Blend: uint16(h.rng.Uint32())}}
}

func (h *arenaHost) receive(in PendingInput) {
	hd := proto.Header{Tick: in.Tick, InterpFrom: in.View.From, InterpTo: in.View.To, Blend: in.View.Blend}
	f := proto.InputFrame{Player: in.Player, Tick: in.Tick, Count: 1, Size: uint16(len(in.Data)), Data: in.Data}
	if err := h.eng.ReceiveInput(h.now, &hd, &f); err != nil {
		h.t.Fatal(err)
	}
}

// step runs the host's next tick with fresh inputs (one in six missing)
// and records it.
func (h *arenaHost) step() *sim.StepRecord {
	next := h.eng.Tick() + 1
	for p := uint16(1); p <= 4; p++ {
		if h.rng.IntN(6) != 0 {
			h.receive(h.input(p, next))
		}
	}
	h.now = h.eng.Scheduled(next)
	if n := h.eng.Due(h.now); n != 1 {
		h.t.Fatalf("tick %d: %d due", next, n)
	}
	h.eng.Step()
	h.eng.Record(&h.rec)
	h.past[next] = copySnapshot(h.eng.Snapshot())
	return &h.rec
}

func copySnapshot(src *deltacomp.Snapshot) *deltacomp.Snapshot {
	var s deltacomp.Snapshot
	s.CopyFrom(src)
	return &s
}

// load gives sb the host's current state of epoch e with the snapshots
// of the 20 ticks before, as the standby state frame does.
func (h *arenaHost) load(sb *Standby, e Epoch) error {
	g := arena.NewGame(0)
	if err := g.ReadSnapshot(copySnapshot(h.eng.Snapshot())); err != nil {
		h.t.Fatal(err)
	}
	var past []*deltacomp.Snapshot
	for tick := h.eng.Tick() - 20; tick != h.eng.Tick(); tick++ {
		if p := h.past[tick]; p != nil {
			past = append(past, p)
		}
	}
	return sb.Load(e, g, sim.ServerConfig{}, h.eng.State(nil), past...)
}

func world(g sim.Game) []byte { return g.AppendCanonical(nil) }

// TestPromotionContinuesHost: a standby loaded at tick 30 and fed the
// host's step records and its pending inputs for ticks 101–103 is, when
// the host goes at tick 100, at the host's tick with the host's exact
// world; promoted, it steps 101–103 to the same worlds the host would
// have (the pending inputs were not lost), at its own pace from the
// promotion on.
func TestPromotionContinuesHost(t *testing.T) {
	h := newArenaHost(t, 1)
	for h.eng.Tick() < 30 {
		h.step()
	}
	var sb Standby
	if err := h.load(&sb, 1); err != nil {
		t.Fatal(err)
	}
	for h.eng.Tick() < 100 {
		if err := sb.Step(1, h.step()); err != nil {
			t.Fatalf("tick %d: %v", h.eng.Tick(), err)
		}
	}
	// Inputs for the next ticks reach the host; it forwards them.
	for tick := uint32(101); tick <= 103; tick++ {
		for p := uint16(1); p <= 4; p++ {
			in := h.input(p, tick)
			h.receive(in)
			if err := sb.AddInput(1, in); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tick, ok := sb.Ready(); !ok || tick != 100 {
		t.Fatalf("standby ready %v at %d, want tick 100", ok, tick)
	}
	promoted := t0.Add(time.Hour)
	eng, err := sb.Promote(promoted)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(world(eng.World()), world(h.eng.World())) {
		t.Fatal("promoted world differs from the host's at tick 100")
	}
	if _, ok := sb.Ready(); ok {
		t.Fatal("standby still holds an engine after Promote")
	}
	for tick := uint32(101); tick <= 103; tick++ {
		h.now = h.eng.Scheduled(tick)
		h.eng.Due(h.now)
		h.eng.Step()
		now := promoted.Add(time.Duration(tick-100) * eng.Period())
		if n := eng.Due(now); n != 1 {
			t.Fatalf("promoted engine: %d ticks due at tick %d", n, tick)
		}
		eng.Step()
		if eng.Tick() != tick || !slices.Equal(world(eng.World()), world(h.eng.World())) {
			t.Fatalf("tick %d: promoted world differs from what the host would have", tick)
		}
		if st := eng.PlayerStats(1); st.Missing != 0 {
			t.Fatalf("tick %d: promoted engine missed %d of player 1's pending inputs", tick, st.Missing)
		}
	}
}

// TestStandbyEpochsAndGaps: frames of an older epoch are refused and
// counted; a newer epoch drops the old host's standby; a step before any
// state, or one that leaves a gap, leaves the standby not ready until the
// next state.
func TestStandbyEpochsAndGaps(t *testing.T) {
	h := newArenaHost(t, 2)
	var sb Standby
	if err := sb.Step(1, h.step()); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("step before a state: %v", err)
	}
	if _, err := sb.Promote(t0); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("promote before a state: %v", err)
	}
	for range 25 {
		h.step()
	}
	if err := h.load(&sb, 2); err != nil {
		t.Fatal(err)
	}
	if err := sb.Step(1, h.step()); !errors.Is(err, ErrStaleEpoch) || sb.Stats().StaleFrames != 1 {
		t.Fatalf("step of epoch 1 after epoch 2: %v", err)
	}
	if _, ok := sb.Ready(); !ok {
		t.Fatal("a stale frame unloaded the standby")
	}
	h.step() // lost: a gap
	if err := sb.Step(2, h.step()); !errors.Is(err, sim.ErrReplayTick) {
		t.Fatalf("step after a gap: %v", err)
	}
	if _, ok := sb.Ready(); ok || sb.Stats().ReplayErrors != 1 {
		t.Fatal("standby ready after a gap")
	}
	if err := h.load(&sb, 2); err != nil {
		t.Fatal(err)
	}
	if err := sb.Step(2, h.step()); err != nil {
		t.Fatalf("step after a new state: %v", err)
	}
	if err := sb.AddInput(3, h.input(1, h.eng.Tick()+1)); err != nil {
		t.Fatal(err)
	}
	if _, ok := sb.Ready(); ok || sb.Epoch() != 3 {
		t.Fatal("a newer epoch kept the old host's standby")
	}
}

// TestStandbyPendingBounds: pending inputs and messages are bounded
// (the oldest go, counted); those for simulated ticks are not kept; a
// message that ran (even before its postmark) is not run again after
// promotion.
func TestStandbyPendingBounds(t *testing.T) {
	h := newArenaHost(t, 3)
	for range 25 {
		h.step()
	}
	var sb Standby
	if err := h.load(&sb, 1); err != nil {
		t.Fatal(err)
	}
	if err := sb.AddInput(1, h.input(1, h.eng.Tick())); err != nil || len(sb.inputs) != 0 {
		t.Fatalf("input for a simulated tick kept (%v)", err)
	}
	for i := range MaxPendingInputs + 10 {
		sb.AddInput(1, h.input(1, h.eng.Tick()+1+uint32(i%8)))
	}
	for range MaxPendingMessages + 5 {
		sb.AddMessage(1, PendingMessage{Player: 1, Tick: h.eng.Tick() + 100, Data: []byte("x")})
	}
	st := sb.Stats()
	if len(sb.inputs) != MaxPendingInputs || st.PendingInputsDropped != 10 || len(sb.msgs) != MaxPendingMessages || st.PendingMsgsDropped != 5 {
		t.Fatalf("pending %d inputs (%d dropped), %d messages (%d dropped)", len(sb.inputs), st.PendingInputsDropped, len(sb.msgs), st.PendingMsgsDropped)
	}
	// A step that ran one of them (postmarked beyond the buffer, run
	// early) takes it off the list.
	rec := h.step()
	rec.Messages = append(rec.Messages, sim.Message{Player: 1, Tick: h.eng.Tick() + 99, Data: []byte("x")})
	if err := sb.Step(1, rec); err != nil {
		t.Fatal(err)
	}
	if len(sb.msgs) != MaxPendingMessages-1 {
		t.Fatalf("%d pending messages after one ran, want %d", len(sb.msgs), MaxPendingMessages-1)
	}
}
