package deltacomp

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// TestSharedCodesSameFrames: clients whose encoders run concurrently on
// one ring (sharing each patch's code) write exactly the frames that the
// same clients write alone, each on a ring of its own, whatever the
// baselines (some full, some acknowledged at different revisions), with
// codec 4 and with codec 5 (whose predicted codes are shared too).
func TestSharedCodesSameFrames(t *testing.T) {
	const rs = 16
	t.Run("codec=4", func(t *testing.T) { testSharedCodesSameFrames(t, nil) })
	t.Run("codec=5", func(t *testing.T) { testSharedCodesSameFrames(t, bytePredictor(t, rs)) })
}

// bytePredictor extrapolates every byte of rs-byte records.
func bytePredictor(t testing.TB, rs int) *Predictor {
	fields := make([]Field, rs)
	names := make([]string, rs)
	for i := range fields {
		names[i] = string(rune('a' + i))
		fields[i] = Field{Name: names[i], Bits: 8}
	}
	s, err := NewSchema(fields...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPredictor(s, names...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testSharedCodesSameFrames(t *testing.T, pred *Predictor) {
	const clients, entities, rs = 8, 300, 16
	rng := rand.New(rand.NewPCG(1, 2))
	snaps := make([]Snapshot, 40)
	rec := make([]byte, rs)
	for k := range snaps {
		snaps[k].Reset(uint32(k), rs)
		for i := range entities {
			switch {
			case k == 0 || rng.IntN(3) == 0:
				for j := range rec[:4+rng.IntN(rs-4)] {
					rec[j] = byte(rng.Uint32())
				}
			case pred != nil && i%2 == 0:
				// Half the entities move on steadily, as a predictor
				// expects: its patches are the shorter.
				copy(rec, snaps[k-1].Record(i))
				for j := range rec[:3] {
					rec[j] += byte(i%7) + byte(j)
				}
			default:
				copy(rec, snaps[k-1].Record(i))
			}
			snaps[k].Append(proto.NetworkID(i+1), rec)
		}
	}
	// Which packets each client loses, and which entities it sends.
	lose := make([][]bool, clients)
	sel := make([][][]int32, clients)
	for c := range clients {
		for range snaps {
			lose[c] = append(lose[c], rng.IntN(4) == 0)
			var s []int32
			for i := range entities {
				if rng.IntN(8) == 0 { // ~37 entities: one packet's worth
					s = append(s, int32(i))
				}
			}
			sel[c] = append(sel[c], s)
		}
	}
	run := func(r *Ring, e *Encoder, c, k int) []byte {
		e.Prepare()
		for _, i := range sel[c][k] {
			e.BodySize(int(i))
		}
		b, err := e.AppendFrame(nil, uint16(k), sel[c][k])
		if err != nil {
			t.Error(err)
		}
		if lose[c][k] {
			e.Lost(uint16(k), nil)
		} else {
			e.Delivered(uint16(k))
		}
		return b
	}
	// Alone: every client on its own ring.
	want := make([][][]byte, clients)
	for c := range clients {
		r := NewRing(RingConfig{Size: 8, Predictor: pred})
		e := NewEncoder(r, EncoderConfig{})
		for k := range snaps {
			r.Push(&snaps[k])
			want[c] = append(want[c], run(r, e, c, k))
		}
	}
	// Together: one ring, every client's encoder on its own goroutine.
	r := NewRing(RingConfig{Size: 8, Predictor: pred})
	encs := make([]*Encoder, clients)
	for c := range encs {
		encs[c] = NewEncoder(r, EncoderConfig{})
	}
	for k := range snaps {
		r.Push(&snaps[k])
		got := make([][]byte, clients)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() { got[c] = run(r, encs[c], c, k) })
		}
		wg.Wait()
		for c := range clients {
			if !bytes.Equal(got[c], want[c][k]) {
				t.Fatalf("client %d, revision %d: the frame written beside the others differs from the one written alone", c, k+1)
			}
		}
	}
}

// TestPatchCodeLimit: the longest code of a record fits the room kept for it.
func TestPatchCodeLimit(t *testing.T) {
	for rs := 1; rs <= 64; rs++ {
		p := make([]byte, rs)
		for i := range p {
			p[i] = 0xff
		}
		if n := len(AppendPatch(nil, p)); n > maxCodeLen(rs) {
			t.Fatalf("record of %d bytes: code of %d bytes, room %d", rs, n, maxCodeLen(rs))
		}
	}
}

// TestCodeStats: encoders that share a Scratch, one after the other,
// on one ring: the first to size an entity against a baseline encodes
// its code into the ring's cache, the others acknowledged at the same
// revision read it from there (CodeStats counts which, exactly), and a
// client with another baseline encodes its own the first time. Sizing,
// writing and the acknowledgements allocate nothing, counting included.
func TestCodeStats(t *testing.T) {
	const clients, entities, rs = 6, 50, 12
	r := NewRing(RingConfig{Size: 8})
	var sc Scratch
	encs := make([]*Encoder, clients)
	for c := range encs {
		encs[c] = NewEncoder(r, EncoderConfig{})
		encs[c].UseScratch(&sc)
	}
	var snap Snapshot
	rec := make([]byte, rs)
	push := func(rev int) {
		snap.Reset(uint32(rev), rs)
		for i := range entities {
			rec[0], rec[1] = byte(i), byte(rev) // every entity changes
			snap.Append(proto.NetworkID(i+1), rec)
		}
		if _, err := r.Push(&snap); err != nil {
			t.Fatal(err)
		}
	}
	sel := make([]int32, entities)
	for i := range sel {
		sel[i] = int32(i)
	}
	buf := make([]byte, 0, 4096)
	var lost []proto.NetworkID
	var seq uint16
	ticks := 0
	// tick sends every entity to every client; the last client's
	// packets are lost but every fourth, so its baseline lags.
	tick := func() {
		defer func() { ticks++ }()
		for c, e := range encs {
			e.Prepare()
			prev := -1
			for _, i := range sel {
				e.BodySize(int(i))
				e.LinkSize(prev, int(i))
				prev = int(i)
			}
			var err error
			if buf, err = e.AppendFrame(buf[:0], seq, sel); err != nil {
				t.Fatal(err)
			}
			if c < clients-1 || ticks%4 == 0 {
				e.Delivered(seq)
			} else {
				lost, _ = e.Lost(seq, lost[:0])
			}
			seq++
		}
	}
	rev := 1
	for ; rev <= 16; rev++ { // every baseline settles, every ring slot is used

		push(rev)
		tick()
	}
	// Revision 17: the first five clients acknowledged revision 16,
	// the last revision 13 (its packet of revision 13 got through).
	before := sc.CodeStats()
	push(rev)
	rev++
	tick()
	got := sc.CodeStats()
	want := CodeStats{Shared: before.Shared + (clients-2)*entities, Encoded: before.Encoded + 2*entities, Private: before.Private}
	if got != want {
		t.Fatalf("revision 17: codes %+v, want %+v (one encoding per entity and baseline)", got, want)
	}
	if hr := (CodeStats{Shared: 4, Encoded: 1}).HitRate(); hr != 0.8 {
		t.Fatalf("hit rate of 4 shared, 1 encoded: %v", hr)
	}
	if a := testing.AllocsPerRun(100, func() {
		push(rev)
		rev++
		tick()
	}); a != 0 {
		t.Fatalf("push, size, write and acknowledge for %d clients: %v allocs per tick", clients, a)
	}
}
