package proto

import "testing"

func BenchmarkHeaderAppend(b *testing.B) {
	h := newGen(20).header(PacketData, true)
	buf := make([]byte, 0, MaxPacketSizeLimit)
	b.ReportAllocs()
	b.SetBytes(HeaderSize)
	for b.Loop() {
		buf, _ = h.Append(buf[:0])
	}
}

func BenchmarkHeaderParse(b *testing.B) {
	h := newGen(21).header(PacketData, true)
	p, _ := h.Append(nil)
	b.ReportAllocs()
	b.SetBytes(HeaderSize)
	for b.Loop() {
		_, _, _ = ParseHeader(p)
	}
}

// BenchmarkPayloadParse walks a full-size payload of mixed frames.
func BenchmarkPayloadParse(b *testing.B) {
	p, _ := newGen(22).payload(DefaultMaxPacketSize)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		r := FrameReader{Payload: p}
		for r.Next() {
		}
	}
}

func BenchmarkInputFrameAppend(b *testing.B) {
	f := InputFrame{Player: 3, Tick: 1000, Count: 4, Size: 8, Data: make([]byte, 32)}
	buf := make([]byte, 0, MaxPacketSizeLimit)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = f.Append(buf[:0])
	}
}
