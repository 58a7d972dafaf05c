package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestCommitsLocal builds the example and runs it for a second, as a
// reader would: it exits 0, both clients print the same committed tick
// and checksum, the server prints its dots at a committed tick, and
// client 2 is told its order outside the field was refused.
func TestCommitsLocal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "commits-local")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-duration", "1s").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sums := regexp.MustCompile(`(?m)^client (\d): committed tick (\d+), checksum ([0-9a-f]{16})$`).FindAllStringSubmatch(string(out), -1)
	if len(sums) != 2 || sums[0][1] != "1" || sums[1][1] != "2" || sums[0][2] != sums[1][2] || sums[0][3] != sums[1][3] {
		t.Errorf("the clients' committed ticks and checksums are not one: %q", sums)
	}
	for _, want := range []string{
		`(?m)^server: committed tick \d+, player 1's dot at \(\d+, \d+\)$`,
		`(?m)^server: committed tick \d+, player 2's dot at \(\d+, \d+\)$`,
		`(?m)^client 2: the command of tick \d+ refused: dots: target outside the field$`,
		`(?m)^the clients agree$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no line %s in\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^client 1: .* refused`).Match(out) {
		t.Errorf("client 1 was told of a refusal:\n%s", out)
	}
}
