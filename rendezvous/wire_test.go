package rendezvous

import (
	"bytes"
	"net/netip"
	"testing"
)

func TestWireRoundTrip(t *testing.T) {
	req := Request{Role: RoleClient, TxID: TxID{1, 2, 3}, Ticket: Ticket{9, 8, 7},
		Local: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.2:4000"), netip.MustParseAddrPort("10.0.0.2:4000")}}
	b := req.Append(nil)
	if len(b) != RequestSize {
		t.Fatalf("request of %d bytes, want %d", len(b), RequestSize)
	}
	got, err := ParseRequest(b)
	if err != nil || got.Role != req.Role || got.TxID != req.TxID || got.Ticket != req.Ticket || len(got.Local) != 2 || got.Local[1] != req.Local[1] {
		t.Fatalf("request %+v, %v; want %+v", got, err, req)
	}
	for _, m := range []netip.AddrPort{netip.MustParseAddrPort("198.18.0.11:4000"), netip.MustParseAddrPort("[2001:db8::1]:9")} {
		rep := Reply{TxID: req.TxID, Mapping: m}
		rb := rep.Append(nil)
		if len(rb) != ReplySize || len(rb) > RequestSize {
			t.Fatalf("reply of %d bytes (request %d)", len(rb), RequestSize)
		}
		if got, err := ParseReply(rb); err != nil || got != rep {
			t.Fatalf("reply %+v, %v; want %+v", got, err, rep)
		}
	}
	if RequestSize != 58 || ReplySize != 34 || PunchSize != 8 {
		t.Errorf("sizes %d, %d, %d: docs/PROTOCOL.md's tables say 58, 34, 8", RequestSize, ReplySize, PunchSize)
	}
	if p := AppendPunch(nil); !IsPunch(p) || len(p) != PunchSize || IsPunch(b) {
		t.Fatal("punch not recognized, or a request taken for one")
	}
	// Truncated, padded and foreign datagrams are errors.
	for _, bad := range [][]byte{b[:len(b)-1], append(bytes.Clone(b), 0), {'t', 'w', 1, 1}, nil} {
		if _, err := ParseRequest(bad); err == nil {
			t.Errorf("ParseRequest(%x) accepted", bad)
		}
	}
	tooMany := bytes.Clone(b)
	tooMany[offCount] = MaxLocal + 1
	if _, err := ParseRequest(tooMany); err == nil {
		t.Error("a count above MaxLocal accepted")
	}
}

// FuzzParse: no input panics; what parses re-encodes to the same bytes
// (requests up to their zero padding) and parses again alike.
func FuzzParse(f *testing.F) {
	f.Add((&Request{Role: RoleHost, Local: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.2:1")}}).Append(nil))
	f.Add((&Reply{Mapping: netip.MustParseAddrPort("198.18.0.11:4000")}).Append(nil))
	f.Add(AppendPunch(nil))
	f.Add([]byte("Rv"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseRequest(b); err == nil {
			again, err := ParseRequest(r.Append(nil))
			if err != nil || again.Role != r.Role || again.Ticket != r.Ticket || len(again.Local) != len(r.Local) {
				t.Fatalf("request %+v re-parsed as %+v, %v", r, again, err)
			}
		}
		if r, err := ParseReply(b); err == nil {
			if again, err := ParseReply(r.Append(nil)); err != nil || again != r {
				t.Fatalf("reply %+v re-parsed as %+v, %v", r, again, err)
			}
		}
		IsPunch(b)
	})
}
