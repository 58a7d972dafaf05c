// Command capi is tickwire's C ABI: built with -buildmode=c-archive or
// -buildmode=c-shared it is libtickwire, whose public header is
// tickwire.h (beside this file). It wraps the root package's transport
// (Client, connect tokens, messages and channels) and the commits mode's
// client (commits.Client, whose committed world the C game steps:
// commits.go); it implements no protocol of its own.
//
//	go build -buildmode=c-archive -o libtickwire.a ./capi
//	go build -buildmode=c-shared -o libtickwire.so ./capi
//
// The C caller names objects by integer handles (handles.go), never by
// Go pointers, which cgo forbids C to keep. Nothing calls back into C:
// the game calls tw_client_update once per frame and polls the events it
// made pollable (client.go), as netcode.io's client does. The exported
// functions (exports.go) only convert between C and Go; the header is
// included in their preamble, so the C compiler checks the prototypes
// cgo generates against the ones tickwire.h declares.
//
// The connection runs on the Go client's own goroutines and clock: the
// root package's Client has no mode in which the caller steps it, and
// capi adds none. tw_client_update moves what the client received
// (Client.Receive, polled without blocking) into the handle's event
// queue.
//
// docs/CLIENTS.md says how to use the library from C, C++, Zig, C# and
// Rust; examples/c-echo is a complete C client.
package main

// main is required by -buildmode=c-archive and c-shared; it never runs.
func main() {}
