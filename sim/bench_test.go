package sim_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// rollbackBench is a client of the arena (300 NPCs, 16 players) at
// 150 ms round trip, fed one authoritative snapshot per tick (recorded
// from a server beforehand) with a steady input age, so every Advance
// rolls back and re-simulates the ~10 unconfirmed ticks.
type rollbackBench struct {
	cli    *sim.Client
	snaps  []*deltacomp.Snapshot
	now    time.Time
	tick   uint32
	i      int
	sample sim.SampleFunc
}

func newRollbackBench(tb testing.TB) *rollbackBench {
	srv, err := sim.NewServer(arena.NewGame(arena.DefaultNPCs), sim.ServerConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	srv.Start(now, 0)
	for p := uint16(1); p <= 16; p++ {
		if _, err := srv.Join(p); err != nil {
			tb.Fatal(err)
		}
	}
	b := &rollbackBench{}
	for range 600 {
		now = now.Add(srv.Period())
		for p := uint16(2); p <= 16; p++ {
			next := srv.Tick() + 1
			f := proto.InputFrame{Player: p, Tick: next, Count: 1, Size: arena.InputSize, Data: randomArenaInput(uint64(p), true)(p, next, nil)}
			if err := srv.ReceiveInput(now, nil, &f); err != nil {
				tb.Fatal(err)
			}
		}
		srv.Step()
		s := srv.Snapshot()
		b.snaps = append(b.snaps, &deltacomp.Snapshot{Tick: s.Tick, RecordSize: s.RecordSize, IDs: slices.Clone(s.IDs), Records: slices.Clone(s.Records)})
	}
	b.cli, err = sim.NewClient(srv.World().Clone(), sim.ClientConfig{Players: []uint16{1}, Own: arenaOwn(1)})
	if err != nil {
		tb.Fatal(err)
	}
	b.now, b.tick = start, 1000
	b.cli.Start(b.now, b.tick, 150*time.Millisecond)
	var r rand.PCG
	b.sample = func(player uint16, tick uint32, dst []byte) []byte {
		r.Seed(uint64(tick), 1)
		h := r.Uint64()
		return arena.AppendInput(dst, arena.Input{MoveX: int8(h), MoveY: int8(h >> 8), Aim: uint16(h >> 16), Buttons: uint8(h>>32) & 3})
	}
	for range 300 { // warm up: buffers reach their steady size
		b.step()
	}
	return b
}

// step is one tick: a packet with the next snapshot and input ack, and a
// frame.
func (b *rollbackBench) step() {
	b.now = b.now.Add(b.cli.Period())
	b.tick++
	b.i = (b.i + 1) % len(b.snaps)
	c := b.cli
	c.PacketReceived(b.now, b.tick)
	c.SnapshotReceived(b.now, b.tick)
	if err := c.Authoritative(b.tick, b.snaps[b.i]); err != nil {
		panic(err)
	}
	target := c.Stats().TargetAge
	c.InputAck(b.now, proto.InputAckFrame{Player: 1, Newest: c.Tick(), Age: int16(target / (100 * time.Microsecond))}, b.tick, 0)
	c.Advance(b.now, b.sample)
}

// Advance with a rollback and re-simulation of ~10 ticks allocates
// nothing in steady state.
func TestClientAdvanceRollbackAllocs(t *testing.T) {
	b := newRollbackBench(t)
	before := b.cli.Stats()
	if n := testing.AllocsPerRun(200, b.step); n != 0 {
		t.Errorf("%v allocs per Advance with rollback", n)
	}
	st := b.cli.Stats()
	rb := st.Rollbacks - before.Rollbacks
	per := float64(st.Resimulated-before.Resimulated) / float64(rb)
	if rb < 200 || per < 9 {
		t.Errorf("%d rollbacks re-simulating %.1f ticks each", rb, per)
	}
}

// BenchmarkClientRollback: one client frame per tick for the arena (300
// NPCs, 16 players) at 150 ms round trip: take the snapshot, roll back,
// re-simulate the unconfirmed ticks, predict the new one, smooth,
// interpolate.
func BenchmarkClientRollback(b *testing.B) {
	rb := newRollbackBench(b)
	before := rb.cli.Stats()
	b.ReportAllocs()
	for b.Loop() {
		rb.step()
	}
	st := rb.cli.Stats()
	if n := st.Rollbacks - before.Rollbacks; n > 0 {
		b.ReportMetric(float64(st.Resimulated-before.Resimulated)/float64(n), "resim-ticks/op")
	}
}
