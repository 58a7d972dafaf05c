package idset

// DefaultFlights is how many packets a Flights remembers by default.
const DefaultFlights = 256

// Flights remembers a record of type T for each recently sent packet, by
// packet sequence number, until a Delivered or Lost notification takes it
// back. It has a power-of-two number of slots; packet seq uses slot seq
// modulo that, so a packet is forgotten once a later one takes its slot.
type Flights[T any] struct {
	slots  []flight[T]
	newest uint16 // the newest packet put (putAny: one was)
	putAny bool
}

type flight[T any] struct {
	used bool
	seq  uint16
	rec  T
}

// NewFlights returns room for n packets, rounded up to a power of two and
// capped at limit, which must be a power of two; n ≤ 0 means
// DefaultFlights.
func NewFlights[T any](n, limit int) Flights[T] {
	size := DefaultFlights
	if n > 0 {
		size = 1
		for size < min(n, limit) {
			size <<= 1
		}
	}
	return Flights[T]{slots: make([]flight[T], size)}
}

// Len is the number of packets f can remember.
func (f *Flights[T]) Len() int { return len(f.slots) }

// Put starts the record of packet seq, replacing the packet that held its
// slot, and returns it zeroed. It is owned by f and valid until the slot is
// reused.
func (f *Flights[T]) Put(seq uint16) *T {
	s := &f.slots[int(seq)&(len(f.slots)-1)]
	var zero T
	s.used, s.seq, s.rec = true, seq, zero
	if !f.putAny || int16(seq-f.newest) > 0 {
		f.newest = seq
	}
	f.putAny = true
	return &s.rec
}

// Forgot reports whether packet seq is older than the packets f can
// remember: a record it had may have been replaced. Packets newer than
// the newest put, or within reach of it, were not forgotten (Take tells
// whether they are held). Sequence numbers wrap: "older" reaches back
// half their range at most.
func (f *Flights[T]) Forgot(seq uint16) bool {
	return f.putAny && int(int16(f.newest-seq)) >= len(f.slots)
}

// Take forgets packet seq and returns its record, valid until the slot is
// reused; ok is false when the packet is not remembered (never put, taken
// already, or its slot reused).
func (f *Flights[T]) Take(seq uint16) (rec *T, ok bool) {
	s := &f.slots[int(seq)&(len(f.slots)-1)]
	if !s.used || s.seq != seq {
		return nil, false
	}
	s.used = false
	return &s.rec, true
}

// Clear forgets every packet.
func (f *Flights[T]) Clear() {
	for i := range f.slots {
		f.slots[i].used = false
	}
}
