package doccmd

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check checks every command of program in the docs that is not
// illustrative with parse, the binary's own flag parsing and validation
// (what it does before it serves): an unknown flag, a bad value or a
// combination the binary refuses fails the test, naming the document
// and line. It runs from an empty directory in which every relative
// file a -…-file flag names exists (mode 0600, 32 hex digits of its
// name's SHA-256: a secret or token file, one per name, so that two
// files hold two tokens). The test fails when the docs hold no command of
// program, so that a renamed binary is noticed.
func Check(t *testing.T, program string, parse func(args []string) error) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	n := 0
	for _, c := range cmds {
		if c.Program != program || c.Illustrative {
			continue
		}
		n++
		for i, a := range c.Args {
			if strings.HasPrefix(a, "-") && strings.HasSuffix(a, "-file") && i+1 < len(c.Args) && !filepath.IsAbs(c.Args[i+1]) {
				sum := sha256.Sum256([]byte(c.Args[i+1]))
				if err := os.WriteFile(c.Args[i+1], []byte(hex.EncodeToString(sum[:16])+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := parse(c.Args); err != nil {
			t.Errorf("%v\n\t%s refuses it: %v", c, program, err)
		}
	}
	if n == 0 {
		t.Errorf("no %s command in the docs", program)
	}
	t.Logf("%d %s commands checked", n, program)
}

// moduleRoot is the directory above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}
