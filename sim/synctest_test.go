package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// foldGame is a one-entity game for the sync test's tests: Step folds
// every input into an accumulator, and optionally a value from leak (the
// non-determinism under test: map order, the wall clock) or ids from
// Tick.Spawn. Its whole state is networked.
type foldGame struct {
	acc   uint64
	steps uint32
	// leak, when set, is folded into acc every step (shared by clones).
	leak func(t *Tick) uint64
	// spawnServer: every step spawns a server id (Tick.Spawn(0)) and
	// folds it in; spawnFailed counts refusals.
	spawnServer bool
	spawnFailed uint32
	// lossyCopy: CopyFrom forgets acc (a rollback bug).
	lossyCopy bool
	// effect, when set, is the data of an effect every step emits
	// (shared by clones).
	effect func(t *Tick) int32
}

const foldRecordSize = 16

func (g *foldGame) Schema() Schema {
	return Schema{InputSize: 3, ActionBytes: 1, RecordSize: foldRecordSize}
}

func (g *foldGame) Clone() Game { c := *g; return &c }

func (g *foldGame) CopyFrom(src Game) {
	s := src.(*foldGame)
	acc := g.acc
	*g = *s
	if g.lossyCopy {
		g.acc = acc
	}
}

func (g *foldGame) fold(v uint64) { g.acc = (g.acc ^ v) * fnvPrime }

func (g *foldGame) Step(t *Tick) {
	g.steps++
	for _, in := range t.Inputs {
		g.fold(uint64(in.Player))
		for _, b := range in.Data {
			g.fold(uint64(b))
		}
		if in.Missing {
			g.fold(0x4d)
		}
		if in.Rejected {
			g.fold(0x52)
		}
	}
	if g.leak != nil {
		g.fold(g.leak(t))
	}
	if g.effect != nil {
		t.Emit(7, 0, 0, [4]int32{int32(g.steps), g.effect(t)})
	}
	if g.spawnServer {
		if id, ok := t.Spawn(0); ok {
			g.fold(uint64(id))
		} else {
			g.spawnFailed++
		}
	}
}

func (g *foldGame) ValidateAction(player uint16, tick uint32, action []byte) error {
	if action[0]&0x80 != 0 {
		return errBadAction
	}
	return nil
}

func (g *foldGame) OnPlayerJoin(t *Tick, player uint16) error {
	g.fold(uint64(player) << 32)
	return nil
}

func (g *foldGame) OnPlayerLeave(t *Tick, player uint16, reason string) {}

func (g *foldGame) record(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, g.acc)
	b = binary.LittleEndian.AppendUint32(b, g.steps)
	return binary.LittleEndian.AppendUint32(b, g.spawnFailed)
}

func (g *foldGame) WriteSnapshot(s *deltacomp.Snapshot) {
	var r [foldRecordSize]byte
	s.Append(proto.MakeNetworkID(0, 1), g.record(r[:0]))
}

func (g *foldGame) ReadSnapshot(s *deltacomp.Snapshot) error {
	if s.Len() != 1 || s.RecordSize != foldRecordSize {
		return errBadRecord
	}
	r := s.Record(0)
	g.acc = binary.LittleEndian.Uint64(r)
	g.steps = binary.LittleEndian.Uint32(r[8:])
	g.spawnFailed = binary.LittleEndian.Uint32(r[12:])
	return nil
}

func (g *foldGame) AppendCanonical(b []byte) []byte { return g.record(b) }

func (g *foldGame) AppendBodies(dst []Body) []Body {
	return append(dst, Body{ID: proto.MakeNetworkID(0, 1), Shape: ShapeSphere, Size: Vec3{X: 1}})
}

// mapOrder folds the order in which Go visits the keys of a small map,
// sixteen times over: each visit starts at a random key, so two calls
// agree with probability 8^-16.
func mapOrder() uint64 {
	m := map[int]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8}
	var h uint64
	for range 16 {
		for k := range m {
			h = h*31 + uint64(k)
		}
	}
	return h
}

