package proto

import (
	"errors"
	"testing"
)

// TestStateFramesRefuse: the state frames' parsers refuse the fields
// their limits forbid, with errors, never a panic.
func TestStateFramesRefuse(t *testing.T) {
	sum := func(f StateSumFrame) []byte {
		b := []byte{byte(FrameStateSum)}
		b = le.AppendUint32(b, f.ID)
		b = le.AppendUint32(b, f.Tick)
		b = le.AppendUint32(b, f.Size)
		b = append(b, f.Sum[:]...)
		b = append(b, byte(f.Codec))
		return le.AppendUint32(b, f.Packed)
	}
	chunk := func(off, n uint32) []byte {
		b := []byte{byte(FrameStateChunk), 1, 0, 0, 0}
		b = le.AppendUint32(b, off)
		return append(AppendVarint(b, n), make([]byte, n)...)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"request flags", []byte{byte(FrameStateRequest), 1, 0, 0, 0, 2, 0, 0, 0, 0x02}},
		{"request short", []byte{byte(FrameStateRequest), 1, 0, 0}},
		{"sum over size", sum(StateSumFrame{Size: MaxStateSize + 1})},
		{"sum upload of nothing", sum(StateSumFrame{Packed: 10})},
		{"sum codec without upload", sum(StateSumFrame{Size: 10, Codec: CodecZstd})},
		{"sum xor codec", sum(StateSumFrame{Size: 10, Codec: CodecXORRLE, Packed: 4})},
		{"sum predicted xor codec", sum(StateSumFrame{Size: 10, Codec: CodecPredictedXORRLE, Packed: 4})},
		{"sum short", sum(StateSumFrame{Size: 10})[:20]},
		{"chunk empty", chunk(0, 0)},
		{"chunk over chunk", chunk(0, MaxStateChunk+1)},
		{"chunk past state", chunk(MaxStateSize-10, 11)},
		{"chunk short", chunk(0, 10)[:15]},
		{"begin size without packed", (&StateBeginFrame{Size: 5, Packed: 5}).mustAppendBroken(func(b []byte) { b[15] = 0; b[16] = 0; b[17] = 0; b[18] = 0 })},
		{"begin reason", (&StateBeginFrame{}).mustAppendBroken(func(b []byte) { b[5] = 9 })},
		{"begin players short", (&StateBeginFrame{Seqs: []PlayerSeq{{1, 2}}}).mustAppendBroken(func(b []byte) { b[23] = 2 })},
	} {
		_, n, err := SkipFrame(c.b)
		var pe *ParseError
		if err == nil || !errors.As(err, &pe) {
			t.Errorf("%s: SkipFrame = %d, %v; want a ParseError", c.name, n, err)
		}
	}
}

// mustAppendBroken encodes f and lets broken damage the bytes.
func (f *StateBeginFrame) mustAppendBroken(broken func([]byte)) []byte {
	b, err := f.Append(nil)
	if err != nil {
		panic(err)
	}
	broken(b)
	return b
}
