package idset

import (
	"math/rand/v2"
	"testing"
)

func TestFlightsSize(t *testing.T) {
	for _, c := range []struct{ n, limit, want int }{
		{0, 1 << 16, DefaultFlights},
		{-3, 1 << 15, DefaultFlights},
		{1, 1 << 16, 1},
		{3, 1 << 16, 4},
		{256, 1 << 16, 256},
		{257, 1 << 16, 512},
		{40000, 1 << 16, 1 << 16},
		{40000, 1 << 15, 1 << 15},
		{1 << 40, 1 << 15, 1 << 15},
	} {
		f := NewFlights[int](c.n, c.limit)
		if f.Len() != c.want {
			t.Errorf("NewFlights(%d, %d): %d slots, want %d", c.n, c.limit, f.Len(), c.want)
		}
	}
}

// TestFlightsAgainstHistory checks Put and Take against the list of every
// put: a packet is remembered when it was put after any other packet of
// its slot and not taken since.
func TestFlightsAgainstHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	f := NewFlights[uint32](16, 1<<16)
	type put struct {
		seq   uint16
		rec   uint32
		taken bool
	}
	var puts []put
	var seq uint16
	for iter := uint32(0); iter < 20000; iter++ {
		switch rng.IntN(4) {
		case 0, 1:
			seq += uint16(1 + rng.IntN(3))
			*f.Put(seq) = iter
			puts = append(puts, put{seq: seq, rec: iter})
		case 2:
			q := seq - uint16(rng.IntN(40))
			want := -1
			for k := len(puts) - 1; k >= 0; k-- {
				if int(puts[k].seq)%16 == int(q)%16 {
					if puts[k].seq == q && !puts[k].taken {
						want = k
					}
					break
				}
			}
			rec, ok := f.Take(q)
			if ok != (want >= 0) {
				t.Fatalf("Take(%d): ok %v want %v", q, ok, want >= 0)
			}
			if ok {
				if *rec != puts[want].rec {
					t.Fatalf("Take(%d): record %d want %d", q, *rec, puts[want].rec)
				}
				puts[want].taken = true
			}
		case 3:
			if rng.IntN(50) == 0 {
				f.Clear()
				for k := range puts {
					puts[k].taken = true
				}
			}
		}
	}
}

func TestFlightsZeroAlloc(t *testing.T) {
	f := NewFlights[Span](256, 1<<16)
	var seq uint16
	if a := testing.AllocsPerRun(200, func() {
		f.Put(seq).n = 3
		f.Take(seq - 5)
		seq++
	}); a != 0 {
		t.Fatalf("Put and Take: %v allocs", a)
	}
}

// Forgot: a packet at least the slot count older than the newest put is
// forgotten; newer ones, or packets never put, are not; the sequence
// wraps.
func TestFlightsForgot(t *testing.T) {
	f := NewFlights[int](16, 1<<10)
	if f.Forgot(0) || f.Forgot(40000) {
		t.Fatal("forgot a packet before any was put")
	}
	f.Put(65530) // the newest reaches across the wrap below
	for _, c := range []struct {
		seq  uint16
		want bool
	}{{65530, false}, {65515, false}, {65514, true}, {40000, true}, {65535, false}, {3, false}} {
		if got := f.Forgot(c.seq); got != c.want {
			t.Errorf("newest 65530: Forgot(%d) = %v, want %v", c.seq, got, c.want)
		}
	}
	f.Put(4) // past the wrap: 65530 and 65525 now lie 10 and 15 back
	for _, c := range []struct {
		seq  uint16
		want bool
	}{{65525, false}, {65524, true}, {4, false}, {10, false}} {
		if got := f.Forgot(c.seq); got != c.want {
			t.Errorf("newest 4: Forgot(%d) = %v, want %v", c.seq, got, c.want)
		}
	}
}
