package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// seedRecordings are small recordings of every role, for the fuzz
// target's seed corpus and the reader's tests.
func seedRecordings(t testing.TB) map[string][]byte {
	dir := t.TempDir()
	out := map[string][]byte{}
	read := func(name string) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	r := newServerRig(t, filepath.Join(dir, "server"), Config{Game: "arena", KeyEvery: 20}, 3, 1, 2)
	for range 45 {
		r.tick()
	}
	r.close()
	read("server")

	g, _ := swarm.NewGame(5)
	c := newCommitRig(t, filepath.Join(dir, "commits"), Config{Game: "swarm", KeyEvery: 20, DesyncRing: 8}, RoleCommitsClient, g)
	for range 30 {
		c.tick()
	}
	c.rec.Frame(31, sim.LockstepStats{Rollbacks: 2, Replayed: 5})
	c.rec.Loaded(c.ls, proto.ResyncChecksum)
	c.close()
	read("commits")

	w, err := Create(filepath.Join(dir, "client"), Config{Game: "arena", KeyEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	game := arena.NewGame(2)
	game.W.AddPlayer(3)
	cr, err := NewClientRecorder(w, 9, game, []uint16{3}, 60)
	if err != nil {
		t.Fatal(err)
	}
	var snap deltacomp.Snapshot
	for tick := uint32(1); tick <= 4; tick++ {
		cr.Input(tick, 3, arena.AppendInput(nil, arena.Input{MoveX: 5, Aim: 9}))
		cr.FirstStep(tick, game, func(id proto.NetworkID) bool { return arena.Owner(id) == 3 })
		snap.Reset(tick, arena.RecordSize)
		game.WriteSnapshot(&snap)
		cr.Confirmed(&snap)
		cr.Check(tick, 77, tick != 3)
		cr.Event(tick, Event{Kind: EventJoin, Player: 4})
		cr.Frame(tick)
	}
	if err := cr.Close(); err != nil {
		t.Fatal(err)
	}
	read("client")
	return out
}

// FuzzReader: any bytes read as a replay give an error or records,
// never a panic; every record body that parses encodes back to the same
// bytes; the header encodes back to itself; a re-run or a bisection of
// what was read returns.
func FuzzReader(f *testing.F) {
	for _, b := range seedRecordings(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(uncompressed(f, b))
	}
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		hb, err := rec.Header.Append(nil)
		if err != nil {
			t.Fatalf("header %+v read but does not encode: %v", rec.Header, err)
		}
		again, err := Read(bytes.NewReader(hb))
		if err != nil || !reflect.DeepEqual(again.Header, rec.Header) {
			t.Fatalf("header %+v encodes to %+v (%v)", rec.Header, again, err)
		}
		h := &rec.Header
		for _, x := range rec.Records {
			reencodes(t, h, x)
		}
		if len(rec.Records) < 500 {
			Check(rec, Games{State: arenaGames.State, Commits: swarmGames.Commits})
			Bisect(rec, rec, Games{State: arenaGames.State, Commits: swarmGames.Commits})
		}
	})
}

// reencodes checks that a record's body, if it parses, encodes back to
// the same bytes.
func reencodes(t *testing.T, h *Header, x Record) {
	t.Helper()
	var b []byte
	switch x.Type {
	case RecordStep:
		var s sim.StepRecord
		if ParseStep(x.Body, x.Tick, h.Schema.InputSize, &s) != nil {
			return
		}
		var ok bool
		if b, ok = appendStep(nil, &s); !ok {
			t.Fatalf("step %+v parsed but does not encode", s)
		}
	case RecordState:
		st, err := ParseServerState(x.Body, x.Tick, h.Schema.RecordSize)
		if err != nil {
			return
		}
		b = appendServerState(nil, &st.State, st.Snapshots)
	case RecordPredicted, RecordConfirmed:
		var s deltacomp.Snapshot
		if ParseEntities(&s, x.Body, x.Tick, h.Schema.RecordSize) != nil {
			return
		}
		b = appendEntities(nil, &s, nil)
	case RecordCommands:
		cmds, err := ParseCommands(x.Body, x.Tick, h.Schema.InputSize)
		if err != nil {
			return
		}
		b = le.AppendUint16(nil, uint16(len(cmds)))
		for i := range cmds {
			b = appendCommand(b, &cmds[i])
		}
	case RecordEvent:
		e, err := ParseEvent(x.Body)
		if err != nil {
			return
		}
		b = appendEvent(nil, &e)
	default:
		return
	}
	if !bytes.Equal(b, x.Body) {
		t.Fatalf("%v of tick %d: %x encodes back to %x", x.Type, x.Tick, x.Body, b)
	}
}

// TestReadSeeds: every seed recording reads to its end, each record's
// body parses and encodes back to itself.
func TestReadSeeds(t *testing.T) {
	for name, b := range seedRecordings(t) {
		rec, err := Read(bytes.NewReader(b))
		if err != nil || rec.Err != nil || len(rec.Records) == 0 {
			t.Fatalf("%s: %v, %v, %d records", name, err, rec.Err, len(rec.Records))
		}
		for _, x := range rec.Records {
			reencodes(t, &rec.Header, x)
		}
		cut, err := Read(bytes.NewReader(b[:len(b)-3]))
		if err != nil || cut.Err == nil {
			t.Fatalf("%s cut short: %v, tail error %v", name, err, cut.Err)
		}
	}
	if _, err := Read(bytes.NewReader([]byte("not a replay"))); err != ErrNotReplay {
		t.Fatalf("a text file: %v", err)
	}
}

// uncompressed is the recording b with its blocks stored (codec none):
// seeds whose records the fuzzer changes directly.
func uncompressed(t testing.TB, b []byte) []byte {
	rd, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b[:rd.off]...)
	for rd.readBlock() == nil {
		out = le.AppendUint32(out, uint32(5+len(rd.block)))
		out = append(out, byte(proto.CodecNone))
		out = le.AppendUint32(out, uint32(len(rd.block)))
		out = append(out, rd.block...)
	}
	return out
}
