package replay

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// arenaGames is the arena for a re-run.
var arenaGames = Games{State: func() sim.Game { return arena.NewGame(0) }}

// serverRig drives a state-sync server engine on a fake clock, with a
// recorder on it: players join, press random inputs (firing, so that
// lag compensation rewinds), and one leaves.
type serverRig struct {
	t       testing.TB
	eng     *sim.Server
	rec     *ServerRecorder
	now     time.Time
	rng     *rand.Rand
	inputs  []byte
	players []uint16
}

func newServerRig(t testing.TB, path string, cfg Config, npcs int, players ...uint16) *serverRig {
	t.Helper()
	eng, err := sim.NewServer(arena.NewGame(npcs), sim.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &serverRig{t: t, eng: eng, now: time.Unix(1e9, 0), rng: rand.New(rand.NewPCG(1, 2))}
	eng.Start(r.now, 0)
	w, err := Create(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.rec, err = NewServerRecorder(w, 7, eng); err != nil {
		t.Fatal(err)
	}
	for _, p := range players {
		if _, err := eng.Join(p); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// tick delivers every player's input for the next tick (most of them:
// one in 20 goes missing) and steps once.
func (r *serverRig) tick() {
	next := r.eng.Tick() + 1
	r.players = r.eng.Players(r.players[:0])
	for _, p := range r.players {
		if r.rng.IntN(20) == 0 {
			continue
		}
		in := arena.Input{MoveX: int8(r.rng.IntN(255) - 127), MoveY: int8(r.rng.IntN(255) - 127), Aim: uint16(r.rng.Uint32())}
		if r.rng.IntN(10) == 0 {
			in.Buttons = []uint8{arena.FireRay, arena.FireProjectile}[r.rng.IntN(2)]
		}
		r.inputs = arena.AppendInput(r.inputs[:0], in)
		f := proto.InputFrame{Player: p, Tick: next, Count: 1, Size: uint16(len(r.inputs)), Data: r.inputs}
		h := proto.Header{Tick: next, InterpFrom: next - 3, InterpTo: next - 2}
		if err := r.eng.ReceiveInput(r.now, &h, &f); err != nil {
			r.t.Fatal(err)
		}
	}
	r.now = r.now.Add(r.eng.Period())
	for n := r.eng.Due(r.now); n > 0; n-- {
		r.eng.Step()
		r.rec.Stepped(r.eng)
	}
}

func (r *serverRig) close() {
	if err := r.rec.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// TestServerRecordingReruns: a state-sync server's recording (joins, a
// leave, missing inputs, shots rewound) re-runs to every checksum and
// full state it holds, across a segment boundary; a recorded input
// changed makes the re-run name the first checksum after it.
func TestServerRecordingReruns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.replay")
	r := newServerRig(t, path, Config{Game: "arena", KeyEvery: 120}, 40, 1, 2, 3)
	for i := range 700 {
		if i == 300 {
			r.eng.Leave(2, "bored")
		}
		if i == 400 {
			r.eng.Join(9)
		}
		r.tick()
	}
	r.close()
	rec, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Err != nil {
		t.Fatal(rec.Err)
	}
	rep, err := Check(rec, arenaGames)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if rep.Mismatch != nil || rep.First != 0 || rep.Last != 700 || rep.Steps != 700 || rep.Checksums != 11 || rep.States != 5 {
		t.Fatalf("re-run %+v", rep)
	}

	// Change player 3's input of tick 250: the checksum of tick 300 is
	// the first that no longer matches.
	for i := range rec.Records {
		x := &rec.Records[i]
		if x.Type == RecordStep && x.Tick == 250 {
			var s sim.StepRecord
			if err := ParseStep(x.Body, x.Tick, arena.InputSize, &s); err != nil {
				t.Fatal(err)
			}
			s.Inputs[2].Data[0] ^= 0x40
			s.Inputs[2].Missing = false
			x.Body, _ = appendStep(nil, &s)
		}
	}
	rep, err = Check(rec, arenaGames)
	if err != nil {
		t.Fatal(err)
	}
	if m := rep.Mismatch; m == nil || m.Tick != 300 || m.What != "checksum" {
		t.Fatalf("re-run of a changed input: %+v", rep)
	}
}

// TestRecordingAllocs: a server tick with its recording (the step, the
// checksums, full states every second, chunks handed to the Writer's
// goroutine, which compresses and writes them meanwhile) allocates
// nothing in steady state, on either goroutine.
func TestRecordingAllocs(t *testing.T) {
	r := newServerRig(t, filepath.Join(t.TempDir(), "allocs.replay"), Config{Game: "arena", KeyEvery: 60}, 300, 1, 2, 3, 4, 5, 6, 7, 8)
	defer r.close()
	for range 2000 { // chunks and blocks reach their steady sizes
		r.tick()
	}
	before := r.rec.w.Stats()
	// AllocsPerRun runs on one P: yield after each tick, as a server's
	// loop waits for the next one, so that the Writer's goroutine runs.
	if n := testing.AllocsPerRun(1000, func() { r.tick(); runtime.Gosched() }); n != 0 {
		t.Fatalf("%v allocations per recorded tick", n)
	}
	if st := r.rec.w.Stats(); st.Raw == before.Raw || st.Lost != 0 {
		t.Fatalf("nothing recorded, or records lost: %+v", st)
	}
}

// TestSegments: a recording larger than Config.SegmentBytes goes on in
// a new segment at a full state, keeping Segments files; each file
// re-runs alone from its first state (whose past lets the first shots
// rewind) to every checksum it holds.
func TestSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.replay")
	r := newServerRig(t, path, Config{Game: "arena", KeyEvery: 60, SegmentBytes: 64 << 10, Segments: 3}, 300, 1, 2, 3, 4)
	for range 6000 {
		r.tick()
	}
	r.close()
	if st := r.rec.w.Stats(); st.Segments < 3 || st.Lost != 0 {
		t.Fatalf("writer %+v", st)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Fatalf("a fourth file was kept: %v", err)
	}
	last := uint32(0)
	for _, name := range []string{path + ".2", path + ".1", path} {
		rec, err := ReadFile(name)
		if err != nil || rec.Err != nil {
			t.Fatal(err, rec.Err)
		}
		rep, err := Check(rec, arenaGames)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: segment %d, %+v", name, rec.Header.Segment, rep)
		if rep.Mismatch != nil || rep.Restarts != 0 || rep.First == 0 || rep.First < last || rep.Checksums == 0 {
			t.Fatalf("%s re-runs as %+v", name, rep)
		}
		last = rep.Last
	}
	if last != 6000 {
		t.Fatalf("the current segment ends at tick %d", last)
	}
}