// wantResimulated is Report.Resimulated for a passing run.
func wantResimulated(ticks, k int) int {
	n := 0
	for t := 1; t <= ticks; t++ {
		n += min(t, k)
	}
	return n
}

func TestSyncTestDeterministicGamePasses(t *testing.T) {
	g := newTestGame(nil)
	before := new(Checksummer).WorldSum(g)
	cfg := SyncTestConfig{Ticks: 200, Rollback: 8, Players: []uint16{3, 1, 2}}
	r, err := SyncTest(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ticks != 200 || r.Rollbacks != 200 || r.Resimulated != wantResimulated(200, 8) {
		t.Fatalf("report %+v, want 200 ticks and rollbacks, %d re-simulated", r, wantResimulated(200, 8))
	}
	// The default inputs exercise missing inputs and rejected actions
	// (testGame rejects actBad, one random action byte in two).
	if r.Missing == 0 || r.Rejected == 0 {
		t.Fatalf("report %+v: want missing inputs and rejected actions from the default inputs", r)
	}
	if len(g.ents) != 0 || new(Checksummer).WorldSum(g) != before {
		t.Fatal("SyncTest modified the initial world")
	}
	// The final world does not depend on how far it rolled back.
	cfg.Rollback = 1
	r1, err := SyncTest(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Checksum != r.Checksum || r1.Missing != r.Missing || r1.Rejected != r.Rejected {
		t.Fatalf("rollback 1: %+v, rollback 8: %+v", r1, r)
	}
	if r1.Resimulated != 200 {
		t.Fatalf("rollback 1 re-simulated %d ticks, want 200", r1.Resimulated)
	}
	// The same as the authoritative server stepping those inputs.
	if sum := serverSum(t, 200, cfg.Players); sum != r.Checksum {
		t.Fatalf("server world %#x, sync test world %#x", sum, r.Checksum)
	}
}

// serverSum runs a Server for ticks with SyncTest's default inputs
// (delivered on time, none for the missing ones) and returns its world's
// WorldSum.
func serverSum(t *testing.T, ticks int, players []uint16) uint64 {
	t.Helper()
	st, err := newSyncTest(newTestGame(nil), SyncTestConfig{Players: players})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(newTestGame(nil), ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, 0)
	srv.Start(start, 0)
	for _, p := range players {
		if _, err := srv.Join(p); err != nil {
			t.Fatal(err)
		}
	}
	for tick := uint32(1); tick <= uint32(ticks); tick++ {
		for _, p := range players {
			in := st.defaultInput(tick, p)
			if in == nil {
				continue
			}
			f := &proto.InputFrame{Player: p, Tick: tick, Count: 1, Size: uint16(len(in)), Data: in}
			if err := srv.ReceiveInput(start, nil, f); err != nil {
				t.Fatal(err)
			}
		}
		srv.Step()
	}
	return new(Checksummer).WorldSum(srv.World())
}

func TestSyncTestCatchesMapOrder(t *testing.T) {
	g := &foldGame{leak: func(*Tick) uint64 { return mapOrder() }}
	r, err := SyncTest(g, SyncTestConfig{Ticks: 100})
	var d *DesyncError
	if !errors.As(err, &d) {
		t.Fatalf("err %v, want a *DesyncError", err)
	}
	if d.Tick < 1 || d.Tick > 100 || d.Restored || d.Want == d.Got {
		t.Fatalf("desync %+v", d)
	}
	if !strings.Contains(d.Error(), fmt.Sprintf("desync at tick %d", d.Tick)) {
		t.Fatalf("error %q does not name tick %d", d.Error(), d.Tick)
	}
	if r.Rollbacks != d.Rollback || r.Ticks != d.Rollback {
		t.Fatalf("report %+v after desync %+v", r, d)
	}
}

func TestSyncTestCatchesWallClock(t *testing.T) {
	g := &foldGame{leak: func(*Tick) uint64 { return uint64(time.Now().UnixNano()) }}
	_, err := SyncTest(g, SyncTestConfig{Ticks: 100, Players: []uint16{1, 2}})
	var d *DesyncError
	if !errors.As(err, &d) {
		t.Fatalf("err %v, want a *DesyncError", err)
	}
	if d.Tick < 1 || d.Tick > 100 || d.Restored {
		t.Fatalf("desync %+v", d)
	}
}

func TestSyncTestNamesFirstDivergentTick(t *testing.T) {
	for _, k := range []int{1, 8, MaxRollback} {
		g := &foldGame{leak: func(t *Tick) uint64 {
			if t.Tick < 50 {
				return 0
			}
			return mapOrder()
		}}
		_, err := SyncTest(g, SyncTestConfig{Ticks: 120, Rollback: k})
		var d *DesyncError
		if !errors.As(err, &d) {
			t.Fatalf("rollback %d: err %v, want a *DesyncError", k, err)
		}
		if d.Tick != 50 || d.Rollback != 50 || d.From != uint32(max(0, 50-k)) || d.Restored {
			t.Fatalf("rollback %d: desync %+v, want tick 50 in rollback 50", k, d)
		}
		if !strings.Contains(err.Error(), "tick 50") {
			t.Fatalf("error %q does not name tick 50", err)
		}
	}
}

// TestSyncTestCatchesEffects: a step whose state is deterministic but
// whose effects are not (a client would cancel and replay them).
func TestSyncTestCatchesEffects(t *testing.T) {
	g := &foldGame{effect: func(t *Tick) int32 {
		if t.Tick < 30 {
			return 1
		}
		return int32(mapOrder())
	}}
	_, err := SyncTest(g, SyncTestConfig{Ticks: 60})
	var d *DesyncError
	if !errors.As(err, &d) {
		t.Fatalf("err %v, want a *DesyncError", err)
	}
	if d.Tick != 30 || d.Rollback != 30 || !d.Effects || d.Restored || !strings.Contains(err.Error(), "tick 30") {
		t.Fatalf("desync %+v (%v), want the effects of tick 30", d, err)
	}
	// Deterministic effects pass, and are counted.
	g.effect = func(t *Tick) int32 { return int32(t.Tick) }
	r, err := SyncTest(g, SyncTestConfig{Ticks: 60})
	if err != nil || r.Effects != 60 {
		t.Fatalf("report %+v, err %v: want 60 effects", r, err)
	}
}

func TestSyncTestCatchesLossyCopyFrom(t *testing.T) {
	_, err := SyncTest(&foldGame{lossyCopy: true}, SyncTestConfig{Ticks: 50})
	var d *DesyncError
	if !errors.As(err, &d) {
		t.Fatalf("err %v, want a *DesyncError", err)
	}
	// The first rollback restores tick 0 into the world at tick 1,
	// keeping tick 1's accumulator.
	if !d.Restored || d.Tick != 0 || d.Rollback != 1 || !strings.Contains(err.Error(), "CopyFrom") {
		t.Fatalf("desync %+v (%v), want the restore of tick 0 in rollback 1", d, err)
	}
}

// TestSyncTestServerSpawns: the spawn allocator's server counter is part
// of the saved state, so server spawns re-simulate to the same ids; with
// Predicted they are refused, like on a client.
func TestSyncTestServerSpawns(t *testing.T) {
	if _, err := SyncTest(&foldGame{spawnServer: true}, SyncTestConfig{Ticks: 60}); err != nil {
		t.Fatal(err)
	}
	g := &foldGame{spawnServer: true}
	st, err := newSyncTest(g, SyncTestConfig{Ticks: 60, Predicted: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.run(); err != nil {
		t.Fatal(err)
	}
	if f := st.world.(*foldGame).spawnFailed; f != 60 {
		t.Fatalf("predicted: %d server spawns refused, want 60", f)
	}
}

// TestSyncTestInputs: what Step receives, on first simulations and
// re-simulations alike: missing inputs repeat the held bytes with the
// action zeroed, rejected actions are zeroed, and inputs are sorted.
func TestSyncTestInputs(t *testing.T) {
	h := &tgTest{record: true}
	inputs := map[uint32][]byte{
		1: tgInputBytes(1, 2, 0, 0),
		2: tgInputBytes(3, 4, actBad, 1),    // rejected
		3: nil,                              // missing: 3, 4 held, no action
		4: nil,                              // still 3, 4
		5: tgInputBytes(5, 6, actFire, 2),   // fires
		6: tgInputBytes(7, 8, actDisarm, 0), // accepted
	}
	cfg := SyncTestConfig{Ticks: 6, Rollback: 3, Players: []uint16{2, 1},
		Inputs: func(tick uint32, player uint16) []byte {
			if player == 2 {
				return tgInputBytes(-1, 0, 0, 0)
			}
			return inputs[tick]
		}}
	r, err := SyncTest(newTestGame(h), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Missing != 2 || r.Rejected != 1 {
		t.Fatalf("report %+v, want 2 missing, 1 rejected", r)
	}
	want := map[uint32]tgInput{
		1: {player: 1, data: tgInputBytes(1, 2, 0, 0)},
		2: {player: 1, data: tgInputBytes(3, 4, 0, 0), rejected: true},
		3: {player: 1, data: tgInputBytes(3, 4, 0, 0), missing: true},
		4: {player: 1, data: tgInputBytes(3, 4, 0, 0), missing: true},
		5: {player: 1, data: tgInputBytes(5, 6, actFire, 2)},
		6: {player: 1, data: tgInputBytes(7, 8, actDisarm, 0)},
	}
	runs := map[uint32]int{}
	for _, st := range h.steps {
		runs[st.tick]++
		if len(st.inputs) != 2 || st.inputs[0].player != 1 || st.inputs[1].player != 2 {
			t.Fatalf("tick %d: inputs %+v, want players 1, 2", st.tick, st.inputs)
		}
		got, w := st.inputs[0], want[st.tick]
		if !bytes.Equal(got.data, w.data) || got.missing != w.missing || got.rejected != w.rejected {
			t.Fatalf("tick %d: player 1 got %+v, want %+v", st.tick, got, w)
		}
		if st.msgs != nil {
			t.Fatalf("tick %d: messages %v", st.tick, st.msgs)
		}
	}
	// Tick u runs once, then in the rollbacks of frames u..u+2 (K = 3)
	// up to the last frame.
	for u := uint32(1); u <= 6; u++ {
		if w := 1 + min(3, 6-int(u)+1); runs[u] != w {
			t.Fatalf("tick %d ran %d times, want %d", u, runs[u], w)
		}
	}
	if len(h.steps) != r.Ticks+r.Resimulated {
		t.Fatalf("%d steps, want %d", len(h.steps), r.Ticks+r.Resimulated)
	}
}

func TestSyncTestRewind(t *testing.T) {
	h := &tgTest{rewindFor: 1}
	if _, err := SyncTest(newTestGame(h), SyncTestConfig{Ticks: 20, Players: []uint16{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if h.rewindAt != 20 || !h.rewind.Unknown || h.rewind.Used != (View{From: 19, To: 19}) {
		t.Fatalf("last rewind at tick %d: %+v", h.rewindAt, h.rewind)
	}
	if len(h.rewound) < 2 || h.rewound[0].ID != tgPlayerID(1) {
		t.Fatalf("rewound bodies %+v, want the players", h.rewound)
	}
}

func TestSyncTestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg          SyncTestConfig
		field, words string
	}{
		{SyncTestConfig{Ticks: -1}, "Ticks", "-1 is negative"},
		{SyncTestConfig{Rollback: -2}, "Rollback", "-2 is out of range 1..64"},
		{SyncTestConfig{Rollback: MaxRollback + 1}, "Rollback", "65 is out of range"},
		{SyncTestConfig{Players: []uint16{1, 0}}, "Players", "slot 0 is not a player slot"},
		{SyncTestConfig{Players: []uint16{proto.MaxSpawner + 1}}, "Players", "is not a player slot"},
		{SyncTestConfig{Players: []uint16{4, 2, 4}}, "Players", "slot 4 is listed twice"},
	} {
		_, err := SyncTest(&foldGame{}, c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasSuffix(ce.Field, c.field) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%+v: err %v, want %s: %s", c.cfg, err, c.field, c.words)
		}
	}
	if big := math.MaxInt; big > math.MaxInt32 {
		_, err := SyncTest(&foldGame{}, SyncTestConfig{Ticks: big})
		if !strings.Contains(fmt.Sprint(err), "Ticks: 9223372036854775807 is above 2147483647") {
			t.Errorf("Ticks %d: err %v", big, err)
		}
	}
	if _, err := SyncTest(nil, SyncTestConfig{}); err == nil {
		t.Error("nil game accepted")
	}
	_, err := SyncTest(&foldGame{}, SyncTestConfig{Inputs: func(uint32, uint16) []byte { return []byte{1} }})
	if err == nil || !strings.Contains(err.Error(), "returned 1 bytes for player 1 at tick 1") {
		t.Errorf("short input: err %v", err)
	}
}

// TestSyncTestAllocations: nothing allocates per frame once set up.
func TestSyncTestAllocations(t *testing.T) {
	run := func(ticks int) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := SyncTest(&foldGame{spawnServer: true}, SyncTestConfig{Ticks: ticks, Players: []uint16{1, 2, 3}}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if short, long := run(50), run(250); long != short {
		t.Fatalf("%v allocations for 50 ticks, %v for 250: frames allocate", short, long)
	}
}

// A game author runs SyncTest in a unit test of the game: a world that
// re-simulates identically passes; one whose Step reads map iteration
// order from tick 50 on is caught at tick 50.
func ExampleSyncTest() {
	report, err := SyncTest(newTestGame(nil), SyncTestConfig{Ticks: 300, Rollback: 8, Players: []uint16{1, 2}})
	fmt.Println(report.Rollbacks, report.Resimulated, err)

	bad := &foldGame{leak: func(t *Tick) uint64 {
		if t.Tick < 50 {
			return 0
		}
		return mapOrder()
	}}
	_, err = SyncTest(bad, SyncTestConfig{})
	var d *DesyncError
	if errors.As(err, &d) {
		fmt.Println("first divergent tick:", d.Tick)
	}
	// Output:
	// 300 2372 <nil>
	// first divergent tick: 50
}

// zeroCheckGame is lsGame that checks, in every step, that a missing
// command's input is all zeros (what sim.Lockstep gives a CommitGame).
type zeroCheckGame struct {
	lsGame
	t       *testing.T
	missing *int
}

func (g *zeroCheckGame) Clone() CommitGame {
	return &zeroCheckGame{lsGame: *g.lsGame.Clone().(*lsGame), t: g.t, missing: g.missing}
}
func (g *zeroCheckGame) CopyFrom(src CommitGame) { g.lsGame.CopyFrom(&src.(*zeroCheckGame).lsGame) }
func (g *zeroCheckGame) Step(t *Tick) {
	for _, in := range t.Inputs {
		if in.Missing {
			*g.missing++
			if !allZero(in.Data) {
				g.t.Errorf("tick %d: player %d's missing command is %x", t.Tick, in.Player, in.Data)
			}
		}
	}
	g.lsGame.Step(t)
}

// TestSyncTestCommitGame: a CommitGame runs the sync test as
// sim.Lockstep steps it (missing commands are zeros), its rollbacks
// through its own Clone and CopyFrom; a World of neither kind is
// refused.
func TestSyncTestCommitGame(t *testing.T) {
	missing := 0
	r, err := SyncTest(&zeroCheckGame{t: t, missing: &missing}, SyncTestConfig{Ticks: 100, Players: []uint16{1, 2},
		Inputs: func(tick uint32, player uint16) []byte {
			if tick%3 == 0 {
				return nil
			}
			return []byte{byte(tick), byte(player)}
		}})
	if err != nil || r.Rollbacks != 100 || r.Missing != 66 || missing == 0 {
		t.Fatalf("%+v, %v (missing inputs seen %d)", r, err, missing)
	}
	if _, err := SyncTest(struct{ World }{&lsGame{}}, SyncTestConfig{}); !errors.Is(err, errGameKind) {
		t.Fatalf("a World of neither kind: %v", err)
	}
}
