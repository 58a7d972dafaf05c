package deltacomp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// lossyRun replicates a movingSnapshots world to one client over a link
// that loses, delays and reorders frames and their acknowledgements,
// codec 4 or 5, and checks at every arrival that each entity the client
// holds is the server's record at the revision it came from.
type lossyRun struct {
	t       *testing.T
	rng     *rand.Rand
	g       *movingSnapshots
	ring    *Ring
	enc     *Encoder
	rep     *Replica
	snap    Snapshot
	seq     uint16
	transit []lossyFrame
	lost    map[proto.NetworkID]bool // carried by lost frames: to send again
	bytes   int
	kinds   [6]int
}

type lossyFrame struct {
	seq      uint16
	data     []byte
	arrive   int // tick it reaches the client; -1: lost
	ackAt    int // tick its fate reaches the server
	resolved bool
}

func newLossyRun(t *testing.T, seed uint64, predict bool) *lossyRun {
	g := newMovingSnapshots(t, seed, 200)
	var pred *Predictor
	if predict {
		pred = g.pred
	}
	r := &lossyRun{t: t, rng: rand.New(rand.NewPCG(seed, 9)), g: g, ring: NewRing(RingConfig{Size: 16, Predictor: pred}), lost: map[proto.NetworkID]bool{}}
	r.enc = NewEncoder(r.ring, EncoderConfig{})
	var err error
	if r.rep, err = NewReplica(ReplicaConfig{RecordSize: g.schema.Size(), History: 32, Predictor: pred}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *lossyRun) step(tick int) {
	t := r.t
	r.g.next(&r.snap, r.rng.IntN(3) == 0)
	if _, err := r.ring.Push(&r.snap); err != nil {
		t.Fatal(err)
	}
	// The server learns the fates due, in the order they come.
	for k := range r.transit {
		f := &r.transit[k]
		if f.resolved || f.ackAt > tick {
			continue
		}
		f.resolved = true
		if f.arrive >= 0 {
			r.enc.Delivered(f.seq)
			continue
		}
		ids, _ := r.enc.Lost(f.seq, nil)
		for _, id := range ids {
			r.lost[id] = true
		}
	}
	// What changed, and what lost frames carried, goes out.
	r.enc.Prepare()
	var sel []int32
	lat := r.ring.Latest()
	for i, id := range lat.IDs {
		if (idset.Bit(r.ring.Changed(), i) || r.lost[id]) && r.enc.BodySize(i) > 0 {
			sel = append(sel, int32(i))
			delete(r.lost, id)
		}
	}
	b, err := r.enc.AppendFrame(nil, r.seq, sel)
	if err != nil {
		t.Fatal(err)
	}
	r.bytes += len(b)
	r.countKinds(b)
	delay := 1 + r.rng.IntN(4) // reorders
	f := lossyFrame{seq: r.seq, data: b, arrive: tick + delay, ackAt: tick + 2*delay + r.rng.IntN(3)}
	if r.rng.IntN(6) == 0 {
		f.arrive, f.ackAt = -1, tick+12
	}
	r.transit = append(r.transit, f)
	r.seq++
	// The client applies what arrives.
	for _, f := range r.transit {
		if f.arrive != tick {
			continue
		}
		fr, _, err := proto.ParseSnapshotDeltaFrame(f.data)
		if err != nil {
			t.Fatal(err)
		}
		switch err := r.rep.Apply(&fr); {
		case errors.Is(err, ErrBaselineMissing):
			t.Fatalf("tick %d: a frame's baseline is missing", tick)
		case errors.Is(err, ErrStale):
		case err != nil:
			t.Fatalf("tick %d: %v", tick, err)
		}
		r.check(tick)
	}
	r.transit = slices.DeleteFunc(r.transit, func(f lossyFrame) bool { return f.resolved && (f.arrive < 0 || f.arrive <= tick) })
}

// check compares every entity the client holds with the server's record
// at the revision the client's value came from.
func (r *lossyRun) check(tick int) {
	st := r.rep.State()
	lat := r.ring.Latest()
	for i, id := range st.IDs {
		j := r.ring.Index(id)
		if j < 0 {
			continue // removed; its removal may be on its way
		}
		p, ok := r.ring.Patch(r.rep.EntityRevision(i), j)
		if !ok {
			continue
		}
		want := bytes.Clone(lat.Record(j))
		for k := range want {
			want[k] ^= p[k]
		}
		if !bytes.Equal(st.Record(i), want) {
			r.t.Fatalf("tick %d: entity %d at revision %d: %x, the server's %x", tick, id, r.rep.EntityRevision(i), st.Record(i), want)
		}
	}
}

// countKinds counts the entry kinds of frame b.
func (r *lossyRun) countKinds(b []byte) {
	_, es := entries(r.t, b, r.ring.Latest().RecordSize)
	for _, e := range es {
		r.kinds[e.kind]++
	}
}

// TestPredictedOverLossyLink: codec 5 over a link that loses a sixth of
// the frames, delays the rest 1–4 ticks (reordering them) and reports
// fates late and out of order: every entity the client holds is always
// the server's record at the revision it came from, no frame misses its
// baselines, predicted entries of both kinds are written, and the frames
// are smaller than codec 4's on the same world and link.
func TestPredictedOverLossyLink(t *testing.T) {
	for seed := range uint64(4) {
		plain, pred := newLossyRun(t, seed, false), newLossyRun(t, seed, true)
		for tick := range 600 {
			plain.step(tick)
			pred.step(tick)
		}
		if plain.kinds[kindPredicted]+plain.kinds[kindPredictedExplicit] != 0 {
			t.Fatalf("codec 4 wrote predicted entries: %v", plain.kinds)
		}
		if pred.kinds[kindPredicted] == 0 || pred.kinds[kindPredictedExplicit] == 0 {
			t.Fatalf("seed %d: entries by kind %v: want both predicted kinds", seed, pred.kinds)
		}
		t.Logf("seed %d: codec 4 %d bytes, codec 5 %d bytes (%.0f %%); codec 5 entries by kind %v", seed, plain.bytes, pred.bytes, 100*float64(pred.bytes)/float64(plain.bytes), pred.kinds)
		if pred.bytes >= plain.bytes {
			t.Errorf("seed %d: codec 5 wrote %d bytes, codec 4 %d", seed, pred.bytes, plain.bytes)
		}
	}
}

// TestPredictedConfig: a replica decodes codec 5 only with a predictor,
// and ring and replica refuse a predictor of another record size.
func TestPredictedConfig(t *testing.T) {
	p := newPredictedPipeline(t, 7, 50)
	for range 20 {
		p.tick(t)
		p.apply(t)
	}
	rs := p.ring.Latest().RecordSize
	plain, err := NewReplica(ReplicaConfig{RecordSize: rs})
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := proto.ParseSnapshotDeltaFrame(p.buf)
	if f.Codec != proto.CodecPredictedXORRLE {
		t.Fatalf("codec %v", f.Codec)
	}
	if err := plain.Apply(&f); !errors.Is(err, proto.ErrMalformed) {
		t.Fatalf("codec 5 without a predictor: %v", err)
	}
	if _, err := NewReplica(ReplicaConfig{RecordSize: rs + 1, Predictor: p.ring.pred}); !errors.Is(err, ErrRecordSize) {
		t.Fatalf("replica of another record size: %v", err)
	}
	r := NewRing(RingConfig{Predictor: p.ring.pred})
	s := Snapshot{RecordSize: rs + 1}
	if _, err := r.Push(&s); !errors.Is(err, ErrRecordSize) {
		t.Fatalf("ring of another record size: %v", err)
	}
}
