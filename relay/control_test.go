package relay

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// TestIsControl: control packets are recognised, and no tickwire packet
// (whatever its type) is taken for one, nor a control packet for a
// tickwire one.
func TestIsControl(t *testing.T) {
	tok, _ := Mint(testKey, testGrant(SideJoiner))
	req := AppendBindRequest(nil, tok)
	rep := BindReply{Status: StatusOK, Port: 4000}.Append(nil)
	for _, b := range [][]byte{req, rep} {
		if !IsControl(b) {
			t.Fatalf("%x is not control", b)
		}
		if _, _, err := proto.ParsePrefix(b); err == nil {
			t.Fatalf("proto parses control packet %x", b)
		}
	}
	for pt := proto.PacketType(0); pt < 64; pt++ {
		for _, flags := range []byte{0, proto.FlagSealed} {
			b := []byte{proto.Magic0, proto.Magic1, proto.Version, byte(pt) | flags, 0, 0, 0, 0}
			if IsControl(b) {
				t.Fatalf("tickwire packet type %d taken for control", pt)
			}
		}
	}
	h := proto.Header{Type: proto.PacketData, Sealed: true}
	b, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if IsControl(b) {
		t.Fatal("a data packet is control")
	}
	if IsControl([]byte{Magic0}) || IsControl(nil) {
		t.Fatal("too short to be control")
	}
}

// TestBindRequestRoundTrip: a request carries its grant, has
// BindRequestSize bytes, and a reply is smaller.
func TestBindRequestRoundTrip(t *testing.T) {
	tok, _ := Mint(testKey, testGrant(SideHost))
	req := AppendBindRequest([]byte("x"), tok)[1:]
	if len(req) != BindRequestSize {
		t.Fatalf("request %d bytes, want %d", len(req), BindRequestSize)
	}
	g, err := ParseBindRequest(req)
	if err != nil || !bytes.Equal(g, tok) {
		t.Fatalf("ParseBindRequest = %x, %v", g, err)
	}
	if BindReplySize >= BindRequestSize {
		t.Fatalf("reply %d bytes, request %d: replies must be smaller", BindReplySize, BindRequestSize)
	}
	for _, bad := range [][]byte{nil, req[:3], req[:len(req)-1], append(bytes.Clone(req), 0),
		append([]byte{Magic0, Magic1, Version + 1, byte(PacketBindRequest)}, tok...),
		append([]byte{Magic0, Magic1, Version, byte(PacketBindReply)}, tok...),
		append([]byte{'t', Magic1, Version, byte(PacketBindRequest)}, tok...)} {
		if _, err := ParseBindRequest(bad); err == nil {
			t.Errorf("ParseBindRequest(%x) succeeded", bad)
		}
	}
}

// TestBindReplyRoundTrip: every field survives, the length is
// BindReplySize, and unknown statuses, flags and sides are refused.
func TestBindReplyRoundTrip(t *testing.T) {
	for _, r := range []BindReply{
		{Status: StatusOK, Alloc: 1<<64 - 1, Side: SideHost, Port: 65535, PeerBound: true},
		{Status: StatusSpent, Alloc: 7, Side: SideJoiner, Port: 1},
	} {
		b := r.Append(nil)
		if len(b) != BindReplySize {
			t.Fatalf("reply %d bytes, want %d", len(b), BindReplySize)
		}
		got, err := ParseBindReply(b)
		if err != nil || got != r {
			t.Fatalf("ParseBindReply = %+v, %v; want %+v", got, err, r)
		}
		if got.Relayed(netip.MustParseAddrPort("192.0.2.1:3478")) != netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), r.Port) {
			t.Fatal("Relayed")
		}
	}
	good := BindReply{}.Append(nil)
	for off, v := range map[int]byte{replyOffStatus: byte(statusEnd), replyOffFlags: 2, replyOffSide: 2} {
		b := bytes.Clone(good)
		b[off] = v
		if _, err := ParseBindReply(b); err == nil {
			t.Errorf("byte %d = %d accepted", off, v)
		}
	}
	if _, err := ParseBindReply(good[:BindReplySize-1]); err == nil {
		t.Error("truncated reply accepted")
	}
}

// TestParseAllocatesNothing: parsing control packets and checking their
// grants' MACs (what a flood of them costs) allocate nothing, errors
// included.
func TestParseAllocatesNothing(t *testing.T) {
	tok, _ := Mint(testKey, testGrant(SideHost))
	req := AppendBindRequest(nil, tok)
	bad := bytes.Clone(tok)
	bad[0] ^= 1
	rep := BindReply{Port: 9}.Append(nil)
	junk := []byte("Rw\x01\x01short")
	mac := newGrantMAC(testKey.macKey())
	if n := testing.AllocsPerRun(100, func() {
		ParseBindRequest(req)
		ParseBindRequest(junk)
		ParseBindReply(rep)
		ParseBindReply(junk)
		IsControl(req)
		if _, err := mac.open(tok); err != nil {
			panic(err)
		}
		if _, err := mac.open(bad); err == nil {
			panic("a bad grant opened")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzBindRequest: a request that parses re-encodes to itself.
func FuzzBindRequest(f *testing.F) {
	tok, _ := Mint(testKey, testGrant(SideJoiner))
	f.Add(AppendBindRequest(nil, tok))
	f.Add(AppendBindRequest(nil, nil))
	f.Add([]byte("Rw"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseBindRequest(b)
		if err != nil {
			return
		}
		if !IsControl(b) {
			t.Fatal("parsed but not control")
		}
		if out := AppendBindRequest(nil, g); !bytes.Equal(out, b) {
			t.Fatalf("re-encode %x != %x", out, b)
		}
	})
}

// FuzzBindReply: a reply that parses re-encodes to itself.
func FuzzBindReply(f *testing.F) {
	f.Add(BindReply{Status: StatusOK, Alloc: 3, Side: 1, Port: 5000, PeerBound: true}.Append(nil))
	f.Add(BindReply{Status: StatusInUse}.Append(nil))
	f.Add([]byte("Rw\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseBindReply(b)
		if err != nil {
			return
		}
		if out := r.Append(nil); !bytes.Equal(out, b) {
			t.Fatalf("re-encode %x != %x", out, b)
		}
	})
}
