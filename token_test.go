package tickwire

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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
	// A key others can read is refused, with the fix in the message.
	if err := os.WriteFile(path, []byte(k1.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("key file with mode %v: %v", mode, err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if k, _, err := LoadOrCreateKey(path); err != nil || k != k1 {
		t.Errorf("read-only key file: %v", err)
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
