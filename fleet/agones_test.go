package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sidecar is a stand-in for the Agones SDK sidecar's REST API: it
// records the calls, and answers 503 to the first notReady /ready calls
// (a sidecar that starts after the game server).
type sidecar struct {
	notReady atomic.Int32
	mu       sync.Mutex
	calls    []string // "METHOD /path body"
}

func (s *sidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/ready" && s.notReady.Add(-1) >= 0 {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "POST /ready", "POST /health", "POST /allocate", "POST /shutdown", "PATCH /v1beta1/counters/players":
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path+" "+string(body))
	s.mu.Unlock()
	w.Write([]byte("{}"))
}

func (s *sidecar) seen(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if strings.HasPrefix(c, call) {
			n++
		}
	}
	return n
}

// TestAgonesLifecycle runs the reports against a stand-in for the
// sidecar (not a real Agones): Ready retried until the sidecar is up,
// health pings, player counts, Allocate once, Shutdown when the last
// game ended.
func TestAgonesLifecycle(t *testing.T) {
	sc := &sidecar{}
	sc.notReady.Store(2)
	srv := httptest.NewServer(sc)
	defer srv.Close()
	t.Setenv(AgonesPortEnv, srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	url, err := AgonesURLFromEnv()
	if err != nil || url == "" {
		t.Fatalf("AgonesURLFromEnv: %q, %v", url, err)
	}
	var players, games atomic.Int64
	a, err := StartAgones(context.Background(), AgonesConfig{URL: url, HealthEvery: 5 * time.Millisecond, Capacity: 64, Logger: quiet,
		Load: func() Load { return Load{Players: int(players.Load()), Games: int(games.Load())} }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := sc.seen("POST /ready"); n != 1 {
		t.Fatalf("%d successful Ready calls, want 1 (after two refusals)", n)
	}
	waitFor(t, "health pings and the empty count", func() bool {
		return sc.seen("POST /health") >= 2 && sc.seen(`PATCH /v1beta1/counters/players {"count":"0","capacity":"64"}`) == 1
	})
	a.Allocated()
	a.Allocated()
	players.Store(3)
	games.Store(1)
	waitFor(t, "3 players counted", func() bool { return sc.seen(`PATCH /v1beta1/counters/players {"count":"3","capacity":"64"}`) == 1 })
	select {
	case <-a.Ended():
		t.Fatal("ended while a game runs")
	default:
	}
	if n := sc.seen("POST /shutdown"); n != 0 {
		t.Fatalf("shutdown called %d times while a game runs", n)
	}
	players.Store(0)
	games.Store(0)
	select {
	case <-a.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("the last game ended, but no Shutdown")
	}
	waitFor(t, "Allocate", func() bool { return sc.seen("POST /allocate") >= 1 })
	if s, al := sc.seen("POST /shutdown"), sc.seen("POST /allocate"); s != 1 || al != 1 {
		t.Fatalf("%d Shutdown and %d Allocate calls, want one each", s, al)
	}
}

func TestAgonesEnv(t *testing.T) {
	t.Setenv(AgonesPortEnv, "")
	if u, err := AgonesURLFromEnv(); u != "" || err != nil {
		t.Fatalf("unset: %q, %v", u, err)
	}
	t.Setenv(AgonesPortEnv, "99999")
	if _, err := AgonesURLFromEnv(); err == nil {
		t.Fatal("port 99999 accepted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := StartAgones(ctx, AgonesConfig{URL: "http://127.0.0.1:1", Logger: quiet, Load: func() Load { return Load{} }}); err == nil {
		t.Fatal("StartAgones succeeded without a sidecar")
	}
}
