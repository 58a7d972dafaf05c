package scenario_test

import (
	"math/bits"
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// codecRun is the delta codec alone over a scenario's frames, without
// interest management or a network: one client, whose frames are
// acknowledged benchRTT ticks after they are written, and every entity
// that changed goes out each tick, in as many frames of at most
// proto.MaxPacketSizeLimit bytes as it takes.
type codecRun struct {
	frames []scenario.Frame
	next   int
	ring   *deltacomp.Ring
	enc    *deltacomp.Encoder
	sel    []int32
	out    [][]byte // the tick's frames
	n      int      // how many of out this tick wrote
	seq    uint16
	sentAt [benchRTT][]uint16 // sequences written, by tick % benchRTT
	tickNo int
}

func newCodecRun(frames []scenario.Frame, pred *deltacomp.Predictor) *codecRun {
	r := &codecRun{frames: frames, ring: deltacomp.NewRing(deltacomp.RingConfig{Predictor: pred})}
	r.enc = deltacomp.NewEncoder(r.ring, deltacomp.EncoderConfig{})
	return r
}

// push pushes the next frame into the ring (wrapping around).
func (r *codecRun) push(tb testing.TB) {
	f := &r.frames[r.next]
	r.next = (r.next + 1) % len(r.frames)
	if _, err := r.ring.Push(&f.Snap); err != nil {
		tb.Fatal(err)
	}
}

// tick pushes the next frame and writes the client's delta frames.
func (r *codecRun) tick(tb testing.TB) {
	r.push(tb)
	r.encode(tb)
}

// encode writes the client's delta frames of the ring's latest revision
// into r.out[:r.n], after the acknowledgements due: the encoder's work for
// a tick.
func (r *codecRun) encode(tb testing.TB) {
	acks := &r.sentAt[r.tickNo%benchRTT]
	for _, seq := range *acks {
		r.enc.Delivered(seq)
	}
	*acks = (*acks)[:0]
	r.tickNo++
	r.n = 0
	r.enc.Prepare()
	room := proto.MaxPacketSizeLimit - r.enc.FixedSize()
	used, prev := 0, -1
	r.sel = r.sel[:0]
	for k, w := range r.ring.Changed() {
		for ; w != 0; w &= w - 1 {
			i := k*64 + bits.TrailingZeros64(w)
			body := r.enc.BodySize(i)
			if body == 0 {
				continue
			}
			if c := body + r.enc.LinkSize(prev, i); used+c <= room || len(r.sel) == 0 {
				r.sel = append(r.sel, int32(i))
				used += c
				prev = i
				continue
			}
			r.write(tb, acks)
			r.enc.Prepare()
			r.sel = append(r.sel[:0], int32(i))
			used, prev = r.enc.BodySize(i)+r.enc.LinkSize(-1, i), i
		}
	}
	r.write(tb, acks)
}

// write appends the frame of r.sel to the tick's frames.
func (r *codecRun) write(tb testing.TB, acks *[]uint16) {
	if r.n == len(r.out) {
		r.out = append(r.out, make([]byte, 0, proto.SnapshotDeltaHeaderSize+proto.MaxPacketSizeLimit))
	}
	var err error
	if r.out[r.n], err = r.enc.AppendFrame(r.out[r.n][:0], r.seq, r.sel); err != nil {
		tb.Fatal(err)
	}
	*acks = append(*acks, r.seq)
	r.seq++
	r.n++
}

// BenchmarkDeltaCodec is the CPU cost of the delta codec per tick for
// one client (codecRun): encode is the acknowledgements, Prepare, sizing
// every changed entity and AppendFrame (the ring's push, shared by all
// clients, is left out: BenchmarkRingPush); decode is parsing the tick's
// frames and applying them to the client's Replica. The frames are the
// scenario's 3,600 ticks, over and over (decode starts a new replica at
// each pass). codec=xor-rle is codec 4, xor-rle-pred codec 5 with the
// scenario's predictor.
func BenchmarkDeltaCodec(b *testing.B) {
	for _, name := range []string{"cubes-ode", "arena"} {
		for _, codec := range []string{"xor-rle", "xor-rle-pred"} {
			var pred *deltacomp.Predictor
			if codec == "xor-rle-pred" {
				pred = scenarioPredictor(name)
			}
			benchDeltaCodec(b, "scenario="+name+"/codec="+codec, name, pred)
		}
	}
}

func benchDeltaCodec(b *testing.B, prefix, name string, pred *deltacomp.Predictor) {
	{
		frames, rs := scenarioFrames(b, name)
		b.Run(prefix+"/op=encode", func(b *testing.B) {
			r := newCodecRun(frames, pred)
			for range benchWarmup {
				r.tick(b)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r.push(b)
				b.StartTimer()
				r.encode(b)
			}
		})
		b.Run(prefix+"/op=decode", func(b *testing.B) {
			r := newCodecRun(frames, pred)
			encoded := make([][][]byte, len(frames)) // by tick
			for k := range encoded {
				r.tick(b)
				for _, f := range r.out[:r.n] {
					encoded[k] = append(encoded[k], append([]byte(nil), f...))
				}
			}
			rep, err := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: rs, Predictor: pred})
			if err != nil {
				b.Fatal(err)
			}
			apply := func(k int) {
				for _, fb := range encoded[k] {
					f, _, err := proto.ParseSnapshotDeltaFrame(fb)
					if err != nil {
						b.Fatal(err)
					}
					if err := rep.Apply(&f); err != nil {
						b.Fatal(err)
					}
				}
			}
			for k := range encoded { // a first pass grows the replica's buffers
				apply(k)
			}
			rep.Reset()
			k := 0
			b.ReportAllocs()
			for b.Loop() {
				if k == len(encoded) {
					k = 0
					rep.Reset()
				}
				apply(k)
				k++
			}
		})
	}
}
