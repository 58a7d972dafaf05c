// Package webclient is the browser client of the arena, apart from the
// browser: it plays with the same tickwire.GameClient and sim.Client as
// a native client, over a Pipe whose datagrams the page carries on
// WebTransport or a WebSocket, and describes each frame to draw (Frame)
// with the figures of the network debug overlay.
//
//	page (JS glue: transport, canvas, keyboard)
//	  │ Push(packet)            ▲ send(packet)
//	  ▼                         │
//	Pipe (udp.BatchConn) ─► tickwire.Client ─► game.Client ─► sim.Client
//	                                              │
//	Player.Frame(now) ◄── RenderBodies, Effects ──┘
//
// It does no drawing and touches no JavaScript, so it builds and is
// tested natively; cmd/tickwire-web binds it to the page when built with
// GOOS=js GOARCH=wasm.
package webclient
