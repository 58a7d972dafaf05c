package proto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// parseAny parses a frame of type t into a pointer of the matching type.
func parseAny(t FrameType, b []byte) (frame, int, error) {
	switch t {
	case FrameAckOnly:
		f, n, err := ParseAckOnlyFrame(b)
		return &f, n, err
	case FrameReliable:
		f, n, err := ParseReliableFrame(b)
		return &f, n, err
	case FrameMessage:
		f, n, err := ParseMessageFrame(b)
		return &f, n, err
	case FrameInput:
		f, n, err := ParseInputFrame(b)
		return &f, n, err
	case FrameInputAck:
		f, n, err := ParseInputAckFrame(b)
		return &f, n, err
	case FrameSnapshotDelta:
		f, n, err := ParseSnapshotDeltaFrame(b)
		return &f, n, err
	case FrameFullSnapshot:
		f, n, err := ParseFullSnapshotFrame(b)
		return &f, n, err
	case FrameResyncRequest:
		f, n, err := ParseResyncRequestFrame(b)
		return &f, n, err
	case FrameChecksum:
		f, n, err := ParseChecksumFrame(b)
		return &f, n, err
	case FrameControl:
		f, n, err := ParseControlFrame(b)
		return &f, n, err
	case FramePathChallenge:
		f, n, err := ParsePathChallengeFrame(b)
		return &f, n, err
	case FramePathResponse:
		f, n, err := ParsePathResponseFrame(b)
		return &f, n, err
	case FrameRoster:
		f, n, err := ParseRosterFrame(b)
		return &f, n, err
	case FrameStandbyAck:
		f, n, err := ParseStandbyAckFrame(b)
		return &f, n, err
	case FrameStandbyStep:
		f, n, err := ParseStandbyStepFrame(b)
		return &f, n, err
	case FrameStandbyState:
		f, n, err := ParseStandbyStateFrame(b)
		return &f, n, err
	case FrameSuccessor:
		f, n, err := ParseSuccessorFrame(b)
		return &f, n, err
	case FramePeerMessage:
		f, n, err := ParsePeerMessageFrame(b)
		return &f, n, err
	case FramePeerAck:
		f, n, err := ParsePeerAckFrame(b)
		return &f, n, err
	case FrameEffect:
		f, n, err := ParseEffectFrame(b)
		return &f, n, err
	case FrameCommand:
		f, n, err := ParseCommandFrame(b)
		return &f, n, err
	case FrameCommitItem:
		f, n, err := ParseCommitItemFrame(b)
		return &f, n, err
	case FrameCommitSums:
		var f CommitSumsFrame
		n, err := ParseCommitSumsFrame(b, &f)
		return &f, n, err
	case FrameMeshIntro:
		f, n, err := ParseMeshIntroFrame(b)
		return &f, n, err
	case FrameMeshReport:
		var f MeshReportFrame
		n, err := ParseMeshReportFrame(b, &f)
		return &f, n, err
	case FrameParity:
		f, n, err := ParseParityFrame(b)
		return &f, n, err
	case FrameStateRequest:
		f, n, err := ParseStateRequestFrame(b)
		return &f, n, err
	case FrameStateSum:
		f, n, err := ParseStateSumFrame(b)
		return &f, n, err
	case FrameStateChunk:
		f, n, err := ParseStateChunkFrame(b)
		return &f, n, err
	case FrameStateBegin:
		var f StateBeginFrame
		n, err := ParseStateBeginFrame(b, &f)
		return &f, n, err
	}
	return nil, 0, errFrameType
}

func mustAppend(t testing.TB, f frame) []byte {
	t.Helper()
	b, err := f.Append(nil)
	if err != nil {
		t.Fatalf("%T.Append: %v", f, err)
	}
	if len(b) != f.Len() {
		t.Fatalf("%T: len(Append) = %d, Len() = %d", f, len(b), f.Len())
	}
	return b
}

