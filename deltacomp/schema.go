package deltacomp

import "errors"

// Field is one quantised value of a record: an unsigned integer of Bits
// bits (1–32). Signed values go through Bias first.
type Field struct {
	Name string
	Bits uint8
}

// Schema lays a record's fields out by significance so that XOR patches of
// small changes are mostly zero and their non-zero bytes are adjacent:
//
//  1. plane 0: the low byte of every field of 8 bits or more, in field
//     order;
//  2. the residual bits: each field's top Bits%8 bits (all of a field
//     narrower than 8 bits), packed least significant bit first in field
//     order, padded to a whole byte;
//  3. plane 1, 2, 3: the second, third and fourth bytes of the fields that
//     have them.
//
// A field that moves a little changes its plane-0 byte; it touches plane 1
// only when it crosses a multiple of 256. So a moving entity's patch is a
// short run of non-zero bytes at the front of the record followed by
// zeros, which the group-mask RLE codes with one token.
type Schema struct {
	fields   []Field
	size     int
	residual int       // offset of the residual bits
	resEnd   int       // offset after them
	at       []fieldAt // per field: where its bits are
}

// fieldAt is where a field's bits are in a record.
type fieldAt struct {
	plane [4]int32 // offsets of its whole bytes, least significant first
	full  int      // how many whole bytes it has (Bits / 8)
	rat   int      // offset of the residual byte holding its first top bit
	rsh   uint     // the bit there
	rn    uint     // how many top bits (Bits % 8), past the whole bytes
	mask  uint32   // 2^Bits − 1
}

var errSchema = errors.New("deltacomp: schema fields must have 1–32 bits")

// NewSchema returns the layout of fields.
func NewSchema(fields ...Field) (*Schema, error) {
	s := &Schema{fields: append([]Field(nil), fields...), at: make([]fieldAt, len(fields))}
	off := 0
	for i, f := range fields {
		if f.Bits == 0 || f.Bits > 32 {
			return nil, errSchema
		}
		a := &s.at[i]
		a.full, a.rn, a.mask = int(f.Bits/8), uint(f.Bits%8), uint32(1<<f.Bits-1)
		if f.Bits >= 8 {
			a.plane[0] = int32(off)
			off++
		}
	}
	s.residual = off
	rb := 0
	for i := range fields {
		a := &s.at[i]
		a.rat, a.rsh = off+rb/8, uint(rb%8)
		rb += int(a.rn)
	}
	off += (rb + 7) / 8
	s.resEnd = off
	for k := 1; k < 4; k++ {
		for i := range fields {
			if a := &s.at[i]; a.full > k {
				a.plane[k] = int32(off)
				off++
			}
		}
	}
	s.size = off
	if s.size > MaxRecordSize {
		return nil, errSchema
	}
	return s, nil
}

// Size is the record size in bytes.
func (s *Schema) Size() int { return s.size }

// Fields returns the schema's fields (do not modify).
func (s *Schema) Fields() []Field { return s.fields }

// Pack writes vals (one per field, masked to the field's width) into the
// record dst[:Size()].
func (s *Schema) Pack(dst []byte, vals []uint32) {
	dst = dst[:s.size]
	clear(dst[s.residual:s.resEnd])
	for i := range s.fields {
		s.Set(dst, i, vals[i])
	}
}

// Unpack reads the fields of record src into vals.
func (s *Schema) Unpack(vals []uint32, src []byte) {
	for i := range s.fields {
		vals[i] = s.Get(src, i)
	}
}

// Set writes field i of record rec (Size() bytes) to v, masked to the
// field's width, leaving the other fields alone: a typed accessor instead
// of hand-written bit packing. Signed values go through Bias.
func (s *Schema) Set(rec []byte, i int, v uint32) {
	a := &s.at[i]
	v &= a.mask
	for k, off := range a.plane[:a.full] {
		rec[off] = byte(v >> (8 * k))
	}
	if a.rn != 0 {
		// The top bits: a window of at most two residual bytes.
		m, x := uint32(1<<a.rn-1)<<a.rsh, (v>>(8*a.full))<<a.rsh
		rec[a.rat] = rec[a.rat]&^byte(m) | byte(x)
		if a.rsh+a.rn > 8 {
			rec[a.rat+1] = rec[a.rat+1]&^byte(m>>8) | byte(x>>8)
		}
	}
}

// Get reads field i of record rec.
func (s *Schema) Get(rec []byte, i int) uint32 {
	a := &s.at[i]
	var v uint32
	for k, off := range a.plane[:a.full] {
		v |= uint32(rec[off]) << (8 * k)
	}
	if a.rn != 0 {
		w := uint32(rec[a.rat])
		if a.rsh+a.rn > 8 {
			w |= uint32(rec[a.rat+1]) << 8
		}
		v |= (w >> a.rsh & (1<<a.rn - 1)) << (8 * a.full)
	}
	return v
}

// SetInt writes the signed v into field i, biased by half the field's
// range (Bias); GetInt reads it back.
func (s *Schema) SetInt(rec []byte, i int, v int32) { s.Set(rec, i, Bias(v, uint(s.fields[i].Bits))) }

// GetInt reads a field SetInt wrote.
func (s *Schema) GetInt(rec []byte, i int) int32 {
	return Unbias(s.Get(rec, i), uint(s.fields[i].Bits))
}
