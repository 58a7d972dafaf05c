package idset

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// TestLogAgainstHistory checks the log against every id ever appended: a
// valid record reads back its ids, a record stays valid while fewer ids
// than 8 of the largest records (at least minLog) were appended after it,
// and it goes stale within twice that.
func TestLogAgainstHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var l Log
	var hist []proto.NetworkID // hist[p] is the id appended at position p
	type rec struct {
		s     Span
		start int
	}
	var recs []rec
	maxN := 0
	for iter := 0; iter < 3000; iter++ {
		n := rng.IntN(64)
		if rng.IntN(200) == 0 {
			n = rng.IntN(3000) // grows the log
		}
		maxN = max(maxN, n)
		s := l.Begin(n)
		start := len(hist)
		for range rng.IntN(n + 1) {
			id := proto.NetworkID(rng.Uint32())
			l.Append(&s, id)
			hist = append(hist, id)
		}
		if s.Len() != len(hist)-start {
			t.Fatalf("span of %d ids has Len %d", len(hist)-start, s.Len())
		}
		recs = append(recs, rec{s, start})
		keeps := max(minLog, 8*maxN)
		for _, r := range recs[max(0, len(recs)-300):] {
			since := len(hist) - r.start
			valid := l.Valid(r.s)
			if since <= keeps && !valid {
				t.Fatalf("record %d ids back stale (keeps %d)", since, keeps)
			}
			if since > 2*keeps && valid {
				t.Fatalf("record %d ids back still valid (keeps %d)", since, keeps)
			}
			if !valid {
				continue
			}
			for k := 0; k < r.s.Len(); k++ {
				if got, want := l.At(r.s, k), hist[r.start+k]; got != want {
					t.Fatalf("record at %d, id %d: %d want %d", r.start, k, got, want)
				}
			}
		}
	}
}

func TestLogZeroAlloc(t *testing.T) {
	var l Log
	l.Begin(100)
	a := testing.AllocsPerRun(200, func() {
		s := l.Begin(100)
		for id := range proto.NetworkID(100) {
			l.Append(&s, id)
		}
	})
	if a != 0 {
		t.Fatalf("Begin and Append: %v allocs", a)
	}
}

func TestLogZeroValue(t *testing.T) {
	var l Log
	if l.Valid(Span{}) {
		t.Fatal("empty log holds a record")
	}
}