func TestFrameRoundTrip(t *testing.T) {
	g := newGen(1)
	for ft := FrameType(1); ft < frameTypeEnd; ft++ {
		t.Run(ft.String(), func(t *testing.T) {
			for range 500 {
				want := g.frame(ft)
				b := mustAppend(t, want)
				if got, err := PeekFrameType(b); err != nil || got != ft {
					t.Fatalf("PeekFrameType = %v, %v; want %v", got, err, ft)
				}
				// Trailing bytes belong to the next frame and must be left alone.
				got, n, err := parseAny(ft, append(b, 0xff, 0xfe))
				if err != nil {
					t.Fatalf("parse %x: %v", b, err)
				}
				if n != len(b) {
					t.Fatalf("parse consumed %d bytes, encoded %d", n, len(b))
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
				}
				if st, sn, err := SkipFrame(b); err != nil || st != ft || sn != n {
					t.Fatalf("SkipFrame = %v, %d, %v", st, sn, err)
				}
			}
		})
	}
}

// Every strict prefix of a valid encoding is an error wrapping ErrTruncated
// (or, for a cut inside a length, ErrMalformed is not acceptable: the cut is
// truncation).
func TestFrameTruncated(t *testing.T) {
	g := newGen(2)
	for ft := FrameType(1); ft < frameTypeEnd; ft++ {
		for range 50 {
			b := mustAppend(t, g.frame(ft))
			for i := range len(b) {
				_, _, err := parseAny(ft, b[:i])
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("%v: prefix %d/%d: err = %v, want ErrTruncated", ft, i, len(b), err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.What == "" {
					t.Fatalf("%v: error %v is not a *ParseError naming the frame", ft, err)
				}
			}
		}
	}
}

// wantTruncated checks that every strict prefix of the valid encoding b
// fails to parse with ErrTruncated.
func wantTruncated(t *testing.T, name string, b []byte, parse func([]byte) error) {
	t.Helper()
	for i := range len(b) {
		if err := parse(b[:i]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%s: prefix %d/%d: err = %v, want ErrTruncated", name, i, len(b), err)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	g := newGen(3)
	for range 2000 {
		for _, pt := range []PacketType{PacketAccept, PacketData, PacketKeepAlive, PacketDisconnect, PacketMesh} {
			want := g.header(pt, g.r.IntN(2) == 0)
			b, err := want.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != want.Len() || len(b) != HeaderSize {
				t.Fatalf("len = %d, Len = %d", len(b), want.Len())
			}
			got, n, err := ParseHeader(b)
			if err != nil || n != HeaderSize || got != want {
				t.Fatalf("ParseHeader = %+v, %d, %v; want %+v", got, n, err, want)
			}
			if id, ok := ConnIDOf(b); !ok || id != want.ConnID {
				t.Fatalf("ConnIDOf = %d, %v", id, ok)
			}
			for i := range len(b) {
				if _, _, err := ParseHeader(b[:i]); err == nil {
					t.Fatalf("prefix %d parsed", i)
				}
			}
		}
	}
}

func TestHeaderRejects(t *testing.T) {
	h := Header{Type: PacketData, Tick: 100, InterpFrom: 90, InterpTo: 95}
	good, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(b []byte)
		want error
	}{
		{"magic", func(b []byte) { b[0] = 'x' }, ErrMalformed},
		{"version", func(b []byte) { b[2] = Version + 1 }, ErrMalformed},
		{"unknown type", func(b []byte) { b[3] = 0x3f }, ErrMalformed},
		{"type zero", func(b []byte) { b[3] = 0 }, ErrMalformed},
		{"reserved flag", func(b []byte) { b[3] |= flagReserved }, ErrMalformed},
		{"handshake type", func(b []byte) { b[3] = byte(PacketChallenge) }, ErrMalformed},
	}
	for _, c := range cases {
		b := bytes.Clone(good)
		c.mut(b)
		if _, _, err := ParseHeader(b); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, _, err := ParseHeader(bytes.Clone(good)[:3]); !errors.Is(err, ErrTruncated) {
		t.Errorf("short prefix: %v", err)
	}
	b := bytes.Clone(good)
	b[2] = Version + 1
	if _, _, err := ParsePrefix(b); !IsVersionMismatch(err) {
		t.Errorf("IsVersionMismatch(%v) = false", err)
	}
	// Interpolated ticks ahead of Tick or further back than MaxInterpLag
	// cannot be encoded.
	for _, bad := range []Header{
		{Type: PacketData, Tick: 100, InterpFrom: 101},
		{Type: PacketData, Tick: 100, InterpTo: 101, InterpFrom: 100},
		{Type: PacketData, Tick: MaxInterpLag + 10, InterpFrom: 9, InterpTo: MaxInterpLag + 10},
		{Type: PacketChallenge},
	} {
		if _, err := bad.Append(nil); err == nil {
			t.Errorf("Append(%+v) succeeded", bad)
		}
	}
	// Wrap-around: ticks near 2^32 and interpolated ticks before the wrap.
	w := Header{Type: PacketData, Tick: 5, InterpFrom: 1<<32 - 10, InterpTo: 2}
	wb, err := w.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := ParseHeader(wb); got != w {
		t.Errorf("wrapped ticks: got %+v want %+v", got, w)
	}
}

func TestBlend(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want uint16
	}{{-1, 0}, {0, 0}, {0.5, 32768}, {1, BlendOne}, {2, BlendOne}} {
		if got := BlendFromFloat(c.in); got != c.want {
			t.Errorf("BlendFromFloat(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	h := Header{Blend: BlendOne}
	if h.BlendValue() != 1 {
		t.Errorf("BlendValue = %v", h.BlendValue())
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	g := newGen(4)
	for range 200 {
		req := ConnectionRequest{KeyID: g.r.Uint32(), GameID: g.r.Uint64(), Expires: g.r.Uint64()}
		copy(req.TokenNonce[:], g.bytes(NonceSize))
		copy(req.SealedToken[:], g.bytes(TokenSealedSize))
		b := mustAppend(t, &req)
		got, n, err := ParseConnectionRequest(b)
		if err != nil || n != ConnectionRequestSize || got != req {
			t.Fatalf("request: %v %d", err, n)
		}
		wantTruncated(t, "request", b, func(b []byte) error { _, _, err := ParseConnectionRequest(b); return err })

		ch := g.challenge()
		b = mustAppend(t, &ch)
		if got, n, err := ParseChallenge(b); err != nil || n != ChallengeSize || got != ch {
			t.Fatalf("challenge: %v", err)
		}
		if !bytes.Equal(b[ChallengeSize-RandomSize:], ch.ServerRandom[:]) {
			t.Fatalf("server random not at the end of the challenge: %x", b)
		}
		if len(b) > ConnectionRequestSize {
			t.Fatalf("challenge (%d bytes) larger than request", len(b))
		}
		wantTruncated(t, "challenge", b, func(b []byte) error { _, _, err := ParseChallenge(b); return err })

		resp := g.challengeResponse()
		b = mustAppend(t, &resp)
		if got, n, err := ParseChallengeResponse(b); err != nil || n != ChallengeResponseSize || got != resp {
			t.Fatalf("response: %v", err)
		}
		if !bytes.Equal(b[ResponseTagOffset:], resp.Tag[:]) || !bytes.Equal(b[ResponseTagOffset-RandomSize:ResponseTagOffset], resp.ClientRandom[:]) {
			t.Fatalf("response random or tag misplaced: %x", b)
		}
		if n := resp.Nonce(); n != Nonce(NonceResponse, le.Uint64(resp.ClientRandom[:])) {
			t.Fatalf("response nonce %x", n)
		}
		wantTruncated(t, "response", b, func(b []byte) error { _, _, err := ParseChallengeResponse(b); return err })

		for _, sealed := range []bool{false, true} {
			den := g.denied(sealed)
			b = mustAppend(t, &den)
			if got, n, err := ParseDenied(b); err != nil || n != len(b) || !reflect.DeepEqual(got, den) {
				t.Fatalf("denied %+v: got %+v, %d, %v", den, got, n, err)
			}
			if pt, s, err := ParsePrefix(b); err != nil || pt != PacketDenied || s != sealed {
				t.Fatalf("denied prefix: %v %v %v", pt, s, err)
			}
			if sealed {
				if len(b) != DeniedSealedSize+len(den.Detail) || le.Uint64(b[PrefixSize+1:]) != den.Counter || !bytes.Equal(b[DeniedTagOffset+len(den.Detail):], den.Tag[:]) {
					t.Fatalf("sealed denial misplaced: %x", b)
				}
				if den.Nonce() != Nonce(NonceDenied, den.Counter) {
					t.Fatal("denial nonce")
				}
			}
			// A sealed denial ends with the datagram: a shorter one with a
			// detail is a shorter detail, which only the tag catches.
			wantTruncated(t, "denied", b[:min(len(b), DeniedSealedSize)], func(b []byte) error { _, _, err := ParseDenied(b); return err })
		}

		tok := g.tokenPrivate()
		b = mustAppend(t, &tok)
		if got, n, err := ParseTokenPrivate(b); err != nil || n != TokenPrivateSize || got != tok {
			t.Fatalf("token: %v\n got %+v\nwant %+v", err, got, tok)
		}
		if le.Uint64(b[128:]) != tok.Created || b[136] != tok.ServerCount || le.Uint32(b[140:]) != tok.Servers[0] {
			t.Fatalf("token fields misplaced: %x", b)
		}
		wantTruncated(t, "token", b, func(b []byte) error { _, _, err := ParseTokenPrivate(b); return err })

		acc := g.acceptBody()
		b = mustAppend(t, &acc)
		if got, n, err := ParseAcceptBody(b); err != nil || n != len(b) || got != acc {
			t.Fatalf("accept: %v", err)
		}
		for i := range len(b) {
			if _, _, err := ParseAcceptBody(b[:i]); !errors.Is(err, ErrTruncated) {
				t.Fatalf("accept prefix %d: %v", i, err)
			}
		}
	}
}

// The token's additional data names the key, the game and the expiry, in
// that order after the version.
func TestTokenAdditionalData(t *testing.T) {
	ad := TokenAdditionalData([]byte{0xaa}, 0x01020304, 5, 6)
	want := []byte{0xaa, Magic0, Magic1, Version, 4, 3, 2, 1, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(ad, want) || len(ad)-1 != TokenAdditionalDataSize {
		t.Fatalf("TokenAdditionalData = %x, want %x", ad, want)
	}
}

// ServerAddrHash is the first four bytes of SHA-256, little-endian.
func TestServerAddrHash(t *testing.T) {
	for _, c := range []struct {
		addr string
		want uint32
	}{
		{"127.0.0.1:7777", 0x433397a9},
		{"[::1]:7777", 0x5ddafa86},
		{"game.example.com:7777", 0x1c15bdee},
	} {
		if got := ServerAddrHash(c.addr); got != c.want {
			t.Errorf("ServerAddrHash(%q) = %#x, want %#x", c.addr, got, c.want)
		}
	}
}

func TestHandshakeRejects(t *testing.T) {
	tok := TokenPrivate{PlayerCount: 0}
	if _, err := tok.Append(nil); err == nil {
		t.Error("token with no players encoded")
	}
	tok.PlayerCount = 1
	tok.ServerCount = 2
	tok.Servers = [MaxTokenServers]uint32{1, 2}
	good, err := tok.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		off  int
		v    byte
	}{
		{"player count 0", offTokCount, 0},
		{"player count 5", offTokCount, MaxPlayersPerConnection + 1},
		{"reserved after players", offTokReserved1, 1},
		{"reserved before user data", offTokUserData - 1, 1},
		{"reserved after server count", offTokReserved2, 1},
		{"reserved before servers", offTokServers - 1, 1},
		{"reserved after servers", offTokReserved3, 1},
		{"last byte", TokenPrivateSize - 1, 1},
		{"server count 9", offTokServerCount, MaxTokenServers + 1},
		{"unused server slot", offTokServers + 4*2, 1},
		{"last unused server slot", offTokServers + 4*MaxTokenServers - 1, 1},
	} {
		b := bytes.Clone(good)
		b[c.off] = c.v
		if _, _, err := ParseTokenPrivate(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("token %s: %v", c.name, err)
		}
	}
	// A full server list parses; the encoder refuses what the parser would.
	full := tok
	full.ServerCount = MaxTokenServers
	for i := range full.Servers {
		full.Servers[i] = uint32(i + 1)
	}
	if b, err := full.Append(nil); err != nil {
		t.Errorf("8 servers: %v", err)
	} else if got, _, err := ParseTokenPrivate(b); err != nil || got != full {
		t.Errorf("8 servers: %v", err)
	}
	for _, bad := range []TokenPrivate{
		{PlayerCount: 1, ServerCount: MaxTokenServers + 1},
		{PlayerCount: 1, ServerCount: 1, Servers: [MaxTokenServers]uint32{1, 2}},
	} {
		if _, err := bad.Append(nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("token %+v encoded: %v", bad, err)
		}
	}
	sealedDenial := func(version, typeByte, reason byte) []byte {
		return append([]byte{'t', 'w', version, typeByte, reason}, make([]byte, 8+SealOverhead)...)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"reason 0", []byte{'t', 'w', Version, byte(PacketDenied), 0}},
		{"reason past the last", []byte{'t', 'w', Version, byte(PacketDenied), byte(denyReasonEnd)}},
		{"reserved flag", []byte{'t', 'w', Version, byte(PacketDenied) | flagReserved, byte(DenyServerFull)}},
		{"other type", []byte{'t', 'w', Version, byte(PacketChallenge), byte(DenyServerFull)}},
		{"sealed reason 0", sealedDenial(Version, byte(PacketDenied)|FlagSealed, 0)},
		{"sealed, other version", sealedDenial(Version+1, byte(PacketDenied)|FlagSealed, byte(DenyServerFull))},
	} {
		if _, _, err := ParseDenied(c.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("denied %s: %v", c.name, err)
		}
	}
	// A plaintext denial parses whatever version it names: a server answers
	// a request of another version in the version it speaks.
	if d, _, err := ParseDenied([]byte{'t', 'w', Version + 7, byte(PacketDenied), byte(DenyVersion)}); err != nil || d.Reason != DenyVersion {
		t.Errorf("foreign-version denial: %v", err)
	}
	for _, bad := range []Denied{{}, {Reason: denyReasonEnd, Sealed: true}} {
		if _, err := bad.Append(nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("denial %+v encoded: %v", bad, err)
		}
	}
	// The sealed flag is valid on the session packets and the denial only.
	for pt := PacketType(1); pt < packetTypeEnd; pt++ {
		got, sealed, err := ParsePrefix([]byte{'t', 'w', Version, byte(pt) | FlagSealed})
		if pt.HasSessionHeader() || pt == PacketDenied {
			if err != nil || got != pt || !sealed {
				t.Errorf("sealed %v: %v, %v, %v", pt, got, sealed, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Errorf("sealed %v: %v", pt, err)
		}
	}
	for r := DisconnectReason(1); r < disconnectReasonEnd; r++ {
		if got, n, err := ParseDisconnectReason([]byte{byte(r)}); err != nil || got != r || n != 1 {
			t.Errorf("disconnect %v: %v", r, err)
		}
	}
	if _, _, err := ParseDisconnectReason([]byte{0}); err == nil {
		t.Error("disconnect reason 0 accepted")
	}
}

func TestFrameRejects(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
	}{
		{"unknown frame type", []byte{0x7f}},
		{"frame type zero", []byte{0}},
		{"message unknown flag", []byte{byte(FrameMessage), 0x80, 0, 0}},
		{"input count zero", []byte{byte(FrameInput), 0, 0, 0, 0, 0, 0, 0, 1}},
		{"input count too big", []byte{byte(FrameInput), 0, 0, 0, 0, 0, 0, MaxInputsPerFrame + 1, 1}},
		{"input size zero", []byte{byte(FrameInput), 0, 0, 0, 0, 0, 0, 1, 0}},
		{"input too many bytes", []byte{byte(FrameInput), 0, 0, 0, 0, 0, 0, 2, 0x81, 0x04}},
		{"varint overlong", []byte{byte(FrameReliable), 0x80, 0x00}},
		{"varint overflow", []byte{byte(FrameReliable), 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"delta codec", []byte{byte(FrameSnapshotDelta), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0}},
		{"full cause", []byte{byte(FrameFullSnapshot), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"full predicted codec", []byte{byte(FrameFullSnapshot), 1, 0, 0, 0, 0, 0, 0, 0, 0, byte(CodecPredictedXORRLE), 0, 0}},
		{"full raw too big", []byte{byte(FrameFullSnapshot), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x80, 0x80, 0x08, 0}},
		{"resync reason", []byte{byte(FrameResyncRequest), 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"control code", []byte{byte(FrameControl), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"control text too long", []byte{byte(FrameControl), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x02}},
	}
	for _, c := range cases {
		_, _, err := SkipFrame(c.b)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", c.name, err)
		}
	}
	// Encoders refuse values the format cannot carry.
	bad := []frame{
		&InputFrame{Count: 0, Size: 1},
		&InputFrame{Count: 2, Size: 1, Data: []byte{1}},
		&FullSnapshotFrame{Cause: 0},
		&FullSnapshotFrame{Cause: CauseJoin, RawLen: MaxSnapshotSize + 1},
		&ResyncRequestFrame{},
		&ControlFrame{Code: ControlPlayerJoined, Text: make([]byte, MaxControlText+1)},
		&SnapshotDeltaFrame{Codec: codecEnd},
		&FullSnapshotFrame{Cause: CauseJoin, Codec: CodecPredictedXORRLE},
		&ReliableFrame{Data: make([]byte, MaxPacketSizeLimit+1)},
		&RosterFrame{},
		&StandbyStepFrame{},
		&StandbyStateFrame{},
		&SuccessorFrame{},
		&SuccessorFrame{Kind: SuccessorToken},
		&SuccessorFrame{Kind: SuccessorToken, Token: make([]byte, MaxSuccessorToken+1)},
		&SuccessorFrame{Kind: SuccessorToken, KeyID: 1, Token: []byte("t")},
		&SuccessorFrame{Kind: SuccessorKey, Token: []byte("t")},
		&StandbyStateFrame{Snapshots: []FullSnapshotFrame{{Cause: CauseMigration, RawLen: MaxSnapshotSize}, {Cause: CauseMigration, RawLen: MaxSnapshotSize},
			{Cause: CauseMigration, RawLen: MaxSnapshotSize}, {Cause: CauseMigration, RawLen: MaxSnapshotSize}, {Cause: CauseMigration, RawLen: 1}}},
		&StandbyStepFrame{InputSize: 2, Inputs: []StandbyInput{{Data: []byte{1}}}},
		&StandbyStepFrame{InputSize: 2, Changes: []StandbyChange{{Join: true, Reason: []byte("x")}}},
		&StandbyStepFrame{InputSize: 2, Messages: make([]StandbyMessage, MaxStandbyMessages+1)},
		&RosterFrame{Members: make([]RosterMember, MaxRosterMembers+1)},
		&RosterFrame{Members: []RosterMember{{Addr: make([]byte, MaxRosterAddr+1)}}},
		&ParityFrame{Shards: 1, Lens: []byte{3, 0}, Shard: make([]byte, 2)},                        // shard not the longest member
		&ParityFrame{Shards: 1, Index: 1, Lens: []byte{3, 0}, Shard: make([]byte, 3)},              // index beyond the shards
		&ParityFrame{Shards: 1, Gaps: []byte{0}, Lens: []byte{3, 0, 3, 0}, Shard: make([]byte, 3)}, // a zero gap
		&ParityFrame{Shards: 1, Lens: []byte{0, 0}},                                                // an empty member
		&ParityFrame{Shards: 1, Gaps: make([]byte, MaxParityMembers), Lens: make([]byte, 2*MaxParityMembers+2)},
	}
	for _, f := range bad {
		if _, err := f.Append(nil); err == nil {
			t.Errorf("%T %+v encoded", f, f)
		}
	}
}

func TestFrameReader(t *testing.T) {
	g := newGen(5)
	for range 200 {
		p, want := g.payload(DefaultMaxPacketSize)
		r := FrameReader{Payload: p}
		i := 0
		for r.Next() {
			got, _, err := parseAny(r.Type(), r.Frame())
			if err != nil || !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("frame %d: %v", i, err)
			}
			i++
		}
		if r.Err() != nil || i != len(want) {
			t.Fatalf("read %d of %d frames, err %v", i, len(want), r.Err())
		}
	}
	// Too many frames.
	var p []byte
	for range MaxFramesPerPacket + 1 {
		p, _ = (&AckOnlyFrame{}).Append(p)
	}
	r := FrameReader{Payload: p}
	for r.Next() {
	}
	if !errors.Is(r.Err(), ErrMalformed) {
		t.Errorf("%d frames: err = %v", MaxFramesPerPacket+1, r.Err())
	}
	// A bad frame in the middle stops the reader with its error.
	p, _ = (&AckOnlyFrame{}).Append(nil)
	p = append(p, 0x7f)
	r = FrameReader{Payload: p}
	n := 0
	for r.Next() {
		n++
	}
	if n != 1 || !errors.Is(r.Err(), ErrMalformed) {
		t.Errorf("n=%d err=%v", n, r.Err())
	}
}

func TestSnapshotDeltaInPlace(t *testing.T) {
	b := []byte{0xaa} // something before the frame
	b, mark, err := BeginSnapshotDelta(b, 7, 8, 9, CodecXORRLE)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, 1, 2, 3, 4, 5)
	if b, err = EndSnapshotDelta(b, mark, 2); err != nil {
		t.Fatal(err)
	}
	f, n, err := ParseSnapshotDeltaFrame(b[mark:])
	if err != nil || n != len(b)-mark {
		t.Fatal(err)
	}
	want := SnapshotDeltaFrame{Tick: 7, Revision: 8, BaseRevision: 9, Codec: CodecXORRLE, Count: 2, Data: []byte{1, 2, 3, 4, 5}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v", f)
	}
	if _, err := EndSnapshotDelta(b, 0, 1); err == nil {
		t.Error("EndSnapshotDelta accepted a mark that is not a delta frame")
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<32 - 1} {
		b := AppendVarint(nil, v)
		if len(b) != VarintLen(v) {
			t.Errorf("VarintLen(%d) = %d, encoded %d", v, VarintLen(v), len(b))
		}
		got, n := parseVarint(b)
		if got != v || n != len(b) {
			t.Errorf("parseVarint(%x) = %d, %d", b, got, n)
		}
		if _, n := parseVarint(b[:len(b)-1]); n != 0 {
			t.Errorf("truncated %x: n = %d", b, n)
		}
	}
	for _, b := range [][]byte{{0x80, 0}, {0xff, 0xff, 0xff, 0xff, 0x10}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		if _, n := parseVarint(b); n != -1 {
			t.Errorf("parseVarint(%x) n = %d, want -1", b, n)
		}
	}
}

func TestNonceUnique(t *testing.T) {
	a, b, c := Nonce(NonceSession, 1), Nonce(NonceResponse, 1), Nonce(NonceDenied, 1)
	if a == b || a == c || b == c {
		t.Fatal("kinds share a nonce")
	}
	if Nonce(NonceSession, 1) == Nonce(NonceSession, 2) {
		t.Fatal("counters share a nonce")
	}
}

// Encoding and decoding allocate nothing.
func TestZeroAllocs(t *testing.T) {
	g := newGen(6)
	h := g.header(PacketData, true)
	buf := make([]byte, 0, MaxPacketSizeLimit)
	hb, _ := h.Append(nil)
	if n := testing.AllocsPerRun(100, func() {
		buf, _ = h.Append(buf[:0])
	}); n != 0 {
		t.Errorf("Header.Append: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = ParseHeader(hb)
	}); n != 0 {
		t.Errorf("ParseHeader: %v allocs", n)
	}
	for ft := FrameType(1); ft < frameTypeEnd; ft++ {
		f := g.frame(ft)
		fb := mustAppend(t, f)
		if n := testing.AllocsPerRun(100, func() {
			buf, _ = f.Append(buf[:0])
		}); n != 0 {
			t.Errorf("%v Append: %v allocs", ft, n)
		}
		if n := testing.AllocsPerRun(100, func() {
			_, _, _ = SkipFrame(fb)
		}); n != 0 {
			t.Errorf("%v parse: %v allocs", ft, n)
		}
	}
	p, _ := g.payload(DefaultMaxPacketSize)
	if n := testing.AllocsPerRun(100, func() {
		r := FrameReader{Payload: p}
		for r.Next() {
		}
	}); n != 0 {
		t.Errorf("FrameReader: %v allocs", n)
	}
	// Rejecting garbage allocates nothing either.
	garbage := []byte{'t', 'w', Version, byte(PacketData), 1, 2}
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = ParseHeader(garbage)
		_, _, _ = SkipFrame([]byte{byte(FrameInput), 1})
	}); n != 0 {
		t.Errorf("rejects: %v allocs", n)
	}
}

func TestNetworkID(t *testing.T) {
	id := MakeNetworkID(MaxSpawner, MaxIndex)
	if id.Spawner() != MaxSpawner || id.Index() != MaxIndex || uint32(id) != 1<<32-1 {
		t.Fatalf("max id %x: spawner %d index %d", uint32(id), id.Spawner(), id.Index())
	}
	id = MakeNetworkID(7, 12345)
	if id.Spawner() != 7 || id.Index() != 12345 {
		t.Fatalf("id %x: spawner %d index %d", uint32(id), id.Spawner(), id.Index())
	}
	if MakeNetworkID(0, MaxIndex+2).Index() != 1 {
		t.Fatal("index not masked")
	}
}
