package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
)

// TestDemoSpectate: with -demo, POST /play/spectate hands a token for the
// demo game in a spectator slot, which connects; the bots play there; a
// burst of requests from one address is cut at 10 (429); a cross-site
// request is refused.
func TestDemoSpectate(t *testing.T) {
	s := startServer(t, nil, "-demo", "2", "-webtransport", "127.0.0.1:0")
	post := func(hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", s.base+"/play/spectate", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post()
	var body struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	tok, err := tickwire.ParseConnectToken(body.Token)
	if resp.StatusCode != 200 || err != nil {
		t.Fatalf("spectate: %d %v", resp.StatusCode, err)
	}
	c := dial(t, tok)
	if p := c.Players(); len(p) != 1 || p[0] < arena.FirstSpectator {
		t.Errorf("spectator slot %v", p)
	}
	// The two bots are there (in the same game).
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(get(t, s.base+"/healthz"), "connections=3") {
		if time.Now().After(deadline) {
			t.Fatalf("healthz: %s", get(t, s.base+"/healthz"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	limited := false
	for range 12 {
		r := post()
		r.Body.Close()
		limited = limited || r.StatusCode == http.StatusTooManyRequests
	}
	if !limited {
		t.Error("12 spectator tokens in a row from one address were all handed out")
	}
	if r := post("Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site spectate: %d", r.StatusCode)
	}
}
