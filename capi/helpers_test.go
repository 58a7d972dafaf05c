//go:build cgo

package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// requireEnv turns a missing tool from a skip into a failure (./test.sh
// sets it).
const requireEnv = "TICKWIRE_REQUIRE_TOOLS"

// buildDir holds what the tests build (libraries, C programs); TestMain
// removes it.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tickwire-capi")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lookTool returns the path of a tool the test needs, or skips the test
// (fails it when TICKWIRE_REQUIRE_TOOLS is set).
func lookTool(t testing.TB, name, why string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s not found and %s is set: %v (%s)", name, requireEnv, err, why)
		}
		t.Skipf("%s not found: %s", name, why)
	}
	return path
}

// cc is the C compiler cgo uses (go env CC), or skips the test.
func cc(t testing.TB) string {
	t.Helper()
	name := "gcc"
	if out, err := exec.Command("go", "env", "CC").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		name = strings.Fields(string(out))[0]
	}
	return lookTool(t, name, "the C tests compile C programs against libtickwire")
}

// built remembers each library built, by mode.
var built struct {
	mu   sync.Mutex
	libs map[string]string
	errs map[string]error
}

// buildLib builds libtickwire with -buildmode=mode (c-archive or
// c-shared) once per test run and returns its path; cgo's generated
// header is beside it (libtickwire.h).
func buildLib(t testing.TB, mode string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if p, ok := built.libs[mode]; ok {
		return p
	}
	if err, ok := built.errs[mode]; ok {
		t.Fatal(err)
	}
	if built.libs == nil {
		built.libs, built.errs = map[string]string{}, map[string]error{}
	}
	name := map[string]string{"c-archive": "libtickwire.a", "c-shared": "libtickwire.so"}[mode]
	dir := filepath.Join(buildDir, mode)
	out := filepath.Join(dir, name)
	start := time.Now()
	if b, err := exec.Command("go", "build", "-buildmode="+mode, "-o", out, ".").CombinedOutput(); err != nil {
		built.errs[mode] = fmt.Errorf("go build -buildmode=%s: %v\n%s", mode, err, b)
		t.Fatal(built.errs[mode])
	}
	t.Logf("go build -buildmode=%s: %v", mode, time.Since(start).Round(time.Millisecond))
	built.libs[mode] = out
	return out
}

// compileC compiles C sources into the program out, against the library
// lib (an archive, or a shared library found through an rpath).
func compileC(t testing.TB, out, lib string, srcs []string, flags ...string) string {
	t.Helper()
	compiler := cc(t)
	exe := filepath.Join(buildDir, out)
	args := append([]string{"-O1", "-Wall", "-Wextra", "-Werror", "-I", "."}, flags...)
	args = append(args, "-o", exe)
	args = append(args, srcs...)
	if strings.HasSuffix(lib, ".so") {
		dir := filepath.Dir(lib)
		args = append(args, "-L"+dir, "-Wl,-rpath,"+dir, "-ltickwire")
	} else {
		args = append(args, lib)
	}
	args = append(args, "-lpthread", "-lm")
	if b, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return exe
}

// testServer serves on a loopback socket until the test ends and, if
// echo, sends every message back as it came: delivery, channel, postmark
// and bytes.
type testServer struct {
	srv  *tickwire.Server
	key  tickwire.Key
	addr netip.AddrPort
	echo bool

	mu       sync.Mutex
	received int   // messages
	sendErr  error // the first echo the server could not queue
}

func startEchoServer(t testing.TB) *testServer {
	t.Helper()
	return startServer(t, true, tickwire.Config{})
}

func startServer(t testing.TB, echo bool, cfg tickwire.Config) *testServer {
	t.Helper()
	key, err := tickwire.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tickwire.NewServer(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{srv: srv, key: key, echo: echo}
	srv.Handle(s)
	s.addr = serve(t, srv)
	t.Cleanup(func() {
		if err := s.err(); err != nil {
			t.Errorf("test server: %v", err)
		}
	})
	return s
}

// serve serves srv on a loopback socket until the test ends, and
// returns the socket's address.
func serve(t testing.TB, srv *tickwire.Server) netip.AddrPort {
	t.Helper()
	conn, err := udp.Listen("udp4", "127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(conn) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return conn.LocalAddr()
}

func (s *testServer) Connected(*tickwire.Conn) {}

func (s *testServer) Message(c *tickwire.Conn, m *tickwire.Message) {
	var err error
	switch {
	case !s.echo:
	case m.Postmarked:
		err = c.SendAt(m.Delivery, m.Channel, m.Tick, m.Data)
	default:
		err = c.Send(m.Delivery, m.Channel, m.Data)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received++
	if err != nil && s.sendErr == nil {
		s.sendErr = fmt.Errorf("echo of message %d: %w", s.received, err)
	}
}

func (s *testServer) Disconnected(*tickwire.Conn, proto.DisconnectReason) {}

func (s *testServer) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendErr
}

func (s *testServer) messages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// token mints a token for the server: game 7, the given client id and
// players.
func (s *testServer) token(t testing.TB, clientID uint64, players ...uint16) *tickwire.ConnectToken {
	t.Helper()
	if len(players) == 0 {
		players = []uint16{1}
	}
	tok, err := tickwire.MintToken(s.key, tickwire.TokenParams{GameID: 7, ClientID: clientID, Players: players, ServerAddrs: []string{s.addr.String()}, TTL: 5 * time.Minute}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// runProgram runs a built program with a deadline and returns its
// output (stdout and stderr together) and exit error.
func runProgram(t testing.TB, timeout time.Duration, exe string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within %v; output:\n%s", filepath.Base(exe), timeout, out.String())
		return "", nil
	}
}
