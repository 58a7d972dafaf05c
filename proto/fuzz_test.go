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
	for _, pt := range []PacketType{PacketAccept, PacketData, PacketKeepAlive, PacketDisconnect, PacketMesh} {
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

// handshakeParsers are the decoders FuzzHandshake covers, each returning
// a pointer so the value can be re-encoded.
var handshakeParsers = []struct {
	name  string
	parse func([]byte) (frame, int, error)
}{
	{"request", func(b []byte) (frame, int, error) { v, n, err := ParseConnectionRequest(b); return &v, n, err }},
	{"challenge", func(b []byte) (frame, int, error) { v, n, err := ParseChallenge(b); return &v, n, err }},
	{"response", func(b []byte) (frame, int, error) { v, n, err := ParseChallengeResponse(b); return &v, n, err }},
	{"denied", func(b []byte) (frame, int, error) { v, n, err := ParseDenied(b); return &v, n, err }},
	{"token", func(b []byte) (frame, int, error) { v, n, err := ParseTokenPrivate(b); return &v, n, err }},
	{"accept", func(b []byte) (frame, int, error) { v, n, err := ParseAcceptBody(b); return &v, n, err }},
}

// handshakeSeeds are valid encodings of every handshake form.
func handshakeSeeds() [][]byte {
	g := newGen(12)
	var out [][]byte
	add := func(v frame) {
		b, err := v.Append(nil)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	req := ConnectionRequest{KeyID: g.r.Uint32(), GameID: g.r.Uint64(), Expires: g.r.Uint64()}
	copy(req.TokenNonce[:], g.bytes(NonceSize))
	copy(req.SealedToken[:], g.bytes(TokenSealedSize))
	add(&req)
	ch := g.challenge()
	add(&ch)
	resp := g.challengeResponse()
	add(&resp)
	plain, sealed := g.denied(false), g.denied(true)
	add(&plain)
	add(&sealed)
	tok := g.tokenPrivate()
	tok.ServerCount = MaxTokenServers
	for i := range tok.Servers {
		tok.Servers[i] = g.r.Uint32()
	}
	add(&tok)
	acc := g.acceptBody()
	add(&acc)
	return out
}

// FuzzHandshake covers the handshake packets and the token and accept
// bodies: whatever parses re-encodes to the bytes it was parsed from
// (except the request's padding and a plaintext denial's version byte,
// which are not kept) and parses back to the same value.
func FuzzHandshake(f *testing.F) {
	for _, b := range handshakeSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range handshakeParsers {
			v, n, err := p.parse(b)
			if err != nil {
				continue
			}
			if n != v.Len() || n > len(b) {
				t.Fatalf("%s: consumed %d, Len %d, input %d", p.name, n, v.Len(), len(b))
			}
			out, err := v.Append(nil)
			if err != nil {
				t.Fatalf("%s re-encode: %v", p.name, err)
			}
			if len(out) != n {
				t.Fatalf("%s: Len %d, encoded %d", p.name, n, len(out))
			}
			want := bytes.Clone(b[:n])
			switch p.name {
			case "request":
				copy(want[reqUsed:], make([]byte, n-reqUsed))
			case "denied":
				want[2] = Version
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("%s re-encode %x != %x", p.name, out, want)
			}
			v2, _, err := p.parse(out)
			if err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("%s reparse: %v", p.name, err)
			}
		}
		_, _, _ = ParseDisconnectReason(b)
	})
}
