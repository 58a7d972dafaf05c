package netem

import (
	"fmt"
	"math/bits"
	"time"
)

// Stats counts what one direction's impairment did.
type Stats struct {
	Offered    uint64 // datagrams offered (duplicates not counted)
	Forwarded  uint64 // datagrams that left the queue (duplicates counted)
	Bytes      uint64 // their payload bytes
	Dropped    uint64 // lost to the loss model
	Overlimit  uint64 // dropped because Limit datagrams were queued
	Duplicated uint64 // extra copies made
	Reordered  uint64 // sent ahead of the queue
	Corrupted  uint64 // had a bit flipped
	Queued     int    // in the queue now
	// Undeliverable counts datagrams released but not handed on: the
	// wrapped conn's write failed (egress) or the read queue was full
	// (ingress). Only a Conn counts these.
	Undeliverable uint64
	// The delay forwarded datagrams had, from offer to leaving the
	// queue. P99 is from a log-scale histogram (within 1.6 %).
	DelayMean, DelayP99, DelayMax time.Duration
}

func (s Stats) String() string {
	return fmt.Sprintf("offered=%d forwarded=%d dropped=%d overlimit=%d duplicated=%d reordered=%d corrupted=%d queued=%d undeliverable=%d delay mean=%v p99=%v max=%v",
		s.Offered, s.Forwarded, s.Dropped, s.Overlimit, s.Duplicated, s.Reordered, s.Corrupted, s.Queued, s.Undeliverable,
		s.DelayMean.Round(time.Microsecond), s.DelayP99.Round(time.Microsecond), s.DelayMax.Round(time.Microsecond))
}

// histogram buckets: values below 64 ns exactly, then 32 buckets per
// power of two.
const (
	histLinear = 64
	histSub    = 32
	histSize   = histLinear + 58*histSub
)

type statsCounter struct {
	offered, forwarded, bytes, dropped, overlimit uint64
	duplicated, reordered, corrupted              uint64
	delaySum                                      float64
	delayMin, delayMax                            time.Duration
	hist                                          [histSize]uint64
}

func (s *statsCounter) forward(delay time.Duration, n int) {
	delay = max(delay, 0)
	s.forwarded++
	s.bytes += uint64(n)
	s.delaySum += float64(delay)
	if s.forwarded == 1 || delay < s.delayMin {
		s.delayMin = delay
	}
	s.delayMax = max(s.delayMax, delay)
	s.hist[histIndex(uint64(delay))]++
}

func histIndex(v uint64) int {
	if v < histLinear {
		return int(v)
	}
	e := bits.Len64(v) - 6 // >= 1
	m := v >> e            // 32..63
	return histLinear + (e-1)*histSub + int(m-histSub)
}

// histValue is the middle of bucket i.
func histValue(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	e := (i-histLinear)/histSub + 1
	m := uint64((i-histLinear)%histSub + histSub)
	return m<<e + (1<<e)/2
}

func (s *statsCounter) snapshot() Stats {
	out := Stats{
		Offered: s.offered, Forwarded: s.forwarded, Bytes: s.bytes, Dropped: s.dropped,
		Overlimit: s.overlimit, Duplicated: s.duplicated, Reordered: s.reordered,
		Corrupted: s.corrupted, DelayMax: s.delayMax,
	}
	if s.forwarded == 0 {
		return out
	}
	out.DelayMean = time.Duration(s.delaySum / float64(s.forwarded))
	rank := (s.forwarded*99 + 99) / 100 // ceil(0.99·n)
	var seen uint64
	for i, c := range s.hist {
		if seen += c; seen >= rank {
			out.DelayP99 = max(s.delayMin, min(time.Duration(histValue(i)), s.delayMax))
			break
		}
	}
	return out
}
