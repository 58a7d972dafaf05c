package reliability

// ReplayWindowSize is how many packet numbers behind the largest one seen a
// ReplayWindow still accepts (once each).
const ReplayWindowSize = 1024

const (
	replayWordBits = 64
	// One word more than the window so that advancing clears whole words
	// without touching bits that are still inside the window.
	replayWords = ReplayWindowSize/replayWordBits + 1
	replayRing  = replayWords * replayWordBits
)

// ReplayWindow remembers which of the last ReplayWindowSize packet numbers
// were received (RFC 6479 style bitmap). The zero value is an empty window
// that has seen nothing. Use it on authenticated packets only: check
// Fresh before opening a packet and Mark it after the AEAD accepted it, so
// a forged packet can never move the window.
//
// It is not safe for concurrent use.
type ReplayWindow struct {
	largest uint64
	any     bool // at least one packet number was marked
	bits    [replayWords]uint64
}

// Largest returns the largest packet number marked, or 0 if none was.
func (w *ReplayWindow) Largest() uint64 { return w.largest }

// Fresh reports whether pn may be accepted: it was not marked before and is
// not more than ReplayWindowSize-1 below the largest packet number marked.
func (w *ReplayWindow) Fresh(pn uint64) bool {
	if !w.any || pn > w.largest {
		return true
	}
	if w.largest-pn >= ReplayWindowSize {
		return false
	}
	return !w.has(pn)
}

// Mark records pn as received. It reports false, and changes nothing, if pn
// is not Fresh.
func (w *ReplayWindow) Mark(pn uint64) bool {
	if !w.Fresh(pn) {
		return false
	}
	if !w.any {
		w.any = true
		w.largest = pn
	} else if pn > w.largest {
		w.advance(pn)
	}
	i := pn % replayRing
	w.bits[i/replayWordBits] |= 1 << (i % replayWordBits)
	return true
}

// Has reports whether pn was marked and is still inside the window.
func (w *ReplayWindow) Has(pn uint64) bool {
	if !w.any || pn > w.largest || w.largest-pn >= ReplayWindowSize {
		return false
	}
	return w.has(pn)
}

func (w *ReplayWindow) has(pn uint64) bool {
	i := pn % replayRing
	return w.bits[i/replayWordBits]&(1<<(i%replayWordBits)) != 0
}

// advance moves the largest packet number to pn, clearing the words that
// the window slides over.
func (w *ReplayWindow) advance(pn uint64) {
	cur := w.largest / replayWordBits
	next := pn / replayWordBits
	if next-cur >= replayWords {
		clear(w.bits[:])
	} else {
		for word := cur + 1; word <= next; word++ {
			w.bits[word%replayWords] = 0
		}
	}
	w.largest = pn
}

// ackBits returns the header acknowledgement field for the largest packet
// number: bit i set if largest-1-i was marked.
func (w *ReplayWindow) ackBits() uint32 {
	var bits uint32
	if !w.any {
		return 0
	}
	for i := uint64(0); i < 32; i++ {
		if w.largest < i+1 {
			break
		}
		if w.has(w.largest - 1 - i) {
			bits |= 1 << i
		}
	}
	return bits
}
