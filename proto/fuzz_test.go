package proto

import (
	"bytes"
	"reflect"
	"testing"
)

// Each enum's end marker must match its name table, or a value would be
// valid but nameless (or the reverse).
func TestEnumTables(t *testing.T) {
	for _, c := range []struct {
		name      string
		end, want int
	}{
		{"packet", int(packetTypeEnd), len(packetNames)},
		{"frame", int(frameTypeEnd), len(frameNames)},
		{"codec", int(codecEnd), len(codecNames)},
		{"cause", int(causeEnd), len(causeNames)},
		{"resync", int(resyncReasonEnd), len(resyncNames)},
		{"control", int(controlCodeEnd), len(controlNames)},
		{"deny", int(denyReasonEnd), len(denyNames)},
		{"disconnect", int(disconnectReasonEnd), len(disconnectNames)},
	} {
		if c.end != c.want {
			t.Errorf("%s: end marker %d, %d names", c.name, c.end, c.want)
		}
	}
}

// FuzzHeader: any input either fails to parse or round-trips exactly.
func FuzzHeader(f *testing.F) {
	g := newGen(10)
	for _, pt := range []PacketType{PacketAccept, PacketData, PacketKeepAlive, PacketDisconnect, PacketPeer} {
		h := g.header(pt, pt != PacketData)
		b, _ := h.Append(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseHeader(b)
		if err != nil {
			return
		}
		if n != HeaderSize {
			t.Fatalf("n = %d", n)
		}
		out, err := h.Append(nil)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("re-encode %x != %x", out, b[:HeaderSize])
		}
	})
}

// FuzzFrames: a payload parses into frames whose re-encoding is the
// payload itself, frame by frame, and parses back to equal values.
func FuzzFrames(f *testing.F) {
	g := newGen(11)
	for ft := FrameType(1); ft < frameTypeEnd; ft++ {
		b, _ := g.frame(ft).Append(nil)
		f.Add(b)
	}
	for range 8 {
		p, _ := g.payload(DefaultMaxPacketSize)
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		r := FrameReader{Payload: p}
		for r.Next() {
			fb := r.Frame()
			v, n, err := parseAny(r.Type(), fb)
			if err != nil || n != len(fb) {
				t.Fatalf("frame validated by Next fails to parse: %v", err)
			}
			if v.Len() != len(fb) {
				t.Fatalf("%v: Len() = %d, encoded %d", r.Type(), v.Len(), len(fb))
			}
			out, err := v.Append(nil)
			if err != nil {
				t.Fatalf("%v re-encode: %v", r.Type(), err)
			}
			if !bytes.Equal(out, fb) {
				t.Fatalf("%v re-encode %x != %x", r.Type(), out, fb)
			}
			v2, _, err := parseAny(r.Type(), out)
			if err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("%v reparse: %v", r.Type(), err)
			}
		}
	})
}

// FuzzHandshake covers the handshake packets and the token and accept
// bodies.
func FuzzHandshake(f *testing.F) {
	g := newGen(12)
	req := ConnectionRequest{KeyID: g.r.Uint32(), GameID: g.r.Uint64(), Expires: g.r.Uint64()}
	copy(req.TokenNonce[:], g.bytes(NonceSize))
	copy(req.SealedToken[:], g.bytes(TokenSealedSize))
	b, _ := req.Append(nil)
	f.Add(b)
	ch := g.challenge()
	b, _ = ch.Append(nil)
	f.Add(b)
	resp := g.challengeResponse()
	b, _ = resp.Append(nil)
	f.Add(b)
	b, _ = (&Denied{Reason: DenyServerFull}).Append(nil)
	f.Add(b)
	tok := g.tokenPrivate()
	b, _ = tok.Append(nil)
	f.Add(b)
	acc := g.acceptBody()
	b, _ = acc.Append(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(name string, v frame, n int, err error) {
			if err != nil {
				return
			}
			out, err := v.Append(nil)
			if err != nil {
				t.Fatalf("%s re-encode: %v", name, err)
			}
			if len(out) != v.Len() {
				t.Fatalf("%s: Len %d, encoded %d", name, v.Len(), len(out))
			}
			// The request's padding is not kept; everything else is.
			m := n
			if name == "request" {
				m = reqUsed
			}
			if !bytes.Equal(out[:m], b[:m]) {
				t.Fatalf("%s re-encode %x != %x", name, out[:m], b[:m])
			}
		}
		r, n, err := ParseConnectionRequest(b)
		check("request", &r, n, err)
		c, n, err := ParseChallenge(b)
		check("challenge", &c, n, err)
		cr, n, err := ParseChallengeResponse(b)
		check("response", &cr, n, err)
		if d, n, err := ParseDenied(b); err == nil {
			out, _ := d.Append(nil)
			if n != DeniedSize || out[PrefixSize] != b[PrefixSize] {
				t.Fatalf("denied re-encode")
			}
		}
		tp, n, err := ParseTokenPrivate(b)
		check("token", &tp, n, err)
		ab, n, err := ParseAcceptBody(b)
		check("accept", &ab, n, err)
		_, _, _ = ParseDisconnectReason(b)
	})
}
