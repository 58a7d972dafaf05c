package scenario_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
)

// randomWorld is a scenario of random snapshot sequences: entities with
// random ids (small and huge gaps, spawner bits) spawn and die, and their
// records change in random bytes, a few or many per tick.
type randomWorld struct {
	rng      *rand.Rand
	rs       int
	tick     uint32
	ids      []proto.NetworkID
	recs     map[proto.NetworkID][]byte
	churn    float64 // chance per tick of spawns/removals
	change   float64 // chance per entity per tick of a change
	frozen   bool    // no more changes (quiesce)
	drift    bool    // a quarter of the entities move on steadily: their first bytes grow each tick
	nextID   uint32
	maxCount int
}

func newRandomWorld(seed uint64, rs, count int) *randomWorld {
	w := &randomWorld{rng: rand.New(rand.NewPCG(seed, 99)), rs: rs, recs: map[proto.NetworkID][]byte{}, churn: 0.3, change: 0.1, maxCount: count * 2}
	for k := 0; k < count; k++ {
		w.spawn()
	}
	return w
}

func (w *randomWorld) Name() string    { return "random" }
func (w *randomWorld) RecordSize() int { return w.rs }

func (w *randomWorld) spawn() {
	var id proto.NetworkID
	for id == 0 || w.recs[id] != nil {
		switch w.rng.IntN(3) {
		case 0:
			w.nextID += 1 + uint32(w.rng.IntN(3))
			id = proto.NetworkID(w.nextID)
		case 1:
			id = proto.MakeNetworkID(uint16(w.rng.IntN(proto.MaxSpawner+1)), uint32(w.rng.IntN(1<<20)))
		default:
			id = proto.NetworkID(w.rng.Uint32())
		}
	}
	rec := make([]byte, w.rs)
	for i := range rec {
		rec[i] = byte(w.rng.IntN(256))
	}
	w.recs[id] = rec
	i, _ := slices.BinarySearch(w.ids, id)
	w.ids = slices.Insert(w.ids, i, id)
}

func (w *randomWorld) Next(f *scenario.Frame) bool {
	if !w.frozen {
		if w.rng.Float64() < w.churn {
			for k := w.rng.IntN(4); k > 0 && len(w.ids) < w.maxCount; k-- {
				w.spawn()
			}
			for k := w.rng.IntN(4); k > 0 && len(w.ids) > 1; k-- {
				i := w.rng.IntN(len(w.ids))
				delete(w.recs, w.ids[i])
				w.ids = slices.Delete(w.ids, i, i+1)
			}
		}
		for _, id := range w.ids {
			if w.drift && id%4 == 0 {
				rec := w.recs[id]
				for k := range min(3, len(rec)) {
					rec[k] += byte(1 + int(id)%5 + k)
				}
			}
			if w.rng.Float64() >= w.change {
				continue
			}
			rec := w.recs[id]
			switch w.rng.IntN(3) {
			case 0: // a small change of the first bytes
				rec[0] += byte(1 + w.rng.IntN(3))
			case 1: // a few random bytes
				for k := 1 + w.rng.IntN(3); k > 0; k-- {
					rec[w.rng.IntN(w.rs)] = byte(w.rng.IntN(256))
				}
			default: // everything
				for i := range rec {
					rec[i] = byte(w.rng.IntN(256))
				}
			}
		}
	}
	f.Snap.Reset(w.tick, w.rs)
	f.Pos, f.Kind = f.Pos[:0], f.Kind[:0]
	for _, id := range w.ids {
		f.Snap.Append(id, w.recs[id])
		h := uint32(id) * 2654435761
		f.Pos = append(f.Pos, interest.Vec3{X: float32(h%200) - 100, Y: float32(h/200%200) - 100})
		f.Kind = append(f.Kind, uint8(h>>28&3))
	}
	w.tick++
	return true
}

// bytePredictor extrapolates every byte of rs-byte records: a predictor
// for records without a schema, as the random worlds' are.
func bytePredictor(t testing.TB, rs int) *deltacomp.Predictor {
	fields := make([]deltacomp.Field, rs)
	names := make([]string, rs)
	for i := range fields {
		names[i] = fmt.Sprint("b", i)
		fields[i] = deltacomp.Field{Name: names[i], Bits: 8}
	}
	s, err := deltacomp.NewSchema(fields...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := deltacomp.NewPredictor(s, names...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplicationProperties runs random snapshot sequences through ring,
// scheduler, encoder, a lossy reordering network and the replica, with
// random resyncs answered by full snapshots in every codec and replicas
// that lose their state. At every arrival each entity the client holds must
// equal the server's record at the revision it came from; after the world
// stops changing and the network heals, every client must hold exactly the
// server's state. Odd seeds replicate with codec 5, a predictor
// extrapolating every byte of the records, in worlds where a quarter of
// the entities also move on steadily.
func TestReplicationProperties(t *testing.T) {
	type cfg struct {
		loss   float64
		jitter int
		budget int
		radius float32
	}
	cases := []cfg{
		{0, 0, 0, 0}, {0.1, 0, 0, 0}, {0.3, 3, 0, 0},
		{0.1, 2, 1158, 0}, {0.2, 0, 200, 0}, {0.05, 4, 120, 0},
		{0.1, 2, 1158, 60},
	}
	iters := 6
	if testing.Short() {
		iters = 2
	}
	for ci, c := range cases {
		for it := 0; it < iters; it++ {
			seed := uint64(ci*100 + it)
			t.Run(fmt.Sprintf("loss%.2f_jitter%d_budget%d_radius%v_%d", c.loss, c.jitter, c.budget, c.radius, it), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 1))
				rs := 1 + rng.IntN(30)
				w := newRandomWorld(seed, rs, 5+rng.IntN(120))
				nm := netModel{RTT: 2 + rng.IntN(10), Jitter: c.jitter, Loss: c.loss, Budget: c.budget, Radius: c.radius}
				if it%2 == 1 {
					nm.Skip = 0.2 // clients skip ticks: realignment over several layout changes
				}
				var pred *deltacomp.Predictor
				if seed%2 == 1 {
					pred = bytePredictor(t, rs)
					w.drift = true
				}
				h := newHarness(t, w, nm, 3, seed, pred)
				h.check = true
				h.allowGaps = true
				for h.tick < 300 {
					h.step()
					if h.rng.IntN(80) == 0 { // a replica loses its state and asks for a resync
						c := h.clients[h.rng.IntN(len(h.clients))]
						c.rep.Reset()
						c.resync = true
					}
					if h.rng.IntN(100) == 0 { // the server resyncs a client
						h.sendFull(h.clients[h.rng.IntN(len(h.clients))], h.fullCodec(), proto.CauseResync)
					}
				}
				// Heal: no more changes or losses; run until everything
				// lost has been re-sent, then drain.
				w.frozen = true
				h.heal()
				for k := 0; k < 200; k++ {
					h.step()
				}
				h.drain()
				for ci := range h.clients {
					if err := h.converged(ci); err != nil {
						t.Fatalf("client %d: %v", ci, err)
					}
				}
			})
		}
	}
}
