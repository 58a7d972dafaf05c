package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerEndToEnd runs the command in-process: a token from
// POST /api/join connects over UDP, /healthz and /metrics report the
// connection, and SIGTERM tells the client and exits 0.
func TestServerEndToEnd(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "server.key")
	var logs syncBuffer
	ready := make(chan addrs, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-key-file", keyFile, "-log-level", "debug"}, &logs, ready)
	}()
	var a addrs
	select {
	case a = <-ready:
	case code := <-exit:
		t.Fatalf("exited %d: %s", code, logs.String())
	}
	base := "http://" + a.http.String()

	// The -public-addr default names port 0 (we listened on :0), so dial
	// the real port with the token's keys.
	resp, err := http.Post(base+"/api/join", "application/json", strings.NewReader(`{"players":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var jr joinResponse
	if err := json.NewDecoder(resp.Body).Decode(&jr); err != nil || resp.StatusCode != 200 {
		t.Fatalf("join: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	tok, err := tickwire.ParseConnectToken(jr.Token)
	if err != nil {
		t.Fatal(err)
	}
	if len(jr.Players) != 2 || tok.GameID != 1 || jr.GameID != 1 {
		t.Fatalf("join response %+v", jr)
	}
	tok.ServerAddrs = []string{a.udp.String()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tickwire.Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if h := get("/healthz"); !strings.Contains(h, "connections=1") {
		t.Fatalf("healthz: %q", h)
	}
	m := get("/metrics")
	for _, want := range []string{"tickwire_connections 1", "tickwire_players 2", "tickwire_tick_duration_seconds_bucket", `tickwire_packets_total{direction="in"}`, `tickwire_dropped_packets_total{reason="replay"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if menu := get("/"); !strings.Contains(menu, "Arena") {
		t.Errorf("lobby menu does not offer the arena")
	}
	// pprof is off unless asked for.
	if resp, err := http.Get(base + "/debug/pprof/"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("pprof served without -pprof")
		}
		resp.Body.Close()
	}
	// Bad input to /api/join gets a clear error.
	for _, body := range []string{`{"players":9}`, `{`} {
		resp, err := http.Post(base+"/api/join", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "error") {
			t.Errorf("join %s: %d %s", body, resp.StatusCode, b)
		}
	}

	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	<-c.Done()
	var de *tickwire.DisconnectError
	if !errors.As(c.Err(), &de) || de.Reason != proto.DisconnectShutdown {
		t.Fatalf("client: %v, want shutdown", c.Err())
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("logs lack the shutdown line:\n%s", logs.String())
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"-h"}, &out, nil); code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	for _, flag := range []string{"-listen", "-http", "-tick", "-key-file", "-max-players", "-log-level", "-pprof"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("usage lacks %s", flag)
		}
	}
	out.Reset()
	if code := run([]string{"-tick", "0"}, &out, nil); code != 2 || !strings.Contains(out.String(), "-tick") {
		t.Fatalf("bad flag: exit %d, %q", code, out.String())
	}
}
