package main

import (
	"fmt"
	"os"
	"runtime"
)

// checkPrivate refuses a secret file (the token key, the join secret)
// that the file mode lets group or other users read or write. A missing
// file passes: the caller creates it, or reports it missing.
func checkPrivate(path string) error {
	fi, err := os.Stat(path)
	if err != nil || runtime.GOOS == "windows" { // Windows has no such bits
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, which gives group or other users access to a secret: run chmod 600 %s", path, perm, path)
	}
	return nil
}

// readPrivate reads a secret file that checkPrivate accepts.
func readPrivate(path string) ([]byte, error) {
	if err := checkPrivate(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
