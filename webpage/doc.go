// Package webpage serves the browser client: the play page, its
// JavaScript glue (transport, canvas, keyboard, the network overlay), the
// client compiled to WebAssembly (cmd/tickwire-web) with Go's loader
// wasm_exec.js, and the page's configuration — where the WebTransport
// server listens, the hash of its development certificate, where the
// WebSocket fallback is.
//
// The WebAssembly client is built from this module's source by the Go
// toolchain that runs the server (Build), or taken from a directory
// built beforehand (Client) for a deployed server without a toolchain:
//
//	GOOS=js GOARCH=wasm go build -o dir/client.wasm ./cmd/tickwire-web
//	cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" dir/
package webpage
