package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
		exit <- run(context.Background(), []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-key-file", keyFile, "-log-level", "debug", "-dev-join"}, &logs, ready)
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
	c := dial(t, tok)

	admin := "http://" + a.admin.String()
	if h := get(t, base+"/healthz"); !strings.Contains(h, "connections=1") {
		t.Fatalf("healthz: %q", h)
	}
	m := get(t, admin+"/metrics")
	for _, want := range []string{"tickwire_connections 1", "tickwire_players 2", "tickwire_tick_duration_seconds_bucket", `tickwire_packets_total{direction="in"}`, `tickwire_dropped_packets_total{reason="replay"} 0`, "tickwire_inputs_missing_total", `tickwire_patch_codes_total{source="shared"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if runtime.GOOS == "linux" && !strings.Contains(m, "tickwire_socket_drops_total 0") {
		t.Errorf("/metrics lacks the socket's drops (0 on a quiet loopback)")
	}
	if menu := get(t, base+"/"); !strings.Contains(menu, "Arena") {
		t.Errorf("lobby menu does not offer the arena")
	}
	// pprof is off unless asked for.
	for _, u := range []string{base, admin} {
		if status(t, "GET", u+"/debug/pprof/") == 200 {
			t.Error("pprof served without -pprof")
		}
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

// dial connects a client with tok until the test ends.
func dial(t *testing.T, tok *tickwire.ConnectToken) *tickwire.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tickwire.Dial(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get fetches url and fails the test unless it answers 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// status sends a request without a body and returns the answer's status.
func status(t *testing.T, method, url string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// testServer is the command running in-process.
type testServer struct {
	addrs
	base, adminURL string // URLs of -http and -admin
	key            tickwire.Key
	logs           *syncBuffer
}

// startServer runs the command in-process on loopback with a fresh key
// file and args, changed by tweak when not nil, until the test ends.
func startServer(t *testing.T, tweak func(*options), args ...string) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	keyFile := filepath.Join(t.TempDir(), "server.key")
	args = append([]string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-key-file", keyFile}, args...)
	o, err := parseFlags(args, logs)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(o)
	}
	ready := make(chan addrs, 1)
	exit := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { exit <- serve(ctx, o, slog.New(slog.NewTextHandler(logs, nil)), ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-exit; err != nil {
			t.Errorf("server: %v\n%s", err, logs.String())
		}
	})
	var a addrs
	select {
	case a = <-ready:
	case err := <-exit:
		exit <- err
		t.Fatalf("server: %v\n%s", err, logs.String())
	}
	key, _, err := tickwire.LoadOrCreateKey(o.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{addrs: a, key: key, logs: logs}
	if a.http != nil {
		s.base = "http://" + a.http.String()
	}
	if a.admin != nil {
		s.adminURL = "http://" + a.admin.String()
	}
	return s
}

// TestOperatorPagesArePrivate: the dashboard, /metrics and the stats are
// served on -admin only, and no public page or API answer names the
// address of a connected player, which the operator's stats do.
func TestOperatorPagesArePrivate(t *testing.T) {
	s := startServer(t, nil)
	base, admin := s.base, s.adminURL
	tok, err := tickwire.MintToken(s.key, tickwire.TokenParams{GameID: 1, ClientID: 9, Players: []uint16{1},
		ServerAddrs: []string{s.udp.String()}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, tok)
	// The client's socket is unbound; the server sees it on loopback.
	player := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), c.LocalAddr().Port()).String()
	if st := get(t, admin+"/api/stats"); !strings.Contains(st, player) {
		t.Fatalf("operator stats lack the player's address %s:\n%s", player, st)
	}
	get(t, admin+"/dashboard")
	get(t, admin+"/metrics")
	for _, path := range []string{"/dashboard", "/metrics", "/api/stats", "/debug/pprof/"} {
		if code := status(t, "GET", base+path); code < 400 {
			t.Errorf("public GET %s: HTTP %d, want an error", path, code)
		}
	}
	for _, path := range []string{"/", "/games/arena", "/api/types", "/api/games/arena", "/healthz"} {
		if page := get(t, base+path); strings.Contains(page, player) {
			t.Errorf("public GET %s names the player's address %s", path, player)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, nil); code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	for _, flag := range []string{"-listen", "-http", "-admin", "-tick", "-key-file", "-max-players", "-log-level", "-pprof",
		"-dev-join", "-join-secret-file", "-tls-cert", "-tls-key", "-trusted-proxies", "-max-http-conns"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("usage lacks %s", flag)
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"-tick", "0"}, &out, nil); code != 2 || !strings.Contains(out.String(), "-tick") {
		t.Fatalf("bad flag: exit %d, %q", code, out.String())
	}
}

// TestKeyFileMode: a key file that group or other users may read stops
// the server with the file's name and the fix; mode 0600 starts it.
func TestKeyFileMode(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "server.key")
	if err := os.WriteFile(keyFile, []byte(tickwire.Key{7}.String()+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyFile, 0o640) // whatever the umask
	var out bytes.Buffer
	code := run(t.Context(), []string{"-listen", "127.0.0.1:0", "-http", "", "-admin", "", "-key-file", keyFile}, &out, nil)
	if code != 1 || !strings.Contains(out.String(), "chmod 600 "+keyFile) || !strings.Contains(out.String(), "0640") {
		t.Fatalf("group-readable key: exit %d:\n%s", code, out.String())
	}
	os.Chmod(keyFile, 0o600)
	s := startServer(t, nil, "-key-file", keyFile)
	if s.key != (tickwire.Key{7}) {
		t.Fatalf("the server did not use the 0600 key file")
	}
}

// TestKeyRotation: a server started with a previous key accepts tokens of
// both keys, refuses a third key's, and refuses a token that names
// another server even when it shares the key.
func TestKeyRotation(t *testing.T) {
	prevFile := filepath.Join(t.TempDir(), "old.key")
	prev, _, err := tickwire.LoadOrCreateKey(prevFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, nil, "-previous-key-file", prevFile)
	other, _ := tickwire.GenerateKey()
	for i, tc := range []struct {
		key   tickwire.Key
		addr  string
		error string
	}{
		{s.key, s.udp.String(), ""},
		{prev, s.udp.String(), ""},
		{other, s.udp.String(), "unknown key"},
		{s.key, "127.0.0.1:1", "wrong server"},
	} {
		tok, err := tickwire.MintToken(tc.key, tickwire.TokenParams{GameID: 1, ClientID: uint64(20 + i), Players: []uint16{1},
			ServerAddrs: []string{tc.addr}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tok.ServerAddrs = []string{s.udp.String()} // where to dial; the sealed part names tc.addr
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := tickwire.Dial(ctx, tok)
		cancel()
		switch {
		case tc.error == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
			t.Errorf("case %d: %v, want %q", i, err, tc.error)
		}
		if c != nil {
			c.Close()
		}
	}
}

// TestTickBuckets checks the tick histogram's bounds: ascending, 100 µs
// to past 150 ms, and the budget of the tick rate among them, so that
// the capacity run's "99 % of ticks within the budget" is exact.
func TestTickBuckets(t *testing.T) {
	for _, rate := range []int{30, 60, 64, 128} {
		b := tickBuckets(rate)
		if b[0] != 100e-6 || b[len(b)-1] < 0.15 {
			t.Errorf("rate %d: bounds %g .. %g, want 100 µs .. at least 150 ms", rate, b[0], b[len(b)-1])
		}
		if !slices.Contains(b, 1/float64(rate)) {
			t.Errorf("rate %d: the budget %g s is not a bound", rate, 1/float64(rate))
		}
		for i := 1; i < len(b); i++ {
			if b[i] <= b[i-1] {
				t.Fatalf("rate %d: bounds not strictly ascending at %d: %g, %g", rate, i, b[i-1], b[i])
			}
			if r := b[i] / b[i-1]; r > 1.1+1e-9 {
				t.Errorf("rate %d: bounds %g and %g are %.0f %% apart, want at most 10 %%", rate, b[i-1], b[i], (r-1)*100)
			}
		}
	}
}
