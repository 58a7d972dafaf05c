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
	residual int   // offset of the residual bits
	offs     []int // per field: offset of its plane-k byte is offs[f*4+k], -1 if none
	rbit     []int // per field: bit offset of its residual bits in the residual area
}

var errSchema = errors.New("deltacomp: schema fields must have 1–32 bits")

// NewSchema returns the layout of fields.
func NewSchema(fields ...Field) (*Schema, error) {
	s := &Schema{fields: append([]Field(nil), fields...), offs: make([]int, 4*len(fields)), rbit: make([]int, len(fields))}
	for i := range s.offs {
		s.offs[i] = -1
	}
	off := 0
	for i, f := range fields {
		if f.Bits == 0 || f.Bits > 32 {
			return nil, errSchema
		}
		if f.Bits >= 8 {
			s.offs[i*4] = off
			off++
		}
	}
	s.residual = off
	rb := 0
	for i, f := range fields {
		s.rbit[i] = rb
		rb += int(f.Bits % 8)
	}
	off += (rb + 7) / 8
	for k := 1; k < 4; k++ {
		for i, f := range fields {
			if int(f.Bits) >= 8*(k+1) {
				s.offs[i*4+k] = off
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
	clear(dst[s.residual:s.offsetAfterResidual()])
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
	f := s.fields[i]
	if f.Bits < 32 {
		v &= 1<<f.Bits - 1
	}
	full := int(f.Bits / 8)
	for k := 0; k < full; k++ {
		rec[s.offs[i*4+k]] = byte(v >> (8 * k))
	}
	top := v >> (8 * full)
	for j := range int(f.Bits % 8) {
		b := s.rbit[i] + j
		if top>>j&1 != 0 {
			rec[s.residual+b/8] |= 1 << (b % 8)
		} else {
			rec[s.residual+b/8] &^= 1 << (b % 8)
		}
	}
}

// Get reads field i of record rec.
func (s *Schema) Get(rec []byte, i int) uint32 {
	f := s.fields[i]
	var v uint32
	full := int(f.Bits / 8)
	for k := 0; k < full; k++ {
		v |= uint32(rec[s.offs[i*4+k]]) << (8 * k)
	}
	for j := range int(f.Bits % 8) {
		b := s.rbit[i] + j
		if rec[s.residual+b/8]>>(b%8)&1 != 0 {
			v |= 1 << (8*full + j)
		}
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

func (s *Schema) offsetAfterResidual() int {
	rb := 0
	for _, f := range s.fields {
		rb += int(f.Bits % 8)
	}
	return s.residual + (rb+7)/8
}
