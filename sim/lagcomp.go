package sim

import (
	"math"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// BodyHistory is a ring of per-tick body sets: the server's lag
// compensation history and the client's record of what it rendered from.
type BodyHistory struct {
	slots []histSlot
}

type histSlot struct {
	tick   uint32
	valid  bool
	bodies []Body
}

// NewBodyHistory keeps the last ticks body sets.
func NewBodyHistory(ticks int) *BodyHistory {
	return &BodyHistory{slots: make([]histSlot, max(ticks, 2))}
}

// Len is the number of ticks the history keeps.
func (h *BodyHistory) Len() int { return len(h.slots) }

// Put returns the (emptied) slice to fill for tick; store the filled
// slice with Set. Older ticks in the same ring slot are evicted.
func (h *BodyHistory) Put(tick uint32) []Body {
	s := &h.slots[int(tick%uint32(len(h.slots)))]
	s.valid = false
	return s.bodies[:0]
}

// Set stores the bodies for tick (normally the slice Put returned).
func (h *BodyHistory) Set(tick uint32, bodies []Body) {
	s := &h.slots[int(tick%uint32(len(h.slots)))]
	s.tick, s.valid, s.bodies = tick, true, bodies
}

// Get returns the bodies recorded for tick.
func (h *BodyHistory) Get(tick uint32) ([]Body, bool) {
	s := &h.slots[int(tick%uint32(len(h.slots)))]
	if !s.valid || s.tick != tick {
		return nil, false
	}
	return s.bodies, true
}

// Reset forgets every tick.
func (h *BodyHistory) Reset() {
	for i := range h.slots {
		h.slots[i].valid = false
	}
}

// RewindInfo describes the world Tick.Rewind rebuilt.
type RewindInfo struct {
	// Requested is the view the client named for this input.
	Requested View
	// Used is the view actually rebuilt (equal to Requested unless
	// Clamped).
	Used View
	// Rewind is how far behind the input's arrival the rendered moment
	// was: the player's round trip plus its interpolation delay.
	Rewind time.Duration
	// Clamped is set when the requested view was further back than
	// MaxRewind (or outside the history, or in the future) and the policy
	// was applied.
	Clamped bool
	// Unknown is set when there is no view for this input (it was
	// missing): Used is the newest state, no compensation.
	Unknown bool
}

// viewTime is a view's rendered moment in (fractional) ticks.
func viewTime(v View) float64 {
	return float64(v.From) + float64(int32(v.To-v.From))*float64(v.Blend)/proto.BlendOne
}

// viewAt is the view of the rendered moment t (in ticks) between two
// consecutive ticks.
func viewAt(t float64) View {
	f := math.Floor(t)
	from := uint32(int64(f))
	return View{From: from, To: from + 1, Blend: proto.BlendFromFloat(t - f)}
}

// clampView applies the lag compensation policy for an input simulated at
// tick (the history holds ticks up to tick-1), which arrived at recvTick
// (fractional server tick at arrival).
//
// Policy: a view is used exactly as the client named it when both of its
// ticks are in the history, To is not in the future, and the rendered
// moment is at most maxRewind before the input's arrival. Otherwise the
// rendered moment is clamped into the allowed window (no older than
// arrival - maxRewind, no older than the history, no newer than tick-1)
// and rebuilt between the two ticks around it. The game sees Clamped and
// may treat such shots as it likes (the default arena test game still
// judges them against the clamped world: a high-ping player has to lead
// its targets by the excess, as the seed suggests, instead of the server
// trusting an arbitrarily old view).
func clampView(v View, tick uint32, recvTick float64, maxRewind float64, oldest uint32) (View, bool) {
	newest := tick - 1
	rendered := viewTime(v)
	lo := math.Max(recvTick-maxRewind, float64(oldest))
	hi := float64(newest)
	ok := int32(v.To-v.From) >= 0 &&
		int32(v.From-oldest) >= 0 && int32(newest-v.To) >= 0 &&
		rendered >= recvTick-maxRewind-1e-9
	if ok {
		return v, false
	}
	t := math.Min(math.Max(rendered, lo), hi)
	if math.IsNaN(t) {
		t = hi
	}
	c := viewAt(t)
	if int32(c.To-newest) > 0 {
		c = View{From: newest, To: newest}
	}
	return c, true
}
