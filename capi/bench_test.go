//go:build cgo

package main

import (
	"context"
	"testing"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
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
	c := newClient(srv.token(b, 1), "", patient, nil)
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

// BenchmarkCommitsABI prices a command in the commits mode through the
// ABI against the same work in Go, on commits clients of relays:
//
//	issue: tw_commits_issue of 8 bytes, from a loop in C on a thread of
//	       its own / commits.Client.Issue (both wait for the client's
//	       loop to take the command, which dominates)
//	tick:  one committed tick with one command: tw_commits_poll of the
//	       command (its bytes into the caller's buffer) and of the tick,
//	       tw_commits_sum, and a share of tw_commits_update / the same
//	       events read in Go and the sum reported
//
// The ticks' events are made up and queued before the loop (where the
// Client's callbacks push theirs), as a frame finds them after a burst.
// A command costs an issue on its issuer and a tick's share on every
// client. The relay and the client buffer 65,536 ticks, and each issue
// is a reliable frame on a queue that holds some thousands: keep
// -benchtime at 1000x or less.
//
//	go test -run '^$' -bench CommitsABI -benchtime 1000x ./capi
func BenchmarkCommitsABI(b *testing.B) {
	patient := tickwire.Config{Timeout: time.Minute}
	// a relay's client whose player is in the committed world
	player := func() (*commitsClient, uint16) {
		srv := startRelay(b, patient, commits.RelayConfig{Config: commits.Config{Capacity: 1 << 16}})
		k, err := newCommitsClient(srv.token(b, 1), "", patient, nil, 8, 1<<16, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			handles.remove(k.handle)
			k.free()
		})
		g := newLedger(k)
		deadline := time.Now().Add(30 * time.Second)
		for !g.present() {
			if time.Now().After(deadline) {
				b.Fatal("no state within 30 s")
			}
			g.frame(b)
			time.Sleep(5 * time.Millisecond) // a frame
		}
		tc, _ := k.accepted()
		return k, tc.Players()[0]
	}
	cmd := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			f(b)
		})
	}
	check := func(b *testing.B, k *commitsClient, r int64) {
		if result(r) != resOK {
			b.Fatalf("%v: %s", result(r), k.lastErr())
		}
	}
	// each loop on a relay of its own: issued commands fill a queue and a
	// buffer
	kc, _ := player()
	run("issue/c", func(b *testing.B) { check(b, kc, benchCalls(loopIssue, kc.handle, b.N)) })
	kg, pg := player()
	run("issue/go", func(b *testing.B) {
		for b.Loop() {
			if _, err := kg.cc.Issue(pg, cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
	k, p := player()
	// made-up ticks far from the real ones
	ticks := func(n int) []event {
		evs := make([]event, 0, 2*n)
		for i := range n {
			evs = append(evs, event{kind: eventCommitsCommand, tick: 1<<31 + uint32(i), player: uint32(p), seq: uint32(i), data: cmd},
				event{kind: eventCommitsTick, tick: 1<<31 + uint32(i)})
		}
		return evs
	}
	run("tick/c", func(b *testing.B) {
		evs := ticks(b.N)
		k.inMu.Lock()
		k.in = append(k.in, evs...)
		k.inMu.Unlock()
		b.ResetTimer()
		check(b, k, benchCalls(loopTick, k.handle, b.N))
	})
	run("tick/go", func(b *testing.B) {
		evs := ticks(1024)
		var buf [64]byte
		var sum uint64
		i := 0
		for b.Loop() {
			for _, e := range evs[i : i+2] {
				switch e.kind {
				case eventCommitsCommand:
					copy(buf[:], e.data)
					sum = sum*31 + uint64(buf[0])
				case eventCommitsTick:
					k.report(e.tick, sum)
				}
			}
			i = (i + 2) % len(evs)
		}
	})
}
