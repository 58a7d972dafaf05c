package main

import (
	"io"
	"testing"

	"github.com/tickwire/tickwire/internal/doccmd"
)

// TestDocCommands: every tickwire-bot command in README.md and
// docs/*.md passes the bot's flag parsing and validation.
func TestDocCommands(t *testing.T) {
	doccmd.Check(t, "tickwire-bot", func(args []string) error {
		_, err := parseFlags(args, io.Discard)
		return err
	})
}
