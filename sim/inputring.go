package sim

// inputRing holds the client's sampled inputs by tick: every local
// player's input and the view the client rendered when it sampled them.
// It is what input frames repeat and what re-simulation replays.
type inputRing struct {
	size    int // bytes per input
	players int
	mask    uint32
	slots   []ringSlot
	data    []byte // slots × players × size
}

type ringSlot struct {
	tick  uint32
	valid bool
	sent  bool // has gone out in an input frame (its view is final)
	view  View
}

func newInputRing(ticks, players, size int) inputRing {
	return inputRing{
		size: size, players: players, mask: uint32(ticks - 1),
		slots: make([]ringSlot, ticks), data: make([]byte, ticks*players*size),
	}
}

// slot returns tick's slot if the ring holds tick.
func (r *inputRing) slot(tick uint32) *ringSlot {
	s := &r.slots[tick&r.mask]
	if !s.valid || s.tick != tick {
		return nil
	}
	return s
}

// put claims tick's slot (evicting what it held) and returns it.
func (r *inputRing) put(tick uint32) *ringSlot {
	s := &r.slots[tick&r.mask]
	*s = ringSlot{tick: tick, valid: true}
	return s
}

// input is player index p's input for tick's slot (valid or not).
func (r *inputRing) input(tick uint32, p int) []byte {
	off := (int(tick&r.mask)*r.players + p) * r.size
	return r.data[off : off+r.size : off+r.size]
}

func (r *inputRing) reset() {
	clear(r.slots)
}
