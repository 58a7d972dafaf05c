//go:build cgo

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCEchoOverLoopback is the C ABI end to end: it builds libtickwire.a
// with go build -buildmode=c-archive, compiles examples/c-echo (plain C,
// against tickwire.h) with the C compiler, serves a tickwire server on
// loopback in this process that echoes every message, mints a token, and
// runs the C program with it. The program sends 1,000 reliable messages
// of 4 to 64 bytes (at most 64 awaiting their echo) and prints the number
// of each echo it receives; it checks each echo's bytes, delivery and
// channel itself and exits non-zero on any difference. The test holds
// that the program exited 0, that its echoes are exactly 0..999 in
// order, each once, and that the server received exactly 1,000 messages
// and could queue every echo. Nothing is timed but the deadline (two
// minutes, for a loaded machine).
func TestCEchoOverLoopback(t *testing.T) {
	lib := buildLib(t, "c-archive")
	exe := compileC(t, "c-echo", lib, []string{"../examples/c-echo/echo.c"})
	srv := startEchoServer(t)
	const n = 1000
	out, err := runProgram(t, 2*time.Minute, exe, srv.token(t, 1).String(), "", strconv.Itoa(n))
	if err != nil {
		t.Fatalf("c-echo: %v; output:\n%s", err, out)
	}
	var echoes []int
	for line := range strings.Lines(out) {
		if num, ok := strings.CutPrefix(strings.TrimSpace(line), "echo "); ok {
			i, err := strconv.Atoi(num)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			echoes = append(echoes, i)
		}
	}
	if len(echoes) != n {
		t.Fatalf("%d echoes, want %d; output:\n%s", len(echoes), n, out)
	}
	for i, e := range echoes {
		if e != i {
			t.Fatalf("echo %d is message %d", i, e)
		}
	}
	if got := srv.messages(); got != n {
		t.Errorf("the server received %d messages, want %d", got, n)
	}
	if !strings.Contains(out, "ok: 1000 sent, 1000 echoed") {
		t.Errorf("no success line; output:\n%s", out)
	}
	t.Logf("c-echo:\n%s", lastLines(out, 4))
}
