package main

import (
	"io"
	"testing"

	"github.com/tickwire/tickwire/internal/doccmd"
)

// TestDocCommands: every tickwire-replay command in README.md and
// docs/*.md passes the command's flag parsing and validation.
func TestDocCommands(t *testing.T) {
	doccmd.Check(t, "tickwire-replay", func(args []string) error {
		_, err := parseFlags(args, io.Discard)
		return err
	})
}
