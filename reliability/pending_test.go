package reliability

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSegmentQueueAgainstModel pushes and takes random segments and
// checks the queue against a list of them: the same segments in the same
// order, the oldest dropped beyond the bound, positions that find their
// segment, and a buffer that starts small and never passes the bound.
func TestSegmentQueueAgainstModel(t *testing.T) {
	const mtu = 1200
	rng := rand.New(rand.NewPCG(3, 3))
	for _, window := range []int{4, 64} {
		q := newSegmentQueue((window+1)*mtu, mtu)
		var model [][]byte // the live segments, oldest first
		var pos []int64    // their positions
		var dropped uint64
		sn := uint32(0)
		for step := 0; step < 20000; step++ {
			if rng.IntN(3) > 0 {
				seg := appendSegment(nil, &segment{SN: sn, Data: bytes.Repeat([]byte{byte(sn)}, rng.IntN(mtu-segOverhead+1))})
				sn++
				live := 0
				for _, s := range model {
					live += len(s)
				}
				for len(model) > 0 && live+len(seg) > q.max {
					live -= len(model[0])
					model, pos = model[1:], pos[1:]
					dropped++
				}
				model, pos = append(model, seg), append(pos, q.push(seg))
			} else {
				room := rng.IntN(3 * mtu)
				got := q.take(nil, room)
				var want []byte
				for len(model) > 0 && len(want)+len(model[0]) <= room {
					want = append(want, model[0]...)
					model, pos = model[1:], pos[1:]
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("window %d, step %d: took %d bytes, want %d", window, step, len(got), len(want))
				}
			}
			if q.dropped != dropped {
				t.Fatalf("window %d, step %d: %d dropped, want %d", window, step, q.dropped, dropped)
			}
			for k, p := range pos {
				if p < q.headPos() || !bytes.Equal(q.at(p)[:len(model[k])], model[k]) {
					t.Fatalf("window %d, step %d: segment %d not at its position", window, step, k)
				}
			}
			if cap(q.buf) > q.limit {
				t.Fatalf("window %d: buffer of %d bytes, bound %d", window, cap(q.buf), q.limit)
			}
		}
		if dropped == 0 && window == 4 {
			t.Fatal("the small window dropped nothing: the bound is not tested")
		}
	}
}

// TestSegmentQueueStartsSmall: a connection's queues hold a few segments
// at a time, and their buffers stay that size, not the window's bound.
func TestSegmentQueueStartsSmall(t *testing.T) {
	r, err := NewReliable(1, ReliableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cap(r.data.buf) + cap(r.ctrl.buf); c != 0 {
		t.Fatalf("a new connection's queues hold %d bytes", c)
	}
	q := newSegmentQueue((DefaultReliableWindow+1)*1200, 1200)
	seg := appendSegment(nil, &segment{Data: make([]byte, 100)})
	for range 1000 {
		q.push(seg)
		q.take(nil, 1200)
	}
	if cap(q.buf) > minQueueBuf {
		t.Fatalf("a queue drained by every packet grew to %d bytes", cap(q.buf))
	}
}
