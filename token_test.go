package tickwire

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testKey(t testing.TB) Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mint(t testing.TB, key Key, p TokenParams) *ConnectToken {
	t.Helper()
	tok, err := MintToken(key, p, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var defaultParams = TokenParams{GameID: 42, ClientID: 7, Players: []uint16{3, 4}, ServerAddrs: []string{"127.0.0.1:7777", "[::1]:7777"}}

func TestTokenStringRoundTrip(t *testing.T) {
	tok := mint(t, testKey(t), defaultParams)
	if !tok.Expires.Equal(testNow.Add(DefaultTokenTTL)) {
		t.Errorf("expires %v, want now+%v", tok.Expires, DefaultTokenTTL)
	}
	got, err := ParseConnectToken(tok.String())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tok) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, tok)
	}
	var viaText ConnectToken
	text, _ := tok.MarshalText()
	if err := viaText.UnmarshalText(text); err != nil || !reflect.DeepEqual(&viaText, tok) {
		t.Fatalf("text round trip: %v", err)
	}
}

func TestTokenParseRejects(t *testing.T) {
	s := mint(t, testKey(t), defaultParams).String()
	for _, bad := range []string{"", "!!!", s[:40], s + "AA", strings.Replace(s, s[:4], "AAAA", 1)} {
		if _, err := ParseConnectToken(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseConnectToken(%.20q...) = %v, want ErrBadToken", bad, err)
		}
	}
}

func TestMintRejects(t *testing.T) {
	key := testKey(t)
	for _, p := range []TokenParams{
		{ServerAddrs: []string{"a:1"}},
		{Players: []uint16{1, 2, 3, 4, 5}, ServerAddrs: []string{"a:1"}},
		{Players: []uint16{1}},
		{Players: []uint16{1}, ServerAddrs: []string{""}},
		{Players: []uint16{1}, ServerAddrs: []string{"a:1"}, TTL: -time.Second},
	} {
		if _, err := MintToken(key, p, testNow); err == nil {
			t.Errorf("MintToken(%+v) succeeded", p)
		}
	}
}

func TestTokenOpen(t *testing.T) {
	key := testKey(t)
	o, err := newTokenOpener(key)
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(t, key, defaultParams)
	req := tok.Request()
	priv, deny := o.open(&req, testNow)
	if deny != 0 {
		t.Fatalf("valid token denied: %v", deny)
	}
	if priv.ClientID != 7 || priv.ClientToServerKey != tok.ClientKey || priv.ServerToClientKey != tok.ServerKey ||
		priv.PlayerCount != 2 || priv.Players[0] != 3 || priv.Players[1] != 4 {
		t.Fatalf("opened %+v", priv)
	}

	cases := []struct {
		name string
		mut  func(r *proto.ConnectionRequest)
		now  time.Time
		want proto.DenyReason
	}{
		{"expired", nil, tok.Expires, proto.DenyExpired},
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
	other := mint(t, testKey(t), defaultParams)
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
	priv := proto.TokenPrivate{ClientID: 9, PlayerCount: 1, Players: [4]uint16{5}}
	priv.ClientToServerKey[0] = 1
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	tokExp := uint64(testNow.Add(time.Minute).Unix())
	var c1, c2 [proto.CookieSize]byte
	jar.issue(&c1, &priv, tokExp, 42, addr, testNow)
	jar.issue(&c2, &priv, tokExp, 42, addr, testNow)
	if c1 == c2 || string(c1[:8]) == string(c2[:8]) {
		t.Fatal("two cookies share a counter")
	}
	got, game, deny := jar.open(&c1, addr, testNow.Add(time.Second))
	if deny != 0 || got != priv || game != 42 {
		t.Fatalf("open = %+v, game %d, %v", got, game, deny)
	}
	if _, _, deny := jar.open(&c1, netip.MustParseAddrPort("192.0.2.1:5001"), testNow); deny != proto.DenyBadCookie {
		t.Errorf("other port: %v", deny)
	}
	if _, _, deny := jar.open(&c1, netip.MustParseAddrPort("192.0.2.2:5000"), testNow); deny != proto.DenyBadCookie {
		t.Errorf("other address: %v", deny)
	}
	if _, _, deny := jar.open(&c1, addr, testNow.Add(5*time.Second)); deny != proto.DenyExpired {
		t.Errorf("after lifetime: %v", deny)
	}
	bad := c1
	bad[100] ^= 1
	if _, _, deny := jar.open(&bad, addr, testNow); deny != proto.DenyBadCookie {
		t.Errorf("tampered: %v", deny)
	}
	// A cookie never outlives its token.
	var c3 [proto.CookieSize]byte
	jar.issue(&c3, &priv, uint64(testNow.Add(2*time.Second).Unix()), 42, addr, testNow)
	if _, _, deny := jar.open(&c3, addr, testNow.Add(3*time.Second)); deny != proto.DenyExpired {
		t.Errorf("past token expiry: %v", deny)
	}
	// Another process's jar cannot open it.
	jar2, _ := newCookieJar(5 * time.Second)
	if _, _, deny := jar2.open(&c1, addr, testNow); deny != proto.DenyBadCookie {
		t.Errorf("other jar: %v", deny)
	}
	if n := testing.AllocsPerRun(100, func() {
		jar.issue(&c1, &priv, tokExp, 42, addr, testNow)
		_, _, _ = jar.open(&c1, addr, testNow)
	}); n != 0 {
		t.Errorf("issue+open: %v allocs", n)
	}
}

func TestResponseTag(t *testing.T) {
	key := testKey(t)
	aead, _ := newAEAD(key[:])
	var resp proto.ChallengeResponse
	resp.Cookie[0] = 1
	pkt, _ := resp.Append(nil)
	tag := responseTag(aead, nil, pkt)
	if len(tag) != proto.SealOverhead {
		t.Fatalf("tag %d bytes", len(tag))
	}
	copy(pkt[proto.PrefixSize+proto.CookieSize:], tag)
	n := proto.Nonce(proto.NonceResponse, 1)
	if _, err := aead.Open(nil, n[:], pkt[proto.PrefixSize+proto.CookieSize:], pkt[:proto.PrefixSize+proto.CookieSize]); err != nil {
		t.Fatalf("tag does not verify: %v", err)
	}
	other, _ := newAEAD(make([]byte, 32))
	if string(responseTag(other, nil, pkt)) == string(tag) {
		t.Fatal("tag does not depend on the key")
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.key")
	k1, created, err := LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", st.Mode().Perm())
	}
	k2, created, err := LoadOrCreateKey(path)
	if err != nil || created || k1 != k2 {
		t.Fatalf("reload: %v %v same=%v", created, err, k1 == k2)
	}
	if err := os.WriteFile(path, []byte("zz"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt key file: %v", err)
	}
	if _, _, err := LoadOrCreateKey(filepath.Join(path, "sub", "key")); err == nil {
		t.Error("key under a file accepted")
	}
	if _, err := ParseKey(strings.Repeat("ab", 31)); err == nil {
		t.Error("short key accepted")
	}
}

func FuzzParseConnectToken(f *testing.F) {
	tok, _ := MintToken(Key{}, defaultParams, testNow)
	f.Add(tok.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseConnectToken(s)
		if err != nil {
			return
		}
		again, err := ParseConnectToken(tok.String())
		if err != nil || !reflect.DeepEqual(again, tok) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}
