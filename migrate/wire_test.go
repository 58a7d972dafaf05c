package migrate

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// TestRosterFrame: a roster survives its frame; a frame whose roster
// breaks a rule is refused.
func TestRosterFrame(t *testing.T) {
	r := roster4()
	f := r.Frame()
	b, err := f.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	pf, _, err := proto.ParseRosterFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RosterFromFrame(&pf)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("roster %+v (%v), want %+v", got, err, r)
	}
	pf.Members[2].Candidate = true // a candidate without an address
	if _, err := RosterFromFrame(&pf); !errors.Is(err, ErrRosterAddr) {
		t.Fatalf("invalid roster: %v", err)
	}
}

// TestStandbyOverTheWire: a standby loaded from the host's standby
// state frame (state and 20 past snapshots, zstd) and fed its step
// records as standby step frames, each encoded and parsed, replays to
// the host's exact world every tick.
func TestStandbyOverTheWire(t *testing.T) {
	h := newArenaHost(t, 4)
	for h.eng.Tick() < 30 {
		h.step()
	}
	var (
		sb     Standby
		codecs deltacomp.Codecs
		past   []*deltacomp.Snapshot
	)
	for tick := uint32(10); tick < 30; tick++ {
		past = append(past, h.past[tick])
	}
	sf, err := AppendStateFrame(nil, &codecs, proto.CodecZstd, 7, h.eng, past)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("standby state frame: %d bytes (state and 20 past snapshots of %d entities)", len(sf), len(h.eng.Snapshot().IDs))
	pst, _, err := proto.ParseStandbyStateFrame(sf)
	if err != nil {
		t.Fatal(err)
	}
	pst.Tick++
	if err := LoadStateFrame(&sb, &pst, arena.NewGame(0), sim.ServerConfig{}, &codecs); !errors.Is(err, ErrStateFrame) {
		t.Fatalf("state whose snapshot is of another tick: %v", err)
	}
	pst.Tick--
	if err := LoadStateFrame(&sb, &pst, arena.NewGame(0), sim.ServerConfig{}, &codecs); err != nil {
		t.Fatal(err)
	}
	if err := LoadStateFrame(&sb, &proto.StandbyStateFrame{Epoch: 6}, arena.NewGame(0), sim.ServerConfig{}, &codecs); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("state of an older epoch: %v", err)
	}
	var (
		out     proto.StandbyStepFrame
		rec     sim.StepRecord
		b       []byte
		largest int
	)
	for h.eng.Tick() < 150 {
		StepFrame(&out, 7, arena.InputSize, h.step())
		var err error
		if b, err = out.Append(b[:0]); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(b))
		in, _, err := proto.ParseStandbyStepFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		e, err := StepRecordFromFrame(&rec, &in)
		if err != nil || e != 7 {
			t.Fatalf("epoch %d: %v", e, err)
		}
		if err := sb.Step(e, &rec); err != nil {
			t.Fatalf("tick %d: %v", rec.Tick, err)
		}
		tick, _ := sb.Ready()
		if tick != h.eng.Tick() || !slices.Equal(world(sb.eng.World()), world(h.eng.World())) {
			t.Fatalf("tick %d: standby world differs", h.eng.Tick())
		}
	}
	// 4 players, 8-byte inputs: the record's size per tick.
	t.Logf("largest standby step frame: %d bytes (%d B/s at 60 Hz)", largest, largest*60)
	if largest > 15+4*(3+10+arena.InputSize) {
		t.Fatalf("a step frame of %d bytes for 4 players without messages", largest)
	}
	in, _, _ := proto.ParseStandbyStepFrame(b)
	in.Inputs[0], in.Inputs[1] = in.Inputs[1], in.Inputs[0]
	if _, err := StepRecordFromFrame(&rec, &in); !errors.Is(err, ErrStepFrame) {
		t.Fatalf("inputs out of order: %v", err)
	}
}
