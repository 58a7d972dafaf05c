package sim

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// fields holds one field of every kind, and a list of three.
type fields struct {
	u8       uint8
	yes, no  bool
	u16      uint16
	u32      uint32
	u64      uint64
	i8       int8
	i16      int16
	i32      int32
	i64      int64
	blob     []byte
	empty    []byte
	count    int
	elements [3]uint16
}

var allFields = fields{u8: 0xab, yes: true, u16: 0xbeef, u32: 0xdeadbeef, u64: math.MaxUint64 - 1, i8: -2,
	i16: math.MinInt16, i32: -123456, i64: math.MinInt64, blob: []byte("hello"), empty: []byte{}, count: 3,
	elements: [3]uint16{0, 1, 2}}

func (f *fields) write(w *CanonicalWriter) {
	w.Uint8(f.u8)
	w.Bool(f.yes)
	w.Bool(f.no)
	w.Uint16(f.u16)
	w.Uint32(f.u32)
	w.Uint64(f.u64)
	w.Int8(f.i8)
	w.Int16(f.i16)
	w.Int32(f.i32)
	w.Int64(f.i64)
	w.Blob(f.blob)
	w.Blob(f.empty)
	w.Count(f.count)
	for _, e := range f.elements[:f.count] {
		w.Uint16(e)
	}
}

// read reads what write wrote; a list longer than three fails.
func (f *fields) read(r *CanonicalReader) {
	*f = fields{u8: r.Uint8(), yes: r.Bool(), no: r.Bool(), u16: r.Uint16(), u32: r.Uint32(), u64: r.Uint64(),
		i8: r.Int8(), i16: r.Int16(), i32: r.Int32(), i64: r.Int64(), blob: r.Blob(), empty: r.Blob(), count: r.Count(2)}
	if f.count > len(f.elements) {
		r.Fail(errors.New("too many elements"))
	}
	for i := range min(f.count, len(f.elements)) {
		f.elements[i] = r.Uint16()
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	w := NewCanonicalWriter([]byte("head"))
	allFields.write(&w)
	b := w.Bytes()
	want := []byte("head\xab\x01\x00\xef\xbe\xef\xbe\xad\xde\xfe\xff\xff\xff\xff\xff\xff\xff" +
		"\xfe\x00\x80\xc0\x1d\xfe\xff\x00\x00\x00\x00\x00\x00\x00\x80" +
		"\x05\x00\x00\x00hello\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x01\x00\x02\x00")
	if !bytes.Equal(b, want) {
		t.Fatalf("wrote\n%q\nwant\n%q", b, want)
	}
	r := NewCanonicalReader(b[4:])
	var got fields
	got.read(&r)
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, allFields) {
		t.Fatalf("read %+v\nwant %+v", got, allFields)
	}
}

// TestCanonicalTruncated: a state cut anywhere fails with
// proto.ErrTruncated at or before the cut, never panics, and the reads
// after the failure return zeros.
func TestCanonicalTruncated(t *testing.T) {
	w := NewCanonicalWriter(nil)
	allFields.write(&w)
	b := w.Bytes()
	for cut := range len(b) {
		r := NewCanonicalReader(b[:cut])
		var f fields
		f.read(&r)
		err := r.Finish()
		var ce *CanonicalError
		if !errors.Is(err, proto.ErrTruncated) || !errors.As(err, &ce) || ce.Offset > cut {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if r.Uint64() != 0 || r.Blob() != nil || r.Count(1) != 0 || r.Err() != err {
			t.Fatalf("cut at %d: reads after the failure are not zero", cut)
		}
	}
}

func TestCanonicalMalformed(t *testing.T) {
	r := NewCanonicalReader([]byte{2})
	if r.Bool() || !errors.Is(r.Err(), proto.ErrMalformed) {
		t.Errorf("bool 2: %v", r.Err())
	}
	r = NewCanonicalReader([]byte{1, 2, 3})
	r.Uint16()
	if err := r.Finish(); !errors.Is(err, proto.ErrMalformed) || err.(*CanonicalError).Offset != 2 {
		t.Errorf("a byte left over: %v", err)
	}
	errRange := errors.New("unit outside the map")
	r = NewCanonicalReader([]byte{1, 0, 0, 0, 9})
	r.Uint32()
	r.Fail(errRange)
	r.Fail(errors.New("a later reason"))
	if r.Uint8() != 0 {
		t.Error("a read after Fail returned data")
	}
	var ce *CanonicalError
	if err := r.Finish(); !errors.Is(err, errRange) || !errors.As(err, &ce) || ce.Offset != 4 ||
		err.Error() != "sim: canonical state, byte 4: unit outside the map" {
		t.Errorf("Fail: %v", err)
	}
}

// TestCanonicalCountBounded: a count or a length the rest of the input
// cannot hold fails before the game allocates for it.
func TestCanonicalCountBounded(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		size int
		want int
		ok   bool
	}{
		{[]byte{2, 0, 0, 0, 1, 2, 3, 4}, 4, 0, false},
		{[]byte{2, 0, 0, 0, 1, 2, 3, 4}, 2, 2, true},
		{[]byte{4, 0, 0, 0, 1, 2, 3, 4}, 0, 4, true}, // a size below 1 counts as 1
		{[]byte{0xff, 0xff, 0xff, 0xff}, 1 << 30, 0, false},
		{[]byte{0, 0, 0, 0}, math.MaxInt, 0, true},
	} {
		r := NewCanonicalReader(c.in)
		n := r.Count(c.size)
		if n != c.want || (r.Err() == nil) != c.ok {
			t.Errorf("Count(%d) of %x: %d, %v", c.size, c.in, n, r.Err())
		}
		if !c.ok && r.Err().(*CanonicalError).Offset != 0 {
			t.Errorf("Count(%d) of %x: %v, want the count's offset", c.size, c.in, r.Err())
		}
	}
	r := NewCanonicalReader([]byte{0xff, 0xff, 0xff, 0xff, 1})
	if p := r.Blob(); p != nil || !errors.Is(r.Err(), proto.ErrTruncated) {
		t.Errorf("a blob longer than the input: %x %v", p, r.Err())
	}
}

func TestCanonicalAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	w := NewCanonicalWriter(nil)
	allFields.write(&w)
	in := w.Bytes()
	if n := testing.AllocsPerRun(100, func() {
		w := NewCanonicalWriter(buf[:0])
		allFields.write(&w)
		buf = w.Bytes()
	}); n != 0 {
		t.Errorf("writer: %v allocs", n)
	}
	var f fields
	if n := testing.AllocsPerRun(100, func() {
		r := NewCanonicalReader(in)
		f.read(&r)
		if r.Finish() != nil {
			panic("refused")
		}
	}); n != 0 {
		t.Errorf("reader: %v allocs", n)
	}
}

// FuzzCanonicalReader reads data with the fields ops names (a byte
// each: a kind, and for a list the element size; a list's elements are
// Uint8s) and writes back what it read. It must never panic, a count
// must fit the input, and an input the reader accepts whole re-encodes
// to itself.
func FuzzCanonicalReader(f *testing.F) {
	w := NewCanonicalWriter(nil)
	allFields.write(&w)
	f.Add([]byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 10 | 2<<4}, w.Bytes())
	w = NewCanonicalWriter(nil)
	w.Uint32(7)
	w.Count(2)
	w.Int32(-1)
	w.Int32(5)
	w.Blob([]byte{1, 2, 3})
	f.Add([]byte{3, 10 | 4<<4, 9}, w.Bytes())
	f.Add([]byte{10 | 15<<4}, []byte{0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		r := NewCanonicalReader(data)
		out := NewCanonicalWriter(nil)
		for _, op := range ops {
			switch op & 15 {
			case 0:
				out.Uint8(r.Uint8())
			case 1:
				out.Bool(r.Bool())
			case 2:
				out.Uint16(r.Uint16())
			case 3:
				out.Uint32(r.Uint32())
			case 4:
				out.Uint64(r.Uint64())
			case 5:
				out.Int8(r.Int8())
			case 6:
				out.Int16(r.Int16())
			case 7:
				out.Int32(r.Int32())
			case 8:
				out.Int64(r.Int64())
			case 9:
				out.Blob(r.Blob())
			default:
				size := int(op >> 4)
				left := r.Len() - 4
				n := r.Count(size)
				if n*max(size, 1) > max(left, 0) {
					t.Fatalf("count %d of %d-byte elements with %d bytes left", n, size, left)
				}
				out.Count(n)
				for range n * max(size, 1) {
					out.Uint8(r.Uint8())
				}
			}
		}
		if r.Finish() == nil && !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("accepted %x, re-encoded %x", data, out.Bytes())
		}
	})
}

// TestCanonicalRest: a wrapping game reads its own fields, then hands
// the rest to the world it wraps.
func TestCanonicalRest(t *testing.T) {
	w := NewCanonicalWriter(nil)
	w.Uint16(7)
	w.Uint32(9)
	r := NewCanonicalReader(w.Bytes())
	if r.Uint16() != 7 || !bytes.Equal(r.Rest(), []byte{9, 0, 0, 0}) || r.Len() != 0 || r.Finish() != nil {
		t.Fatalf("Rest: %v", r.Err())
	}
	r = NewCanonicalReader([]byte{1})
	r.Uint16()
	if r.Rest() != nil {
		t.Fatal("Rest after a failure returned bytes")
	}
}
