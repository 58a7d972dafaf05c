//go:build cgo

package main

import (
	"context"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
)

// BenchmarkABI prices the C ABI: each pair does the same work on one
// connected client through the ABI, in a loop in C on a thread of its
// own as a game's (benchshim.go), and by calling the Go client directly.
//
//	call:       tw_abi_version, the cost of a call from C into the library
//	stats:      tw_client_stats / Client.Stats
//	idle-frame: tw_client_update + one tw_client_poll finding nothing /
//	            Client.Receive finding nothing
//	send-round: send 16 bytes unreliably, flush them to the socket, then
//	            update + poll until none / Send, Flush, Receive
//
// The server discards what it receives, so nothing comes back to poll.
// The send rounds flood it with a datagram each: both ends wait a minute
// (Config.Timeout) before they call the other gone, so that a loaded
// machine's late acks do not end the connection.
//
//	go test -run '^$' -bench ABI -benchtime 200000x ./capi
func BenchmarkABI(b *testing.B) {
	patient := tickwire.Config{Timeout: time.Minute}
	srv := startServer(b, false, patient)
	c := newClient(srv.token(b, 1), "", patient)
	b.Cleanup(func() {
		handles.remove(c.handle)
		c.free()
	})
	waitConnected(b, c)
	tc := c.c
	done, cancel := context.WithCancel(context.Background())
	cancel()
	msg := make([]byte, 16)
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			f(b)
		})
	}

	run("call/c", func(b *testing.B) {
		if benchCalls(loopVersion, 0, b.N) != int64(b.N)*abiVersion {
			b.Fatal("tw_abi_version")
		}
	})
	cLoop := func(loop benchLoop) func(b *testing.B) {
		return func(b *testing.B) {
			if r := result(benchCalls(loop, c.handle, b.N)); r != resOK {
				b.Fatalf("%v: %s (%v)", r, c.lastErr(), c.c.Err())
			}
		}
	}
	run("stats/c", cLoop(loopStats))
	run("stats/go", func(b *testing.B) {
		for b.Loop() {
			tc.Stats()
		}
	})
	run("idle-frame/c", cLoop(loopIdle))
	run("idle-frame/go", func(b *testing.B) {
		for b.Loop() {
			if _, err := tc.Receive(done); err != context.Canceled {
				b.Fatal(err)
			}
		}
	})
	run("send-round/c", cLoop(loopRound))
	run("send-round/go", func(b *testing.B) {
		for b.Loop() {
			if err := tc.Send(tickwire.Unreliable, 1, msg); err != nil {
				b.Fatal(err, tc.Err())
			}
			tc.Flush()
			for {
				if _, err := tc.Receive(done); err != nil {
					break
				}
			}
		}
	})
}

// waitConnected runs frames on c until it connects (30 s at most).
func waitConnected(tb testing.TB, c *client) {
	tb.Helper()
	frames(tb, c, func(e *event) bool {
		if e.kind == eventDisconnected {
			tb.Fatalf("disconnected: %s", c.lastErr())
		}
		return e.kind == eventConnected
	})
}
