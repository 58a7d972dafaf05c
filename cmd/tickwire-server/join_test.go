package main

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
)

// joinAnswer is what POST /api/join said.
type joinAnswer struct {
	status int
	header http.Header
	err    lobby.Error
	token  *tickwire.ConnectToken
}

// postJoin asks s for a token, with the header h (nil: none).
func postJoin(t *testing.T, s *testServer, h http.Header) joinAnswer {
	t.Helper()
	req, err := http.NewRequest("POST", s.base+"/api/join", strings.NewReader(`{"players":1}`))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, h)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := joinAnswer{status: res.StatusCode, header: res.Header}
	if res.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &a.err); err != nil || a.err.Code == "" || a.err.Message == "" {
			t.Fatalf("POST /api/join: HTTP %d with %q: not a JSON error", res.StatusCode, b)
		}
		return a
	}
	var jr joinResponse
	if err := json.Unmarshal(b, &jr); err != nil {
		t.Fatal(err)
	}
	if a.token, err = tickwire.ParseConnectToken(jr.Token); err != nil {
		t.Fatal(err)
	}
	return a
}

func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }

func (a joinAnswer) want(t *testing.T, what string, status int, code string) {
	t.Helper()
	if a.status != status || a.err.Code != code {
		t.Errorf("%s: HTTP %d %+v, want %d %q", what, a.status, a.err, status, code)
	}
}

// TestJoinOffByDefault: without -dev-join, POST /api/join mints nothing
// and says why.
func TestJoinOffByDefault(t *testing.T) {
	a := postJoin(t, startServer(t, nil), nil)
	a.want(t, "join without -dev-join", http.StatusNotFound, codeJoinOff)
	if !strings.Contains(a.err.Message, "-dev-join") {
		t.Errorf("error %q does not name -dev-join", a.err.Message)
	}
}

// TestJoinSecret: with a secret, a request without it or with a wrong
// one gets 401 and no token; the right one gets a token. The secret may
// come from a file.
func TestJoinSecret(t *testing.T) {
	const secret = "correct horse battery staple"
	file := filepath.Join(t.TempDir(), "join.secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-join-secret", secret}, {"-join-secret-file", file}} {
		s := startServer(t, nil, append([]string{"-dev-join"}, args...)...)
		a := postJoin(t, s, nil)
		a.want(t, "no secret", http.StatusUnauthorized, codeUnauthorized)
		if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("401 without a Bearer challenge: %q", a.header.Get("WWW-Authenticate"))
		}
		postJoin(t, s, bearer(secret+"x")).want(t, "wrong secret", http.StatusUnauthorized, codeUnauthorized)
		postJoin(t, s, http.Header{"Authorization": {secret}}).want(t, "secret without Bearer", http.StatusUnauthorized, codeUnauthorized)
		if a := postJoin(t, s, bearer(secret)); a.status != http.StatusOK || a.token == nil {
			t.Errorf("%v: right secret: HTTP %d %+v", args, a.status, a.err)
		}
	}
}

// TestJoinCrossOrigin: a browser page on another site gets no token;
// same-origin pages and tools do.
func TestJoinCrossOrigin(t *testing.T) {
	s := startServer(t, nil, "-dev-join")
	postJoin(t, s, http.Header{"Sec-Fetch-Site": {"cross-site"}}).want(t, "cross-site", http.StatusForbidden, lobby.CodeCrossOrigin)
	postJoin(t, s, http.Header{"Origin": {"https://evil.example"}}).want(t, "other origin", http.StatusForbidden, lobby.CodeCrossOrigin)
	for _, h := range []http.Header{nil, {"Sec-Fetch-Site": {"same-origin"}}} {
		if a := postJoin(t, s, h); a.status != http.StatusOK {
			t.Errorf("%v: HTTP %d %+v", h, a.status, a.err)
		}
	}
}

// TestJoinRateLimit: one address gets -join-burst tokens at once, then
// 429 with Retry-After, and -join-rate a second after that.
func TestJoinRateLimit(t *testing.T) {
	var elapsed atomic.Int64 // the fake clock, in nanoseconds
	now := func() time.Time { return time.Unix(1e9, elapsed.Load()) }
	s := startServer(t, func(o *options) { o.now = now }, "-dev-join", "-join-rate", "0.5", "-join-burst", "2")
	for range 2 {
		if a := postJoin(t, s, nil); a.status != http.StatusOK {
			t.Fatalf("HTTP %d %+v", a.status, a.err)
		}
	}
	a := postJoin(t, s, nil)
	a.want(t, "third token", http.StatusTooManyRequests, lobby.CodeRateLimited)
	if got := a.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2", got)
	}
	elapsed.Add(int64(2 * time.Second))
	if a := postJoin(t, s, nil); a.status != http.StatusOK {
		t.Fatalf("after 2 s: HTTP %d %+v", a.status, a.err)
	}
	postJoin(t, s, nil).want(t, "fourth token", http.StatusTooManyRequests, lobby.CodeRateLimited)
}
