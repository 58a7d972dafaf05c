package main

import (
	"io"
	"testing"

	"github.com/tickwire/tickwire/internal/doccmd"
)

// TestDocCommands: every tickwire-server command in README.md and
// docs/*.md passes the server's flag parsing and validation.
func TestDocCommands(t *testing.T) {
	doccmd.Check(t, "tickwire-server", func(args []string) error {
		_, err := parseFlags(args, io.Discard)
		return err
	})
}
