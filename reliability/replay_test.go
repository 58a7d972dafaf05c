package reliability

import (
	"math/rand/v2"
	"testing"
)

// replayModel is the slow reference: a set and the rule, spelled out.
type replayModel struct {
	seen    map[uint64]bool
	largest uint64
	any     bool
}

func (m *replayModel) fresh(pn uint64) bool {
	if !m.any || pn > m.largest {
		return true
	}
	return m.largest-pn < ReplayWindowSize && !m.seen[pn]
}

func TestReplayWindowModel(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		var w ReplayWindow
		m := replayModel{seen: map[uint64]bool{}}
		pn := rng.Uint64() >> 8
		for i := range 20000 {
			// Mostly forward, some repeats, some old, some big jumps.
			switch r := rng.IntN(100); {
			case r < 60:
				pn += uint64(rng.IntN(4))
			case r < 80:
				pn -= uint64(rng.IntN(1200))
			case r < 95:
				pn -= uint64(rng.IntN(3))
			default:
				pn += uint64(rng.IntN(5000))
			}
			want := m.fresh(pn)
			if got := w.Fresh(pn); got != want {
				t.Fatalf("seed %d step %d: Fresh(%d) = %v, model %v (largest %d)", seed, i, pn, got, want, m.largest)
			}
			if got := w.Mark(pn); got != want {
				t.Fatalf("seed %d step %d: Mark(%d) = %v, model %v", seed, i, pn, got, want)
			}
			if want {
				m.seen[pn] = true
				if !m.any || pn > m.largest {
					m.largest = pn
				}
				m.any = true
			}
			// Has agrees for a few values near the edge.
			for _, q := range []uint64{m.largest, m.largest - 1, m.largest - ReplayWindowSize + 1, m.largest - ReplayWindowSize, pn} {
				want := m.seen[q] && q <= m.largest && m.largest-q < ReplayWindowSize
				if got := w.Has(q); got != want {
					t.Fatalf("seed %d step %d: Has(%d) = %v, model %v (largest %d)", seed, i, q, got, want, m.largest)
				}
			}
		}
	}
}

func TestReplayWindowAckBits(t *testing.T) {
	var w ReplayWindow
	for _, pn := range []uint64{10, 9, 7, 3, 40} {
		w.Mark(pn)
	}
	// largest 40: bit i set when 40-1-i was marked: 10 -> i=29, 9 -> 30, 7 -> 32 (outside).
	want := uint32(1<<29 | 1<<30)
	if got := w.ackBits(); got != want {
		t.Fatalf("ackBits = %032b, want %032b", got, want)
	}
	var empty ReplayWindow
	if empty.ackBits() != 0 || !empty.Fresh(0) || empty.Has(0) {
		t.Fatal("empty window")
	}
}

func TestReplayWindowZeroAlloc(t *testing.T) {
	var w ReplayWindow
	pn := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		if w.Fresh(pn) {
			w.Mark(pn)
		}
		w.Fresh(pn - 5)
		pn += 3
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

func BenchmarkReplayWindow(b *testing.B) {
	var w ReplayWindow
	pn := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		if w.Fresh(pn) {
			w.Mark(pn)
		}
		pn++
	}
}
