package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/tickwire/tickwire/proto"
)

// CanonicalWriter and CanonicalReader write and read a world's canonical
// state (AppendCanonical, CommitGame.LoadCanonical) as a sequence of
// fields:
//
//	integers   fixed width, little endian (a bool is one byte, 0 or 1)
//	bytes      uint32 length, then the bytes
//	lists      uint32 count (Count), then each element's fields
//
// Neither knows field names or a layout: the game writes its fields in
// a fixed order and reads them back in the same order. A list's
// elements and the fields of a struct are the game's own calls.
//
//	func (g *Game) AppendCanonical(b []byte) []byte {
//		w := sim.NewCanonicalWriter(b)
//		w.Uint32(g.tick)
//		w.Count(len(g.units))
//		for _, u := range g.units {
//			w.Int32(u.X)
//			w.Int32(u.Y)
//		}
//		return w.Bytes()
//	}
//
//	func (g *Game) LoadCanonical(b []byte) error {
//		r := sim.NewCanonicalReader(b)
//		tick := r.Uint32()
//		units := make([]Unit, r.Count(8)) // a unit takes 8 bytes
//		for i := range units {
//			units[i] = Unit{X: r.Int32(), Y: r.Int32()}
//		}
//		if err := r.Finish(); err != nil {
//			return err
//		}
//		g.tick, g.units = tick, units
//		return nil
//	}

// CanonicalWriter appends fields to a buffer. Use a value (not a
// pointer) local to AppendCanonical: nothing then allocates beyond the
// buffer's growth, so a checksum every tick stays allocation-free once
// the buffer is large enough.
type CanonicalWriter struct {
	b []byte
}

// NewCanonicalWriter returns a writer that appends to b.
func NewCanonicalWriter(b []byte) CanonicalWriter { return CanonicalWriter{b: b} }

// Bytes returns the buffer with everything written so far appended.
func (w *CanonicalWriter) Bytes() []byte { return w.b }

// Uint8 writes one byte.
func (w *CanonicalWriter) Uint8(v uint8) { w.b = append(w.b, v) }

// Bool writes 1 for true, 0 for false.
func (w *CanonicalWriter) Bool(v bool) {
	var b byte
	if v {
		b = 1
	}
	w.b = append(w.b, b)
}

// Uint16 writes two bytes, little endian.
func (w *CanonicalWriter) Uint16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }

// Uint32 writes four bytes, little endian.
func (w *CanonicalWriter) Uint32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }

// Uint64 writes eight bytes, little endian.
func (w *CanonicalWriter) Uint64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// Int8 writes v's byte (two's complement).
func (w *CanonicalWriter) Int8(v int8) { w.Uint8(uint8(v)) }

// Int16 writes v as Uint16 (two's complement).
func (w *CanonicalWriter) Int16(v int16) { w.Uint16(uint16(v)) }

// Int32 writes v as Uint32 (two's complement).
func (w *CanonicalWriter) Int32(v int32) { w.Uint32(uint32(v)) }

// Int64 writes v as Uint64 (two's complement).
func (w *CanonicalWriter) Int64(v int64) { w.Uint64(uint64(v)) }

// Blob writes p's length (uint32) and p.
func (w *CanonicalWriter) Blob(p []byte) {
	w.Uint32(uint32(len(p)))
	w.b = append(w.b, p...)
}

// Count writes the number of elements of a list (uint32); the game then
// writes each element.
func (w *CanonicalWriter) Count(n int) { w.Uint32(uint32(n)) }

// CanonicalError is a canonical state a CanonicalReader refused: the
// offset of the field that failed and why: proto.ErrTruncated (the
// input ends inside a field, or a count or length promises more than
// the input holds), proto.ErrMalformed (a bool neither 0 nor 1, bytes
// left after the last field) or the error the game passed to Fail.
type CanonicalError struct {
	Offset int
	Err    error
}

func (e *CanonicalError) Error() string {
	return fmt.Sprintf("sim: canonical state, byte %d: %v", e.Offset, e.Err)
}

