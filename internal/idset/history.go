package idset

import (
	"slices"
	"unsafe"

	"github.com/tickwire/tickwire/proto"
)

// HistoryLen is how many layout changes a History keeps.
const HistoryLen = 16

// History numbers a layout owner's layouts and keeps its last HistoryLen
// layout changes, so that per-client state a few changes behind (a client
// that got no packet for a few ticks, a packet's fate learned a few
// layouts after it was written) catches up through the owner's remaps.
//
// It also gives every entity a slot: a small number the entity keeps for
// as long as it stays in the layout, whatever comes and goes around it
// (a slot freed by an entity that left is given to a later one, the
// last freed first). Per-client arrays over the entities are indexed by
// slot rather than by index: a layout change then touches only the
// slots it freed (Remap.Freed), where arrays by index would move every
// entry behind the change.
//
// The zero value is layout 0, with no entity and no change held.
type History struct {
	layout  uint64
	remaps  [HistoryLen]Remap
	layouts [HistoryLen]uint64 // layouts[l % HistoryLen] == l while held

	slots   []int32           // the current layout's index -> slot
	spare   []int32           // the previous layout's
	slotIDs []proto.NetworkID // slot -> the id holding it, 0 when free
	free    []int32           // free slots; the last one is taken first
}

// Layout is the current layout's number.
func (h *History) Layout() uint64 { return h.layout }

// Next starts the next layout, newIDs (strictly ascending), and returns
// the remap that takes the current one, oldIDs (the ids Next was last
// given, or none), to it, with its entities' slots assigned: built once
// by the owner, for every client to follow.
func (h *History) Next(oldIDs, newIDs []proto.NetworkID) *Remap {
	h.layout++
	k := h.layout % HistoryLen
	h.layouts[k] = h.layout
	m := &h.remaps[k]
	m.Build(oldIDs, newIDs)
	h.assign(m, newIDs)
	return m
}

// assign frees the slots of m's removed entities, keeps the kept ones'
// and gives the new ones free slots, in ascending index order.
func (h *History) assign(m *Remap, newIDs []proto.NetworkID) {
	m.Freed = m.Freed[:0]
	for _, o := range m.Removed {
		s := h.slots[o]
		m.Freed = append(m.Freed, s)
		h.slotIDs[s] = 0
		h.free = append(h.free, s)
	}
	next := slices.Grow(h.spare[:0], m.NewLen)[:m.NewLen]
	at := int32(0)
	for _, r := range m.Runs {
		h.take(next[at:r.New], newIDs[at:r.New])
		copy(next[r.New:r.New+r.N], h.slots[r.Old:r.Old+r.N])
		at = r.New + r.N
	}
	h.take(next[at:], newIDs[at:])
	h.spare, h.slots = h.slots, next
	m.Slots = len(h.slotIDs)
}

// take gives the new entities ids free slots, into dst.
func (h *History) take(dst []int32, ids []proto.NetworkID) {
	for i, id := range ids {
		var s int32
		if n := len(h.free); n > 0 {
			s, h.free = h.free[n-1], h.free[:n-1]
		} else {
			s = int32(len(h.slotIDs))
			h.slotIDs = append(h.slotIDs, 0)
		}
		h.slotIDs[s] = id
		dst[i] = s
	}
}

// Slots maps the current layout's indices to their entities' slots.
// Owned by the History, valid until the next Next.
func (h *History) Slots() []int32 { return h.slots }

// SlotCount is the number of slots, in use or free: per-slot state has
// this length (Remap.Slots after each change).
func (h *History) SlotCount() int { return len(h.slotIDs) }

// SlotID is the id whose entity holds slot s in the current layout, or 0
// when s is free or out of range.
func (h *History) SlotID(s int32) proto.NetworkID {
	if s < 0 || int(s) >= len(h.slotIDs) {
		return 0
	}
	return h.slotIDs[s]
}

// At returns the remap that took layout l−1 to l, while it is held.
func (h *History) At(l uint64) (*Remap, bool) {
	k := l % HistoryLen
	if l == 0 || h.layouts[k] != l {
		return nil, false
	}
	return &h.remaps[k], true
}

// Follow brings per-client state indexed by layout *at up to the current
// layout: it calls move with each change's remap in order and advances
// *at. It reports false, leaving *at at the last layout reached, when a
// change is no longer held: the caller then rebuilds its state for the
// current layout.
func (h *History) Follow(at *uint64, move func(*Remap)) bool {
	for *at != h.layout {
		m, ok := h.At(*at + 1)
		if !ok {
			return false
		}
		move(m)
		*at++
	}
	return true
}

// Grow returns per-slot state s grown to n entries (a History's
// SlotCount after a change: it never shrinks), the new ones zero.
func Grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	k := len(s)
	s = slices.Grow(s, n-k)[:n]
	clear(s[k:])
	return s
}

// Warm reads per-slot state s through once, in order, one byte per
// cache line, and returns their sum: store it (in the owner's own field,
// so that the reads are made and concurrent owners share nothing). A
// client's state (its priorities, its baselines) is cold by its next
// packet on a server that keeps a thousand clients', far more than a
// core's cache, and the packet then reads entries spread over most of
// its lines. Read in order first, the lines arrive together, where read
// at random each is a separate wait.
func Warm[T any](s []T) byte {
	if len(s) == 0 {
		return 0
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
	var x byte
	for k := 0; k < len(b); k += cacheLine {
		x += b[k]
	}
	return x
}

// cacheLine is the cache line size, in bytes, of the CPUs servers run
// on.
const cacheLine = 64
