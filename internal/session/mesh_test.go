package session

import (
	"testing"

	"github.com/tickwire/tickwire/proto"
)

func TestPeerLink(t *testing.T) {
	var ab, ba, other [proto.KeySize]byte
	ab[0], ba[0], other[0] = 1, 2, 3
	a, _ := NewMeshLink(10, 20, &ab, &ba)
	b, _ := NewMeshLink(20, 10, &ba, &ab)
	eve, _ := NewMeshLink(10, 20, &other, &other)
	open := func(l *MeshLink, pkt []byte) ([]byte, DropReason, bool) {
		h, _, err := proto.ParseHeader(pkt)
		if err != nil {
			t.Fatal(err)
		}
		return l.Open(pkt, &h)
	}
	p1 := a.Append(nil, 77, []byte("hello"))
	if h, _, _ := proto.ParseHeader(p1); h.Type != proto.PacketMesh || h.ConnID != 10 || h.Tick != 77 || !h.Sealed {
		t.Fatalf("header %+v", h)
	}
	if got, _, ok := open(b, append([]byte(nil), p1...)); !ok || string(got) != "hello" {
		t.Fatalf("open: %q %v", got, ok)
	}
	if _, why, ok := open(b, append([]byte(nil), p1...)); ok || why != DropReplay {
		t.Fatalf("replay: %v %v", ok, why)
	}
	p2 := a.Append(nil, 78, []byte("again"))
	bad := append([]byte(nil), p2...)
	bad[16]++ // the tick, in the authenticated header
	if _, why, ok := open(b, bad); ok || why != DropAuth {
		t.Fatalf("altered: %v %v", ok, why)
	}
	for range 4 {
		eve.Append(nil, 1, nil) // past the numbers b has seen
	}
	if _, why, ok := open(b, eve.Append(nil, 1, []byte("forged"))); ok || why != DropAuth {
		t.Fatalf("wrong key: %v %v", ok, why)
	}
	// A forged packet did not move the window: the real one still opens.
	if got, _, ok := open(b, p2); !ok || string(got) != "again" {
		t.Fatalf("after forgeries: %q %v", got, ok)
	}
	// The other direction has its own key.
	if _, _, ok := open(a, b.Append(nil, 5, []byte("back"))); !ok {
		t.Fatal("b → a did not open")
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = a.Append(buf[:0], 1, []byte("x")) }); n != 0 {
		t.Fatalf("Append: %v allocs", n)
	}
}
