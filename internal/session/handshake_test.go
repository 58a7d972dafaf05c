package session

import (
	"bytes"
	"crypto/rand"
	"net/netip"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testKey(t testing.TB) [proto.KeySize]byte {
	t.Helper()
	var k [proto.KeySize]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return k
}

// testToken is a sealed token for client 7 with players 3 and 4 in game
// 42, valid for 30 s from testNow.
type testToken struct {
	priv proto.TokenPrivate
	req  proto.ConnectionRequest
}

func (tok *testToken) Request() proto.ConnectionRequest { return tok.req }

func mint(t testing.TB, key *[proto.KeySize]byte) *testToken {
	t.Helper()
	tok := &testToken{}
	tok.priv = proto.TokenPrivate{ClientID: 7, PlayerCount: 2, Players: [4]uint16{3, 4}}
	rand.Read(tok.priv.ClientToServerKey[:])
	rand.Read(tok.priv.ServerToClientKey[:])
	tok.priv.Created = uint64(testNow.Unix())
	tok.req = proto.ConnectionRequest{KeyID: KeyID(key), GameID: 42, Expires: uint64(testNow.Add(30 * time.Second).Unix())}
	rand.Read(tok.req.TokenNonce[:])
	if err := SealToken(key, &tok.req.SealedToken, &tok.req.TokenNonce, tok.req.GameID, tok.req.Expires, &tok.priv); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenOpen(t *testing.T) {
	key, old := testKey(t), testKey(t)
	r, err := newKeyring([]*[proto.KeySize]byte{&key, &old})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(t, &key)
	req := tok.Request()
	priv, deny, opened := r.open(&req, testNow)
	if deny != 0 || !opened {
		t.Fatalf("valid token denied: %v", deny)
	}
	if priv.ClientID != 7 || priv.ClientToServerKey != tok.priv.ClientToServerKey || priv.ServerToClientKey != tok.priv.ServerToClientKey ||
		priv.PlayerCount != 2 || priv.Players[0] != 3 || priv.Players[1] != 4 {
		t.Fatalf("opened %+v", priv)
	}
	// A token sealed with the previous key opens too (rotation).
	prev := mint(t, &old)
	if req := prev.Request(); func() proto.DenyReason { _, d, _ := r.open(&req, testNow); return d }() != 0 {
		t.Fatal("token of the previous key refused")
	}

	expires := time.Unix(int64(tok.req.Expires), 0)
	cases := []struct {
		name   string
		mut    func(r *proto.ConnectionRequest)
		now    time.Time
		want   proto.DenyReason
		opened bool
	}{
		{"expired within the skew", nil, expires.Add(TokenSkew - time.Second), 0, true},
		{"expired", nil, expires.Add(TokenSkew + time.Second), proto.DenyExpired, true},
		{"created in the future", nil, testNow.Add(-TokenSkew - time.Second), proto.DenyExpired, true},
		{"altered game", func(r *proto.ConnectionRequest) { r.GameID = 43 }, testNow, proto.DenyInvalidToken, false},
		{"tampered seal", func(r *proto.ConnectionRequest) { r.SealedToken[10] ^= 1 }, testNow, proto.DenyInvalidToken, false},
		{"tampered expiry", func(r *proto.ConnectionRequest) { r.Expires += 3600 }, testNow, proto.DenyInvalidToken, false},
		{"tampered nonce", func(r *proto.ConnectionRequest) { r.TokenNonce[0] ^= 1 }, testNow, proto.DenyInvalidToken, false},
		{"other key's id", func(r *proto.ConnectionRequest) { r.KeyID = KeyID(&old) }, testNow, proto.DenyInvalidToken, false},
		{"unknown key id", func(r *proto.ConnectionRequest) { r.KeyID++ }, testNow, proto.DenyUnknownKey, false},
	}
	for _, c := range cases {
		req := tok.Request()
		if c.mut != nil {
			c.mut(&req)
		}
		if _, deny, opened := r.open(&req, c.now); deny != c.want || opened != c.opened {
			t.Errorf("%s: deny = %v (opened %v), want %v (opened %v)", c.name, deny, opened, c.want, c.opened)
		}
	}
	// A token minted with another server's key does not open.
	otherKey := testKey(t)
	other := mint(t, &otherKey)
	oreq := other.Request()
	if _, deny, _ := r.open(&oreq, testNow); deny != proto.DenyUnknownKey {
		t.Errorf("foreign key: deny = %v", deny)
	}
	if n := testing.AllocsPerRun(100, func() { r.open(&req, testNow) }); n != 0 {
		t.Errorf("open: %v allocs", n)
	}
}

func TestCookie(t *testing.T) {
	jar, err := newCookieJar(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d := cookieData{
		priv:         proto.TokenPrivate{ClientID: 9, PlayerCount: 2, Players: [4]uint16{5, 6}},
		tokenExpires: uint64(testNow.Add(time.Minute).Unix()),
		gameID:       42,
	}
	rand.Read(d.priv.ClientToServerKey[:])
	rand.Read(d.priv.ServerToClientKey[:])
	rand.Read(d.priv.UserData[:])
	rand.Read(d.tokenNonce[:])
	rand.Read(d.serverRandom[:])
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	var c1, c2 [proto.CookieSize]byte
	jar.issue(&c1, &d, addr, testNow)
	jar.issue(&c2, &d, addr, testNow)
	if c1 == c2 || string(c1[:8]) == string(c2[:8]) {
		t.Fatal("two cookies share a counter")
	}
	got, deny := jar.open(&c1, addr, testNow.Add(time.Second))
	if deny != 0 || got != d {
		t.Fatalf("open = %+v, %v; want %+v", got, deny, d)
	}
	if _, deny := jar.open(&c1, netip.MustParseAddrPort("192.0.2.1:5001"), testNow); deny != proto.DenyBadCookie {
		t.Errorf("other port: %v", deny)
	}
	if _, deny := jar.open(&c1, netip.MustParseAddrPort("192.0.2.2:5000"), testNow); deny != proto.DenyBadCookie {
		t.Errorf("other address: %v", deny)
	}
	if _, deny := jar.open(&c1, addr, testNow.Add(5*time.Second)); deny != proto.DenyExpired {
		t.Errorf("after lifetime: %v", deny)
	}
	bad := c1
	bad[100] ^= 1
	if _, deny := jar.open(&bad, addr, testNow); deny != proto.DenyBadCookie {
		t.Errorf("tampered: %v", deny)
	}
	// A cookie never outlives its token.
	var c3 [proto.CookieSize]byte
	short := d
	short.tokenExpires = uint64(testNow.Add(2 * time.Second).Unix())
	jar.issue(&c3, &short, addr, testNow)
	if _, deny := jar.open(&c3, addr, testNow.Add(3*time.Second)); deny != proto.DenyExpired {
		t.Errorf("past token expiry: %v", deny)
	}
	// Another process's jar cannot open it.
	jar2, _ := newCookieJar(5 * time.Second)
	if _, deny := jar2.open(&c1, addr, testNow); deny != proto.DenyBadCookie {
		t.Errorf("other jar: %v", deny)
	}
	if n := testing.AllocsPerRun(100, func() {
		jar.issue(&c1, &d, addr, testNow)
		_, _ = jar.open(&c1, addr, testNow)
	}); n != 0 {
		t.Errorf("issue+open: %v allocs", n)
	}
}

func TestResponseTag(t *testing.T) {
	key := testKey(t)
	aead, _ := NewAEAD(key[:])
	var resp proto.ChallengeResponse
	resp.Cookie[0] = 1
	resp.ClientRandom[0] = 9
	pkt, _ := resp.Append(nil)
	tag := responseTag(aead, nil, &resp, pkt)
	if len(tag) != proto.SealOverhead {
		t.Fatalf("tag %d bytes", len(tag))
	}
	copy(pkt[proto.ResponseTagOffset:], tag)
	// The nonce is the client's: its random's first 8 bytes.
	n := proto.Nonce(proto.NonceResponse, 9)
	if _, err := aead.Open(nil, n[:], pkt[proto.ResponseTagOffset:], pkt[:proto.ResponseTagOffset]); err != nil {
		t.Fatalf("tag does not verify: %v", err)
	}
	other, _ := NewAEAD(make([]byte, 32))
	if string(responseTag(other, nil, &resp, pkt)) == string(tag) {
		t.Fatal("tag does not depend on the key")
	}
}

// handshake runs a client's handshake with token tok against a server's
// responder from addr and returns the client's session and the server's
// keys; a denial fails the test.
func handshake(t *testing.T, h *Responder, tok *testToken, addr netip.AddrPort, connID uint32) (*Initiator, [proto.KeySize]byte, [proto.KeySize]byte, []byte) {
	t.Helper()
	req := tok.Request()
	ini, err := NewInitiator(&req, &tok.priv.ClientToServerKey, &tok.priv.ServerToClientKey)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(*Admission) proto.DenyReason { return 0 }
	ch := h.Request(ini.Packet(), addr, testNow, nil, admit)
	if ch[3] != byte(proto.PacketChallenge) {
		reason, _, _, _ := ini.Denied(ch)
		t.Fatalf("request answered with %v", reason)
	}
	if err := ini.Challenge(ch); err != nil {
		t.Fatal(err)
	}
	resp := ini.Packet()
	hs, out, ok := h.Response(resp, addr, testNow, nil)
	if !ok {
		reason, _, _, _ := ini.Denied(out)
		t.Fatalf("response denied: %v", reason)
	}
	c2s, s2c, deny := h.Use(&hs, connID, testNow)
	if deny != 0 {
		t.Fatalf("use denied: %v", deny)
	}
	return ini, c2s, s2c, resp
}

// TestFreshKeysPerSession: one token presented to two servers that share
// its key (a token may name several servers) opens two sessions whose
// keys differ, so their packet numbers, which both start at 1, never seal
// twice under one (key, nonce). Each client derives the keys its server
// derived.
func TestFreshKeysPerSession(t *testing.T) {
	key := testKey(t)
	cfg := ResponderConfig{Keys: []*[proto.KeySize]byte{&key}, CookieLifetime: time.Second}
	a, _ := NewResponder(cfg)
	b, _ := NewResponder(cfg)
	tok := mint(t, &key)
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	ia, ac2s, as2c, _ := handshake(t, a, tok, addr, 7)
	ib, bc2s, bs2c, _ := handshake(t, b, tok, addr, 7)
	if ac2s == bc2s || as2c == bs2c || ac2s == as2c {
		t.Fatal("two sessions of one token share a key")
	}
	for _, k := range [][proto.KeySize]byte{ac2s, as2c, bc2s, bs2c} {
		if k == tok.priv.ClientToServerKey || k == tok.priv.ServerToClientKey {
			t.Fatal("a session key is a token key")
		}
	}
	// Each client derives its server's keys.
	for _, c := range []struct {
		ini      *Initiator
		c2s, s2c [proto.KeySize]byte
	}{{ia, ac2s, as2c}, {ib, bc2s, bs2c}} {
		c2s, s2c := SessionKeys(c.ini.clientKey, c.ini.serverKey, &c.ini.serverRandom, &c.ini.clientRandom, 7)
		if c2s != c.c2s || s2c != c.s2c {
			t.Fatal("client and server derived different keys")
		}
	}
	// And another connection id gives other keys.
	if c2s, _ := SessionKeys(ia.clientKey, ia.serverKey, &ia.serverRandom, &ia.clientRandom, 8); c2s == ac2s {
		t.Fatal("keys do not depend on the connection id")
	}
}

// TestTokenOpensOneSession: a token that opened a connection is denied
// afterwards (sealed, so the client can trust it), and a captured
// response replayed later creates nothing.
func TestTokenOpensOneSession(t *testing.T) {
	key := testKey(t)
	h, _ := NewResponder(ResponderConfig{Keys: []*[proto.KeySize]byte{&key}, CookieLifetime: 5 * time.Second})
	tok := mint(t, &key)
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	_, _, _, resp := handshake(t, h, tok, addr, 1)

	// The replayed response verifies (it is genuine), but its token was used.
	hs, _, ok := h.Response(resp, addr, testNow.Add(time.Second), nil)
	if !ok {
		t.Fatal("replayed response did not verify")
	}
	if _, _, deny := h.Use(&hs, 2, testNow.Add(time.Second)); deny != proto.DenyTokenUsed {
		t.Fatalf("replayed response: %v, want token used", deny)
	}
	// A new request with the token gets a sealed "token used".
	req := tok.Request()
	ini, _ := NewInitiator(&req, &tok.priv.ClientToServerKey, &tok.priv.ServerToClientKey)
	out := h.Request(ini.Packet(), addr, testNow, nil, func(*Admission) proto.DenyReason { return 0 })
	reason, honour, _, err := ini.Denied(out)
	if err != nil || !honour || reason != proto.DenyTokenUsed || len(out) != proto.DeniedSealedSize {
		t.Fatalf("second request: %v honoured %v (%d bytes), %v", reason, honour, len(out), err)
	}
	// Once the token expired it is forgotten.
	later := time.Unix(int64(tok.req.Expires), 0).Add(TokenSkew + time.Second)
	h.forgetExpired(later)
	if h.UsedTokens() != 0 {
		t.Fatalf("%d used tokens remembered after expiry", h.UsedTokens())
	}
}

// TestDenialsTheClientHonours: sealed denials end a handshake only when
// they verify; plaintext ones only before a challenge and only for the
// reasons a server that could not open the token gives.
func TestDenialsTheClientHonours(t *testing.T) {
	key := testKey(t)
	h, _ := NewResponder(ResponderConfig{Keys: []*[proto.KeySize]byte{&key}, CookieLifetime: time.Second, ServerAddrs: []string{"game.example:7777"}})
	tok := mint(t, &key)
	req := tok.Request()
	ini, _ := NewInitiator(&req, &tok.priv.ClientToServerKey, &tok.priv.ServerToClientKey)
	plain := func(r proto.DenyReason) []byte { b, _ := (&proto.Denied{Reason: r}).Append(nil); return b }

	// The token names no server: this server says so, sealed.
	out := h.Request(ini.Packet(), netip.MustParseAddrPort("192.0.2.1:5000"), testNow, nil,
		func(*Admission) proto.DenyReason { return 0 })
	if r, honour, _, _ := ini.Denied(out); r != proto.DenyWrongServer || !honour {
		t.Fatalf("wrong server: %v honoured %v", r, honour)
	}
	forged := append([]byte(nil), out...)
	forged[proto.DeniedTagOffset] ^= 1
	if _, honour, _, _ := ini.Denied(forged); honour {
		t.Fatal("forged sealed denial honoured")
	}
	for r, want := range map[proto.DenyReason]bool{proto.DenyInvalidToken: true, proto.DenyUnknownKey: true, proto.DenyServerFull: false, proto.DenyTokenUsed: false} {
		if _, honour, _, _ := ini.Denied(plain(r)); honour != want {
			t.Errorf("plaintext %v before a challenge: honoured %v, want %v", r, honour, want)
		}
	}
	// After a challenge no plaintext denial counts.
	ch := proto.Challenge{}
	cb, _ := ch.Append(nil)
	if err := ini.Challenge(cb); err != nil {
		t.Fatal(err)
	}
	if _, honour, _, _ := ini.Denied(plain(proto.DenyInvalidToken)); honour {
		t.Fatal("plaintext denial honoured after the challenge")
	}
}

// TestDenialDetail: a sealed denial carries a detail (a join refusal's
// slot and reason) that only the token's holder can read, that nobody
// can alter, and that is cut to proto.MaxDenyDetail.
func TestDenialDetail(t *testing.T) {
	key := testKey(t)
	h, _ := NewResponder(ResponderConfig{Keys: []*[proto.KeySize]byte{&key}, CookieLifetime: time.Second})
	tok := mint(t, &key)
	req := tok.Request()
	ini, _ := NewInitiator(&req, &tok.priv.ClientToServerKey, &tok.priv.ServerToClientKey)
	hs := Handshake{Priv: tok.priv}
	want := []byte("\x02\x00slot 2 is taken")
	out := h.DenyHandshakeDetail(nil, &hs, proto.DenyJoinRefused, want)
	if len(out) != proto.DeniedSealedSize+len(want) || bytes.Contains(out, []byte("taken")) {
		t.Fatalf("denial %q: the detail must be sealed", out)
	}
	r, honour, detail, err := ini.Denied(out)
	if err != nil || !honour || r != proto.DenyJoinRefused || !bytes.Equal(detail, want) {
		t.Fatalf("got %v %v %q %v", r, honour, detail, err)
	}
	out[proto.DeniedTagOffset+3] ^= 1
	if _, honour, _, _ := ini.Denied(out); honour {
		t.Fatal("altered detail honoured")
	}
	long := h.DenyHandshakeDetail(nil, &hs, proto.DenyJoinRefused, bytes.Repeat([]byte("x"), 500))
	if _, honour, detail, _ := ini.Denied(long); !honour || len(detail) != proto.MaxDenyDetail {
		t.Fatalf("long detail: honoured %v, %d bytes", honour, len(detail))
	}
}
