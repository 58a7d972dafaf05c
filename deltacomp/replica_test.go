package deltacomp

import (
	"bytes"
	"errors"
	"math/bits"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// pipeline is a minimal server+client without interest: every entity that
// changed (or was never acknowledged) goes out each tick; packets are
// acknowledged two ticks later.
type pipeline struct {
	g     interface{ next(s *Snapshot, churn bool) }
	ring  *Ring
	enc   *Encoder
	rep   *Replica
	snap  Snapshot
	sel   []int32
	buf   []byte
	seq   uint16
	frame proto.SnapshotDeltaFrame
	churn bool
	join  []byte // the join full snapshot frame
}

func newPipeline(tb testing.TB, seed uint64, rs, n int) *pipeline {
	return newPipelineOf(tb, newRandomSnapshots(seed, rs, n), rs, nil)
}

// newPredictedPipeline is a pipeline of n moving entities (movingSnapshots)
// replicated with codec 5.
func newPredictedPipeline(tb testing.TB, seed uint64, n int) *pipeline {
	g := newMovingSnapshots(tb, seed, n)
	return newPipelineOf(tb, g, g.schema.Size(), g.pred)
}

func newPipelineOf(tb testing.TB, g interface{ next(*Snapshot, bool) }, rs int, pred *Predictor) *pipeline {
	p := &pipeline{g: g, ring: NewRing(RingConfig{Predictor: pred})}
	p.enc = NewEncoder(p.ring, EncoderConfig{})
	var err error
	p.rep, err = NewReplica(ReplicaConfig{RecordSize: rs, Predictor: pred})
	if err != nil {
		tb.Fatal(err)
	}
	p.buf = make([]byte, 0, 64<<10)
	return p
}

// tick pushes the next state and encodes one frame into p.buf.
func (p *pipeline) tick(tb testing.TB) {
	p.g.next(&p.snap, p.churn)
	if _, err := p.ring.Push(&p.snap); err != nil {
		tb.Fatal(err)
	}
	if p.ring.Revision() == 1 {
		// Join: a full snapshot, acknowledged at once.
		var c Codecs
		b, err := c.AppendFullSnapshot(nil, p.ring.Latest(), proto.CauseJoin, 1, proto.CodecLZ4)
		if err != nil {
			tb.Fatal(err)
		}
		full, _, err := proto.ParseFullSnapshotFrame(b)
		if err != nil {
			tb.Fatal(err)
		}
		if err := p.rep.ApplyFull(&full, &c); err != nil {
			tb.Fatal(err)
		}
		p.join = b
		p.enc.FullDelivered(1, p.ring.Latest().IDs)
	}
	p.enc.Prepare()
	p.sel = p.sel[:0]
	for k, w := range p.ring.Changed() {
		for ; w != 0; w &= w - 1 {
			i := k*64 + bits.TrailingZeros64(w)
			if p.enc.BodySize(i) > 0 {
				p.sel = append(p.sel, int32(i))
			}
		}
	}
	var err error
	p.buf, err = p.enc.AppendFrame(p.buf[:0], p.seq, p.sel)
	if err != nil {
		tb.Fatal(err)
	}
	if p.seq >= 2 {
		p.enc.Delivered(p.seq - 2)
	}
	p.seq++
}

func (p *pipeline) apply(tb testing.TB) {
	var n int
	var err error
	p.frame, n, err = proto.ParseSnapshotDeltaFrame(p.buf)
	if err != nil || n != len(p.buf) {
		tb.Fatalf("parse: %v", err)
	}
	if err := p.rep.Apply(&p.frame); err != nil {
		tb.Fatalf("apply: %v", err)
	}
}

func TestEncodeDecodeZeroAlloc(t *testing.T) {
	t.Run("codec=4", func(t *testing.T) { testEncodeDecodeZeroAlloc(t, newPipeline(t, 1, 10, 900)) })
	t.Run("codec=5", func(t *testing.T) { testEncodeDecodeZeroAlloc(t, newPredictedPipeline(t, 1, 900)) })
}

func testEncodeDecodeZeroAlloc(t *testing.T, p *pipeline) {
	for range 600 { // warm up: buffers reach their steady size
		p.tick(t)
		p.apply(t)
	}
	if a := testing.AllocsPerRun(200, func() { p.tick(t); p.apply(t) }); a != 0 {
		t.Errorf("push+encode+decode: %v allocs per tick", a)
	}
	// Decode: apply a fresh frame each run.
	for range 10 {
		p.tick(t)
		p.apply(t)
	}
	frames := make([][]byte, 0, 300)
	for range 300 {
		p.tick(t)
		frames = append(frames, bytes.Clone(p.buf))
	}
	k := 0
	a := testing.AllocsPerRun(200, func() {
		f, _, err := proto.ParseSnapshotDeltaFrame(frames[k])
		k++
		if err != nil {
			t.Fatal(err)
		}
		if err := p.rep.Apply(&f); err != nil {
			t.Fatal(err)
		}
	})
	if a != 0 {
		t.Errorf("decode: %v allocs per frame", a)
	}
	if !bytes.Equal(p.rep.State().Records, p.ring.Latest().Records[:len(p.rep.State().Records)]) && k == len(frames) {
		t.Error("state differs")
	}
}

func TestReplicaBaselineMissing(t *testing.T) {
	p := newPipeline(t, 2, 6, 50)
	for range 10 {
		p.tick(t)
		p.apply(t)
	}
	before := bytes.Clone(p.rep.State().Records)
	rev := p.rep.Revision()
	p.rep.Reset()
	p.tick(t)
	f, _, _ := proto.ParseSnapshotDeltaFrame(p.buf)
	if err := p.rep.Apply(&f); !errors.Is(err, ErrBaselineMissing) {
		t.Fatalf("apply without history: %v", err)
	}
	if p.rep.State().Len() != 0 {
		t.Fatal("failed apply changed state")
	}
	req := p.rep.ResyncRequest(proto.ResyncBaselineMissing)
	if req.Reason != proto.ResyncBaselineMissing {
		t.Fatal(req)
	}
	_ = before
	_ = rev
	// Resync: full snapshot of the latest state, then patches again.
	var c Codecs
	p.enc.Reset()
	b, err := c.AppendFullSnapshot(nil, p.ring.Latest(), proto.CauseResync, p.ring.Revision(), proto.CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := proto.ParseFullSnapshotFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.rep.ApplyFull(&full, &c); err != nil {
		t.Fatal(err)
	}
	p.enc.FullDelivered(p.ring.Revision(), p.ring.Latest().IDs)
	for range 20 {
		p.tick(t)
		p.apply(t)
	}
	if !bytes.Equal(p.rep.State().Records, p.ring.Latest().Records) {
		t.Fatal("state differs after resync")
	}
}

func TestReplicaRejectsStaleAndBadFrames(t *testing.T) {
	p := newPipeline(t, 3, 4, 20)
	var old []byte
	for i := range DefaultReplicaHistory + 40 { // the old frame falls out of the history
		p.tick(t)
		if i == 5 {
			old = bytes.Clone(p.buf)
		}
		p.apply(t)
	}
	f, _, _ := proto.ParseSnapshotDeltaFrame(old)
	if err := p.rep.Apply(&f); !errors.Is(err, ErrStale) {
		t.Fatalf("stale frame: %v", err)
	}
	f.Codec = proto.CodecLZ4
	if err := p.rep.Apply(&f); !errors.Is(err, proto.ErrMalformed) {
		t.Fatalf("wrong codec: %v", err)
	}
}

// FuzzReplicaApply feeds garbage frame data to a replica that holds
// history: it must not panic, and a frame that fails changes nothing.
func FuzzReplicaApply(f *testing.F) {
	fuzzReplicaApply(f, newPipeline(f, 4, 5, 30), proto.CodecXORRLE)
}

// FuzzReplicaApplyPredicted is FuzzReplicaApply for codec 5: its seeds
// hold patches against predictions (kinds 0–5), the garbage is decoded
// with the predictor.
func FuzzReplicaApplyPredicted(f *testing.F) {
	fuzzReplicaApply(f, newPredictedPipeline(f, 4, 30), proto.CodecPredictedXORRLE)
}

func fuzzReplicaApply(f *testing.F, p *pipeline, codec proto.Codec) {
	p.churn = true
	var seeds [][]byte
	for range 40 {
		p.tick(f)
		p.apply(f)
		seeds = append(seeds, bytes.Clone(p.buf))
	}
	for _, s := range seeds[len(seeds)-8:] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, _ := NewReplica(ReplicaConfig{RecordSize: p.ring.Latest().RecordSize, Predictor: p.ring.pred})
		join, _, _ := proto.ParseFullSnapshotFrame(p.join)
		var c Codecs
		if err := rep.ApplyFull(&join, &c); err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			fr, _, _ := proto.ParseSnapshotDeltaFrame(s)
			if err := rep.Apply(&fr); err != nil {
				t.Fatal(err)
			}
		}
		before := bytes.Clone(rep.State().Records)
		ids := append([]proto.NetworkID(nil), rep.State().IDs...)
		fr, _, err := proto.ParseSnapshotDeltaFrame(b)
		if err != nil {
			// Also try the bytes as a frame's data.
			fr = proto.SnapshotDeltaFrame{Tick: 41, Revision: 41, BaseRevision: 1, Codec: codec, Count: uint16(len(b) % 7), Data: b}
		}
		if err := rep.Apply(&fr); err != nil {
			if !bytes.Equal(before, rep.State().Records) || len(ids) != rep.State().Len() {
				t.Fatal("failed apply changed state")
			}
			return
		}
		st := rep.State()
		if st.Check() != nil && st.Len() > 0 {
			t.Fatal("state ids not ascending")
		}
	})
}

