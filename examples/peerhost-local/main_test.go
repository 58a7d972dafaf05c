package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestPeerhostLocal runs the example: three players on the first one's
// host for 2 s; the host's player quits, and the two others, having
// heard its hand-over, play on under epoch 2 for 2 s more with no
// desync, one of them hosting.
func TestPeerhostLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("plays for 4 s")
	}
	var out bytes.Buffer
	err := run([]string{"-players", "3", "-play", "2s"}, &out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "player 1: handed over (epoch 1, slot 1)") {
		t.Error("the host did not hand the game over")
	}
	if n := len(regexp.MustCompile(`player [23]: host lost \(epoch 2, slot 1\) handed over at tick \d+`).FindAllString(s, -1)); n != 2 {
		t.Errorf("%d players left the host for its hand-over, want 2", n)
	}
	if n := len(regexp.MustCompile(`player [23]: epoch 2, hosting true`).FindAllString(s, -1)); n != 1 {
		t.Errorf("%d players host epoch 2, want 1", n)
	}
	if n := len(regexp.MustCompile(`player [23]: epoch 2, hosting (true|false), \d+ checksums agreed, 0 desyncs`).FindAllString(s, -1)); n != 2 {
		t.Errorf("%d players on epoch 2 without a desync at the end, want 2", n)
	}
}
