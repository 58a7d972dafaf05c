// Command tickwire-web is the arena's browser client: package webclient
// bound to a page, built with
//
//	GOOS=js GOARCH=wasm go build -o client.wasm ./cmd/tickwire-web
//
// (tickwire-server builds it itself at start, or serves the file given
// with -wasm). The page (package webpage) loads it with Go's
// wasm_exec.js and calls the one function it defines:
//
//	tickwireConnect(token, send) → session
//
// token is the lobby's connect token; send(Uint8Array) is the page's
// transport (a WebTransport datagram writer or a WebSocket). The session
// has push(Uint8Array), for every datagram the transport receives, at
// once; ready, a promise that resolves when the handshake is done; and
// from then input(moveX, moveY, aim, buttons), frame() (the JSON of a
// webclient.Frame to draw now), slot and close(). Everything else — canvas,
// keyboard, the transport — is the page's JavaScript; the game, the
// prediction, the interpolation and the protocol are the same Go code as
// a native client's. Built for another platform it only says so.
package main
