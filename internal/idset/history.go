package idset

// HistoryLen is how many layout changes a History keeps.
const HistoryLen = 16

// History numbers a layout owner's layouts and keeps its last HistoryLen
// layout changes, so that per-client state a few changes behind (a client
// that got no packet for a few ticks, a packet's fate learned a few
// layouts after it was written) catches up through the owner's remaps.
// The zero value is layout 0 with no change held.
type History struct {
	layout  uint64
	remaps  [HistoryLen]Remap
	layouts [HistoryLen]uint64 // layouts[l % HistoryLen] == l while held
}

// Layout is the current layout's number.
func (h *History) Layout() uint64 { return h.layout }

// Next starts the next layout and returns the remap that takes the
// current one to it, for the owner to build (once, for every client).
func (h *History) Next() *Remap {
	h.layout++
	k := h.layout % HistoryLen
	h.layouts[k] = h.layout
	return &h.remaps[k]
}

// At returns the remap that took layout l−1 to l, while it is held.
func (h *History) At(l uint64) (*Remap, bool) {
	k := l % HistoryLen
	if l == 0 || h.layouts[k] != l {
		return nil, false
	}
	return &h.remaps[k], true
}

// Follow brings per-client state indexed by layout *at, of n entities,
// up to the current layout: it calls move with each change's remap in
// order and advances *at. It reports false, leaving *at at the last
// layout reached, when a change is no longer held or does not start
// from the state's length: the caller then rebuilds its state for the
// current layout.
func (h *History) Follow(at *uint64, n int, move func(*Remap)) bool {
	for *at != h.layout {
		m, ok := h.At(*at + 1)
		if !ok || m.OldLen != n {
			return false
		}
		move(m)
		n = m.NewLen
		*at++
	}
	return true
}
