package proto

// reader is a bounds-checked cursor for parsers. Reads past the end set
// short and return zero values; malformed varints set bad. Parsers check
// both once, after reading the fixed fields.
type reader struct {
	b     []byte
	off   int
	short bool
	bad   bool
}

func (r *reader) need(n int) bool {
	if r.short || n > len(r.b)-r.off {
		r.short = true
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := le.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := le.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := le.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) varint() uint32 {
	if r.short || r.bad {
		return 0
	}
	v, n := parseVarint(r.b[r.off:])
	switch {
	case n == 0:
		r.short = true
	case n < 0:
		r.bad = true
	default:
		r.off += n
	}
	return v
}

// bytes returns the next n bytes, aliasing the input.
func (r *reader) bytes(n uint32) []byte {
	if r.short || r.bad {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.short = true
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

// frameType reads the type byte and reports whether it is want (a missing
// byte counts as a match and is caught by check as truncation).
func (r *reader) frameType(want FrameType) bool {
	t := r.u8()
	return r.short || FrameType(t) == want
}

// check returns the frame's static error for a short or bad read.
func (r *reader) check(errShort, errBad error) error {
	switch {
	case r.bad:
		return errBad
	case r.short:
		return errShort
	}
	return nil
}
