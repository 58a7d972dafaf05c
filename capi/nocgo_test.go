//go:build !cgo

package main

import (
	"os"
	"testing"
)

// TestCgo: without cgo there is no C ABI to test.
func TestCgo(t *testing.T) {
	if os.Getenv("TICKWIRE_REQUIRE_TOOLS") != "" {
		t.Fatal("capi needs cgo (CGO_ENABLED=1 and a C compiler) and TICKWIRE_REQUIRE_TOOLS is set")
	}
	t.Skip("capi needs cgo: CGO_ENABLED=1 and a C compiler")
}
