package sim

import "time"

// Scheduler is the server's fixed-rate tick clock. Tick N is due at
// origin + (N-first)×Period and the pace never changes: a server that
// falls behind runs the due ticks back to back (at most MaxCatchUp per
// Due call) rather than stretching them. Only when it falls more than
// MaxBehind behind (a stalled process, a debugger) does it give up on the
// backlog: the schedule is re-anchored so that the next tick is due now,
// tick numbers stay contiguous, and Reanchors counts the event. Clients
// see that as their inputs suddenly arriving early and relax their lead.
type Scheduler struct {
	// Period is the fixed step.
	Period time.Duration
	// MaxCatchUp bounds how many ticks one Due call reports (0: 4).
	MaxCatchUp int
	// MaxBehind is the backlog beyond which the schedule is re-anchored
	// (0: 250 ms).
	MaxBehind time.Duration

	origin    time.Time // due time of tick base
	base      uint32
	next      uint32
	started   bool
	Reanchors uint64
}

const reanchorSpan = 1 << 24

// Start anchors the schedule: tick first is due at now.
func (s *Scheduler) Start(now time.Time, first uint32) {
	s.origin, s.base, s.next, s.started = now, first, first, true
}

// Next is the next tick to run.
func (s *Scheduler) Next() uint32 { return s.next }

// TimeOf is the scheduled time of tick t (within 2^31 ticks of Next).
func (s *Scheduler) TimeOf(t uint32) time.Time {
	return s.origin.Add(time.Duration(int64(int32(t-s.base))) * s.Period)
}

// TickAt is the (fractional) tick the schedule is at at time now:
// TimeOf(TickAt(now)) == now.
func (s *Scheduler) TickAt(now time.Time) float64 {
	return float64(s.base) + float64(now.Sub(s.origin))/float64(s.Period)
}

// Due returns how many ticks are due at now (0..MaxCatchUp), re-anchoring
// first if the backlog exceeds MaxBehind.
func (s *Scheduler) Due(now time.Time) int {
	if !s.started {
		return 0
	}
	late := now.Sub(s.TimeOf(s.next))
	if late < 0 {
		return 0
	}
	maxBehind := s.MaxBehind
	if maxBehind <= 0 {
		maxBehind = 250 * time.Millisecond
	}
	if late > maxBehind {
		s.origin, s.base = now, s.next
		s.Reanchors++
		late = 0
	}
	n := int(late/s.Period) + 1
	catch := s.MaxCatchUp
	if catch <= 0 {
		catch = 4
	}
	return min(n, catch)
}

// Ran records that tick Next was simulated.
func (s *Scheduler) Ran() {
	s.next++
	if s.next-s.base >= reanchorSpan {
		s.origin = s.origin.Add(reanchorSpan * s.Period)
		s.base += reanchorSpan
	}
}
