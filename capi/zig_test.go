//go:build cgo

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// zigPath returns a Zig 0.11.0 binary: $TICKWIRE_ZIG, else what
// scripts/install-zig.sh prints (at once when it is in the script's
// cache; else the script installs it with npm, except under -short).
// Without one the test skips, or fails under TICKWIRE_REQUIRE_TOOLS.
func zigPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TICKWIRE_ZIG"); p != "" {
		return p
	}
	missing := func(why string) string {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("no Zig 0.11.0 and %s is set: %s (zig=$(scripts/install-zig.sh))", requireEnv, why)
		}
		t.Skipf("no Zig 0.11.0: %s (scripts/install-zig.sh installs it)", why)
		return ""
	}
	script, err := filepath.Abs("../scripts/install-zig.sh")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if testing.Short() {
		args = append(args, "--cached") // never fetches
	}
	cmd := exec.Command(script, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return missing(strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out))
}

// TestZigHello builds examples/zig-hello (Zig 0.11.0, @cImport of
// tickwire.h) against libtickwire.a and runs it: with no argument it
// checks the ABI version and a bad token's error code; with a token it
// connects to this process's echo server and sees one reliable message
// come back. It holds that the program exits 0 and printed the echo.
func TestZigHello(t *testing.T) {
	zig := zigPath(t)
	lib := buildLib(t, "c-archive")
	exe := filepath.Join(buildDir, "zig-hello")
	src, err := filepath.Abs("../examples/zig-hello/main.zig")
	if err != nil {
		t.Fatal(err)
	}
	capi, err := os.Getwd() // where tickwire.h is
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(zig, "build-exe", src, "-I", capi, lib, "-lc", "-femit-bin="+exe)
	cmd.Dir = buildDir // for zig-cache
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	t.Logf("zig build-exe: %v", time.Since(start).Round(time.Millisecond))

	out, err := runProgram(t, time.Minute, exe)
	if err != nil || !strings.Contains(out, "bad connect token") {
		t.Fatalf("zig-hello: %v\n%s", err, out)
	}
	srv := startEchoServer(t)
	out, err = runProgram(t, time.Minute, exe, srv.token(t, 1).String())
	if err != nil || !strings.Contains(out, "echo: hello from zig") {
		t.Fatalf("zig-hello TOKEN: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
}
