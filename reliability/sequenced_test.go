package reliability

import (
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// TestSequencedNeverOlder sends sequenced messages on several channels
// through shuffling, loss and duplication, far past the 16-bit wrap, and
// checks that no delivered message is older than one delivered before it
// on its channel (by the sender's true 64-bit count).
func TestSequencedNeverOlder(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	var s Sequencer
	var f SequenceFilter
	type msg struct {
		ch    uint8
		seq   uint16
		count uint64
	}
	var counts [4]uint64
	var lastDelivered [4]uint64
	var any [4]bool
	delivered := 0
	var window []msg
	for range 400000 {
		ch := uint8(rng.IntN(4))
		counts[ch]++
		window = append(window, msg{ch, s.Next(ch), counts[ch]})
		if rng.Float64() < 0.05 {
			window = append(window, window[len(window)-1]) // duplicate
		}
		// Deliver a random message from a reorder window of ~16.
		for len(window) > 16 || (len(window) > 0 && rng.IntN(2) == 0) {
			i := rng.IntN(len(window))
			m := window[i]
			window = append(window[:i], window[i+1:]...)
			if rng.Float64() < 0.2 {
				continue // lost
			}
			if f.Accept(m.ch, m.seq) {
				if any[m.ch] && m.count <= lastDelivered[m.ch] {
					t.Fatalf("channel %d: delivered message %d after %d", m.ch, m.count, lastDelivered[m.ch])
				}
				lastDelivered[m.ch], any[m.ch] = m.count, true
				delivered++
			}
		}
	}
	if counts[0] < 3*seqSpace/2 {
		t.Fatalf("only %d messages per channel: no wrap", counts[0])
	}
	if delivered < 200000 || f.Dropped() == 0 {
		t.Fatalf("delivered %d, dropped %d", delivered, f.Dropped())
	}
}

func TestSequencedFrames(t *testing.T) {
	var s Sequencer
	var f SequenceFilter
	a := proto.MessageFrame{Channel: 1, Data: []byte("a")}
	b := proto.MessageFrame{Channel: 1, Data: []byte("b")}
	other := proto.MessageFrame{Channel: 2, Data: []byte("c"), Postmarked: true, Tick: 77}
	s.Stamp(&a)
	s.Stamp(&b)
	s.Stamp(&other)
	if !a.Sequenced || a.Seq != 0 || b.Seq != 1 || other.Seq != 0 || !other.Postmarked || other.Tick != 77 {
		t.Fatalf("%+v %+v %+v", a, b, other)
	}
	if !f.AcceptFrame(&b) || f.AcceptFrame(&a) || f.AcceptFrame(&b) || !f.AcceptFrame(&other) {
		t.Fatal("filter order")
	}
	plain := proto.MessageFrame{Channel: 1}
	for range 2 {
		if !f.AcceptFrame(&plain) {
			t.Fatal("unsequenced messages always pass")
		}
	}
	// The first message on a channel passes whatever its number.
	if !f.Accept(9, 40000) || f.Accept(9, 40000) || !f.Accept(9, 40001) {
		t.Fatal("first message")
	}
}

func TestSequencedZeroAlloc(t *testing.T) {
	var s Sequencer
	var f SequenceFilter
	m := proto.MessageFrame{Channel: 3}
	if n := testing.AllocsPerRun(1000, func() {
		s.Stamp(&m)
		f.AcceptFrame(&m)
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

func BenchmarkSequenceFilter(b *testing.B) {
	var f SequenceFilter
	var seq uint16
	b.ReportAllocs()
	for b.Loop() {
		f.Accept(uint8(seq), seq>>3)
		seq++
	}
}
