//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "tickwire-web runs in a browser: build it with GOOS=js GOARCH=wasm go build ./cmd/tickwire-web")
	os.Exit(2)
}
