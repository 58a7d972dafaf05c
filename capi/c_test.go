//go:build cgo

package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestCABIContract builds testdata/abi.c against the library, as an
// archive and as a shared library, and runs it (it holds the contract
// from C: layouts, the ABI version check, every error code a caller can
// provoke, both ways of receiving a message, a client's life against
// this echo server, connects that fail). The archive's build also
// compiles abi.c with cgo's generated header included after
// tickwire.h, so the C compiler holds that they declare every function
// alike.
func TestCABIContract(t *testing.T) {
	for _, mode := range []string{"c-archive", "c-shared"} {
		t.Run(mode, func(t *testing.T) {
			lib := buildLib(t, mode)
			var flags []string
			if mode == "c-archive" {
				flags = append(flags, `-DTW_GENERATED_HEADER="`+strings.TrimSuffix(lib, ".a")+`.h"`)
			}
			exe := compileC(t, "abi-"+mode, lib, []string{"testdata/abi.c"}, flags...)
			srv := startEchoServer(t)
			// Nothing ever answers on this socket: the handshakes that
			// go there time out.
			silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			out, err := runProgram(t, 3*time.Minute, exe, srv.token(t, 42, 1, 2).String(), silent.LocalAddr().String())
			if err != nil || !strings.Contains(out, "PASS") {
				t.Fatalf("abi: %v; output:\n%s", err, out)
			}
			t.Log(strings.TrimSpace(out))
		})
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