func (e *CanonicalError) Unwrap() error { return e.Err }

// CanonicalReader reads fields from canonical state the peer did not
// necessarily write honestly: a joining client's state comes from the
// server or, through a relay, from another client. It never panics and
// never reads past its input. Its error is sticky: after the first
// failure every read returns zero (an empty slice, a count of 0) and
// the failure stays, so a LoadCanonical reads every field without
// checking each one and asks Finish once at the end; a game checks its
// own ranges as it goes and reports them with Fail.
type CanonicalReader struct {
	b   []byte
	off int
	err error
}

// NewCanonicalReader returns a reader of b. The reader does not copy
// b: slices from Blob alias it.
func NewCanonicalReader(b []byte) CanonicalReader { return CanonicalReader{b: b} }

// take returns the next n bytes, or nil after a failure (then or
// before).
func (r *CanonicalReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = &CanonicalError{Offset: r.off, Err: proto.ErrTruncated}
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

// Uint8 reads one byte.
func (r *CanonicalReader) Uint8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (r *CanonicalReader) Bool() bool {
	at := r.off
	switch r.Uint8() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail(at, proto.ErrMalformed)
	return false
}

// Uint16 reads two bytes, little endian.
func (r *CanonicalReader) Uint16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

// Uint32 reads four bytes, little endian.
func (r *CanonicalReader) Uint32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// Uint64 reads eight bytes, little endian.
func (r *CanonicalReader) Uint64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// Int8 reads what CanonicalWriter.Int8 wrote.
func (r *CanonicalReader) Int8() int8 { return int8(r.Uint8()) }

// Int16 reads what CanonicalWriter.Int16 wrote.
func (r *CanonicalReader) Int16() int16 { return int16(r.Uint16()) }

// Int32 reads what CanonicalWriter.Int32 wrote.
func (r *CanonicalReader) Int32() int32 { return int32(r.Uint32()) }

// Int64 reads what CanonicalWriter.Int64 wrote.
func (r *CanonicalReader) Int64() int64 { return int64(r.Uint64()) }

// Blob reads a length and that many bytes. The slice aliases the input
// (copy what you keep); it is empty, not nil, for a zero length.
func (r *CanonicalReader) Blob() []byte {
	n := r.Uint32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail(r.off-4, proto.ErrTruncated)
		return nil
	}
	return r.take(int(n))
}

// Count reads the number of elements of a list whose every element
// takes at least size bytes (a size below 1 counts as 1). A count that
// the rest of the input cannot hold fails (proto.ErrTruncated) and
// returns 0, so a game may allocate the count it gets: the input bounds
// it, whatever the count field says.
func (r *CanonicalReader) Count(size int) int {
	n := r.Uint32()
	if r.err != nil {
		return 0
	}
	size = max(size, 1)
	if uint64(n)*uint64(size) > uint64(len(r.b)-r.off) {
		r.fail(r.off-4, proto.ErrTruncated)
		return 0
	}
	return int(n)
}

// Rest returns the bytes not read yet and reads them: a nested state
// that another LoadCanonical reads (a game wrapping another's world).
// The slice aliases the input; it is nil after a failure.
func (r *CanonicalReader) Rest() []byte { return r.take(r.Len()) }

// Fail records the game's own reason to refuse the state (a value out of
// range), at the offset reached, unless a failure came first. Every
// later read returns zero.
func (r *CanonicalReader) Fail(err error) { r.fail(r.off, err) }

func (r *CanonicalReader) fail(at int, err error) {
	if r.err == nil {
		r.err = &CanonicalError{Offset: at, Err: err}
	}
}

// Len is how many bytes are left to read.
func (r *CanonicalReader) Len() int { return len(r.b) - r.off }

// Err is the first failure, or nil.
func (r *CanonicalReader) Err() error { return r.err }

// Finish is the reader's verdict on the whole input: the first failure,
// or proto.ErrMalformed when bytes are left after the last field, or
// nil.
func (r *CanonicalReader) Finish() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail(r.off, proto.ErrMalformed)
	}
	return r.err
}
