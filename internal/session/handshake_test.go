package session

import (
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
	tok.req = proto.ConnectionRequest{GameID: 42, Expires: uint64(testNow.Add(30 * time.Second).Unix())}
	rand.Read(tok.req.TokenNonce[:])
	if err := SealToken(key, &tok.req.SealedToken, &tok.req.TokenNonce, tok.req.GameID, tok.req.Expires, &tok.priv); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenOpen(t *testing.T) {
	key := testKey(t)
	o, err := newTokenOpener(&key)
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(t, &key)
	req := tok.Request()
	priv, deny := o.open(&req, testNow)
	if deny != 0 {
		t.Fatalf("valid token denied: %v", deny)
	}
	if priv.ClientID != 7 || priv.ClientToServerKey != tok.priv.ClientToServerKey || priv.ServerToClientKey != tok.priv.ServerToClientKey ||
		priv.PlayerCount != 2 || priv.Players[0] != 3 || priv.Players[1] != 4 {
		t.Fatalf("opened %+v", priv)
	}

	cases := []struct {
		name string
		mut  func(r *proto.ConnectionRequest)
		now  time.Time
		want proto.DenyReason
	}{
		{"expired", nil, time.Unix(int64(tok.req.Expires), 0), proto.DenyExpired},
		{"altered game", func(r *proto.ConnectionRequest) { r.GameID = 43 }, testNow, proto.DenyInvalidToken},
		{"tampered seal", func(r *proto.ConnectionRequest) { r.SealedToken[10] ^= 1 }, testNow, proto.DenyInvalidToken},
		{"tampered expiry", func(r *proto.ConnectionRequest) { r.Expires += 3600 }, testNow, proto.DenyInvalidToken},
		{"tampered nonce", func(r *proto.ConnectionRequest) { r.TokenNonce[0] ^= 1 }, testNow, proto.DenyInvalidToken},
	}
	for _, c := range cases {
		r := tok.Request()
		if c.mut != nil {
			c.mut(&r)
		}
		if _, deny := o.open(&r, c.now); deny != c.want {
			t.Errorf("%s: deny = %v, want %v", c.name, deny, c.want)
		}
	}
	// A token minted with another server's key does not open.
	otherKey := testKey(t)
	other := mint(t, &otherKey)
	r := other.Request()
	if _, deny := o.open(&r, testNow); deny != proto.DenyInvalidToken {
		t.Errorf("foreign key: deny = %v", deny)
	}
	if n := testing.AllocsPerRun(100, func() { o.open(&req, testNow) }); n != 0 {
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
	pkt, _ := resp.Append(nil)
	tag := responseTag(aead, nil, pkt)
	if len(tag) != proto.SealOverhead {
		t.Fatalf("tag %d bytes", len(tag))
	}
	copy(pkt[proto.ResponseTagOffset:], tag)
	n := proto.Nonce(proto.NonceResponse, 1)
	if _, err := aead.Open(nil, n[:], pkt[proto.ResponseTagOffset:], pkt[:proto.ResponseTagOffset]); err != nil {
		t.Fatalf("tag does not verify: %v", err)
	}
	other, _ := NewAEAD(make([]byte, 32))
	if string(responseTag(other, nil, pkt)) == string(tag) {
		t.Fatal("tag does not depend on the key")
	}
}
