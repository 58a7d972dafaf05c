package session

import (
	"bytes"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

func TestPacketSeal(t *testing.T) {
	var key [proto.KeySize]byte
	key[0] = 9
	tx, _ := newPacketCipher(&key)
	rx, _ := newPacketCipher(&key)
	h := proto.Header{Type: proto.PacketData, Sealed: true, ConnID: 5, Seq: 77, Tick: 1000, InterpFrom: 990, InterpTo: 995}
	payload := []byte("frames go here")
	build := func() []byte {
		b := make([]byte, 0, proto.DefaultMaxPacketSize)
		b, _ = h.Append(b)
		return append(b, payload...)
	}
	pkt := tx.seal(build(), 1<<40+77)
	if len(pkt) != proto.HeaderSize+len(payload)+proto.SealOverhead {
		t.Fatalf("sealed len %d", len(pkt))
	}
	if bytes.Contains(pkt, payload) {
		t.Fatal("payload visible in sealed packet")
	}
	got, err := rx.open(bytes.Clone(pkt), 1<<40+77)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("open = %q, %v", got, err)
	}
	// Wrong packet number, altered header, altered ciphertext, short packet.
	if _, err := rx.open(bytes.Clone(pkt), 77); err == nil {
		t.Error("opened with the wrong packet number")
	}
	for _, i := range []int{5, proto.HeaderSize + 1, len(pkt) - 1} {
		b := bytes.Clone(pkt)
		b[i] ^= 0x40
		if _, err := rx.open(b, 1<<40+77); err == nil {
			t.Errorf("opened with byte %d altered", i)
		}
	}
	if _, err := rx.open(pkt[:proto.HeaderSize+proto.SealOverhead-1], 1); err == nil {
		t.Error("opened a packet shorter than its tag")
	}
	var other [proto.KeySize]byte
	ox, _ := newPacketCipher(&other)
	if _, err := ox.open(bytes.Clone(pkt), 1<<40+77); err == nil {
		t.Error("opened with another key")
	}

	buf := build()
	work := make([]byte, 0, cap(buf))
	if n := testing.AllocsPerRun(100, func() {
		work = append(work[:0], buf...)
		p := tx.seal(work, 5)
		if _, err := rx.open(p, 5); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("seal+open: %v allocs", n)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	var key [proto.KeySize]byte
	c, _ := newPacketCipher(&key)
	h := proto.Header{Type: proto.PacketData, Sealed: true}
	pkt, _ := h.Append(make([]byte, 0, proto.DefaultMaxPacketSize+proto.SealOverhead))
	pkt = append(pkt, make([]byte, proto.DefaultMaxPacketSize-proto.HeaderSize-proto.SealOverhead)...)
	plainLen := len(pkt)
	work := make([]byte, 0, cap(pkt))
	b.SetBytes(int64(plainLen))
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		n++
		work = append(work[:0], pkt...)
		s := c.seal(work, n)
		if _, err := c.open(s, n); err != nil {
			b.Fatal(err)
		}
	}
}
