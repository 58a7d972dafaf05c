package sim

import (
	"time"

	"github.com/tickwire/tickwire/proto"
)

// View names the interpolated world a client was rendering when it
// sampled an input: between the snapshots of ticks From and To at Blend
// (fixed point, proto.BlendOne = To). It travels in the packet header
// (InterpFrom, InterpTo, Blend).
type View struct {
	From, To uint32
	Blend    uint16
}

// ViewFromHeader returns the view a client packet's header names.
func ViewFromHeader(h *proto.Header) View {
	return View{From: h.InterpFrom, To: h.InterpTo, Blend: h.Blend}
}

// shift moves the view back by d ticks.
func (v View) shift(d uint32) View { return View{From: v.From - d, To: v.To - d, Blend: v.Blend} }

const (
	slotEmpty    = 0
	slotReceived = 1 // arrived, not simulated yet
	slotUsed     = 2 // simulated with this input
	slotMissing  = 3 // simulated without it (repeated the last input)
	slotLate     = 4 // simulated without it, then it arrived (counted once)
)

type inputSlot struct {
	tick    uint32
	state   uint8
	arrived time.Time
	view    View
}

// InputBuffer is one player's server-side input buffer: a ring indexed by
// tick holding inputs that arrived before their tick was simulated.
type InputBuffer struct {
	size        int
	actionBytes int
	mask        uint32
	slots       []inputSlot
	data        []byte
	last        []byte
	newest      uint32
	hasNewest   bool

	// Received counts inputs stored for a future tick.
	Received uint64
	// Duplicates counts redundant copies of inputs already stored.
	Duplicates uint64
	// Stale counts copies of inputs for ticks already simulated (dropped;
	// normal with redundant sending).
	Stale uint64
	// Late counts inputs that arrived after their tick had been simulated
	// without them (dropped; the last input was repeated). Each tick
	// counts once.
	Late uint64
	// TooEarly counts inputs further ahead than the ring holds (dropped).
	TooEarly uint64
	// Missing counts ticks simulated without this player's input.
	Missing uint64
}

// NewInputBuffer returns a buffer for ticks up to ticks-1 ahead of the
// last simulated tick (ticks is rounded up to a power of two).
func NewInputBuffer(ticks, inputSize, actionBytes int) *InputBuffer {
	n := 1
	for n < ticks {
		n <<= 1
	}
	return &InputBuffer{
		size: inputSize, actionBytes: actionBytes, mask: uint32(n - 1),
		slots: make([]inputSlot, n), data: make([]byte, n*inputSize), last: make([]byte, inputSize),
	}
}

// Reset empties the buffer (for reuse by a new player).
func (b *InputBuffer) Reset() {
	clear(b.slots)
	clear(b.last)
	b.hasNewest = false
	b.Received, b.Duplicates, b.Stale, b.Late, b.TooEarly, b.Missing = 0, 0, 0, 0, 0, 0
}

// Newest is the newest input tick received, simulated or held (ok false
// before any); inputs dropped as too early do not count.
func (b *InputBuffer) Newest() (tick uint32, ok bool) { return b.newest, b.hasNewest }

// Put stores the input for tick that arrived at now, given the last tick
// the server has simulated. view is what the client rendered for it. It
// reports late when this is the first copy of an input whose tick was
// simulated without it (counted in Late).
func (b *InputBuffer) Put(now time.Time, tick, simulated uint32, input []byte, view View) (late bool) {
	d := int32(tick - simulated)
	if d > int32(b.mask) {
		b.TooEarly++ // not held: Newest must not claim it
		return false
	}
	if !b.hasNewest || int32(tick-b.newest) > 0 {
		b.newest, b.hasNewest = tick, true
	}
	s := &b.slots[tick&b.mask]
	switch {
	case d <= 0:
		if s.tick == tick && s.state == slotMissing {
			s.state = slotLate
			b.Late++
			return true
		}
		b.Stale++
		return false
	case s.tick == tick && s.state == slotReceived:
		b.Duplicates++
		return false
	}
	*s = inputSlot{tick: tick, state: slotReceived, arrived: now, view: view}
	i := int(tick&b.mask) * b.size
	copy(b.data[i:i+b.size], input)
	b.Received++
	return false
}

// Taken is the input Take hands to the simulation.
type Taken struct {
	// Data aliases the buffer until the next Take.
	Data    []byte
	Missing bool
	// Age is how long the input sat in the buffer (scheduled time of the
	// tick - arrival) in proto units (100 µs), or proto.InputAgeMissing.
	Age     int16
	View    View
	Arrived time.Time
}

// Take returns the input for tick, which is being simulated now and was
// scheduled at sched. A missing input repeats the last one with its
// action bytes zeroed.
func (b *InputBuffer) Take(tick uint32, sched time.Time) Taken {
	s := &b.slots[tick&b.mask]
	if s.tick == tick && s.state == slotReceived {
		s.state = slotUsed
		i := int(tick&b.mask) * b.size
		copy(b.last, b.data[i:i+b.size])
		return Taken{Data: b.last, Age: ageUnits(sched.Sub(s.arrived)), View: s.view, Arrived: s.arrived}
	}
	*s = inputSlot{tick: tick, state: slotMissing}
	b.Missing++
	clear(b.last[b.size-b.actionBytes:])
	return Taken{Data: b.last, Missing: true, Age: proto.InputAgeMissing}
}

// ageUnits converts a duration to the InputAckFrame age unit (100 µs),
// clamped to the int16 range without hitting InputAgeMissing.
func ageUnits(d time.Duration) int16 {
	u := d / (100 * time.Microsecond)
	switch {
	case u > 32767:
		return 32767
	case u < -32767:
		return -32767
	}
	return int16(u)
}

// AgeDuration converts an InputAckFrame age to a duration (ok false for
// proto.InputAgeMissing).
func AgeDuration(age int16) (time.Duration, bool) {
	if age == proto.InputAgeMissing {
		return 0, false
	}
	return time.Duration(age) * 100 * time.Microsecond, true
}