// TestReplicaCarried: Carried names exactly the entities the last delta
// carried, not every entity of its revision: a second frame of the same
// revision (a server tick that ran no step) carries other entities, and
// a checksum of that frame covers only them.
func TestReplicaCarried(t *testing.T) {
	p := newPipeline(t, 5, 8, 60)
	for range 5 {
		p.tick(t)
		p.apply(t)
	}
	latest := p.ring.Latest()
	send := func(sel []int32) {
		t.Helper()
		var err error
		p.enc.Prepare()
		p.buf, err = p.enc.AppendFrame(p.buf[:0], p.seq, sel)
		if err != nil {
			t.Fatal(err)
		}
		p.seq++
		p.apply(t)
		if got := p.rep.Carried(); len(got) != len(sel) {
			t.Fatalf("carried %v, want the %d entities of the frame", got, len(sel))
		}
		for k, i := range sel {
			if p.rep.Carried()[k] != latest.IDs[i] {
				t.Fatalf("carried %v, want ids of %v", p.rep.Carried(), sel)
			}
		}
	}
	// Two frames of the same revision with different entities: the
	// entities the encoder would send now, split in two.
	p.enc.Prepare()
	var due []int32
	for i := range latest.Len() {
		if p.enc.BodySize(i) > 0 {
			due = append(due, int32(i))
		}
	}
	if len(due) < 4 {
		t.Fatalf("only %d entities to send", len(due))
	}
	half := len(due) / 2
	send(due[:half])
	send(due[half:])
	same := 0
	for i := range p.rep.State().Len() {
		if p.rep.EntityRevision(i) == p.ring.Revision() {
			same++
		}
	}
	if same < len(due) {
		t.Fatalf("%d entities at the revision, want the %d both frames carried", same, len(due))
	}
}
