package sim

import "time"

// TickClock is the server's fixed-rate clock: it says which ticks are
// due. Tick N is due at origin + (N-first)×Period and the pace never
// changes: a server that falls behind runs the due ticks back to back (at
// most MaxCatchUp per Due call) rather than stretching them. Only when it falls more than
// MaxBehind behind (a stalled process, a debugger) does it give up on the
// backlog: the schedule is re-anchored so that the next tick is due now,
// tick numbers stay contiguous, and Reanchors counts the event. Clients
// see that as their inputs suddenly arriving early and relax their lead.
type TickClock struct {
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
func (c *TickClock) Start(now time.Time, first uint32) {
	c.origin, c.base, c.next, c.started = now, first, first, true
}

// Next is the next tick to run.
func (c *TickClock) Next() uint32 { return c.next }

// TimeOf is the scheduled time of tick t (within 2^31 ticks of Next).
func (c *TickClock) TimeOf(t uint32) time.Time {
	return c.origin.Add(time.Duration(int64(int32(t-c.base))) * c.Period)
}

// TickAt is the (fractional) tick the schedule is at at time now:
// TimeOf(TickAt(now)) == now.
func (c *TickClock) TickAt(now time.Time) float64 {
	return float64(c.base) + float64(now.Sub(c.origin))/float64(c.Period)
}

// Due returns how many ticks are due at now (0..MaxCatchUp), re-anchoring
// first if the backlog exceeds MaxBehind.
func (c *TickClock) Due(now time.Time) int {
	if !c.started {
		return 0
	}
	late := now.Sub(c.TimeOf(c.next))
	if late < 0 {
		return 0
	}
	maxBehind := c.MaxBehind
	if maxBehind <= 0 {
		maxBehind = 250 * time.Millisecond
	}
	if late > maxBehind {
		c.origin, c.base = now, c.next
		c.Reanchors++
		late = 0
	}
	n := int(late/c.Period) + 1
	catch := c.MaxCatchUp
	if catch <= 0 {
		catch = 4
	}
	return min(n, catch)
}

// Ran records that tick Next was simulated.
func (c *TickClock) Ran() {
	c.next++
	if c.next-c.base >= reanchorSpan {
		c.origin = c.origin.Add(reanchorSpan * c.Period)
		c.base += reanchorSpan
	}
}
