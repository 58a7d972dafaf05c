package main

import (
	"io"
	"testing"

	"github.com/tickwire/tickwire/internal/doccmd"
)

// TestDocCommands: every tickwire-netem command in README.md and
// docs/*.md passes the proxy's flag parsing and validation.
func TestDocCommands(t *testing.T) {
	doccmd.Check(t, "tickwire-netem", func(args []string) error {
		_, err := parseFlags(args, io.Discard)
		return err
	})
}
