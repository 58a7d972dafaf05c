package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestInputBufferTake(t *testing.T) {
	b := NewInputBuffer(8, 4, 2)
	in5 := []byte{1, 2, 3, 4}
	sched5 := t0.Add(10 * time.Millisecond)

	// Arrived 3.5 ms before its tick was due: age +35 units.
	b.Put(sched5.Add(-3500*time.Microsecond), 5, 4, in5, View{From: 2, To: 3, Blend: 7})
	b.Put(sched5.Add(-time.Millisecond), 5, 4, []byte{9, 9, 9, 9}, View{}) // redundant copy
	if b.Received != 1 || b.Duplicates != 1 {
		t.Fatalf("received %d duplicates %d, want 1 1", b.Received, b.Duplicates)
	}
	got := b.Take(5, sched5)
	if got.Missing || !bytes.Equal(got.Data, in5) || got.Age != 35 || got.View != (View{From: 2, To: 3, Blend: 7}) {
		t.Fatalf("take 5: %+v", got)
	}

	// Tick 6 never arrives: the last input repeats with its action bytes
	// zeroed, flagged missing.
	got = b.Take(6, sched5.Add(time.Second/60))
	if !got.Missing || got.Age != proto.InputAgeMissing || !bytes.Equal(got.Data, []byte{1, 2, 0, 0}) || b.Missing != 1 {
		t.Fatalf("take 6 (missing): %+v, missing %d", got, b.Missing)
	}
	if _, ok := AgeDuration(got.Age); ok {
		t.Fatal("AgeDuration accepted InputAgeMissing")
	}

	// Its input arrives after the tick was simulated: dropped, counted
	// late once; further copies count as stale.
	b.Put(sched5.Add(time.Second), 6, 6, []byte{5, 5, 5, 5}, View{})
	b.Put(sched5.Add(time.Second), 6, 6, []byte{5, 5, 5, 5}, View{})
	// A copy of tick 5 (simulated with its input) is stale, not late.
	b.Put(sched5.Add(time.Second), 5, 6, in5, View{})
	if b.Late != 1 || b.Stale != 2 || b.Received != 1 {
		t.Fatalf("late %d stale %d received %d, want 1 2 1", b.Late, b.Stale, b.Received)
	}

	// Arriving after its scheduled time but before it was simulated (the
	// server runs late): negative age.
	sched7 := sched5.Add(2 * time.Second / 60)
	b.Put(sched7.Add(2*time.Millisecond), 7, 6, []byte{7, 7, 7, 7}, View{})
	if got = b.Take(7, sched7); got.Missing || got.Age != -20 {
		t.Fatalf("take 7 (arrived 2 ms after its time): %+v", got)
	}
	if d, ok := AgeDuration(got.Age); !ok || d != -2*time.Millisecond {
		t.Fatalf("AgeDuration(%d) = %v %v", got.Age, d, ok)
	}

	// Further ahead than the ring holds (8 ticks): dropped.
	b.Put(t0, 7+8, 7, in5, View{})
	b.Put(t0, 7+7, 7, in5, View{})
	if b.TooEarly != 1 || b.Received != 3 {
		t.Fatalf("too early %d received %d, want 1 3", b.TooEarly, b.Received)
	}
	if n, ok := b.Newest(); !ok || n != 14 {
		t.Fatalf("newest %d %v, want 14", n, ok)
	}
}

func TestInputBufferMissingBeforeFirstInput(t *testing.T) {
	b := NewInputBuffer(4, 3, 1)
	got := b.Take(1, t0)
	if !got.Missing || !bytes.Equal(got.Data, []byte{0, 0, 0}) {
		t.Fatalf("take before any input: %+v", got)
	}
	if _, ok := b.Newest(); ok {
		t.Fatal("Newest ok before any input")
	}
}
