//go:build linux

package udp

import "testing"

// TestSocketDropsCountsOverflow: a socket whose small receive buffer
// nobody reads drops what does not fit, and SocketDrops counts it, for
// IPv4 and IPv6 sockets (two /proc tables).
func TestSocketDropsCountsOverflow(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		t.Run(tc.network, func(t *testing.T) {
			rx, err := Listen(tc.network, tc.addr, Config{ReadBuffer: 1})
			if err != nil {
				t.Skipf("no %s loopback: %v", tc.network, err)
			}
			defer rx.Close()
			tx, err := Listen(tc.network, tc.addr, Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			if n, ok := rx.SocketDrops(); !ok || n != 0 {
				t.Fatalf("a new socket: drops %d, ok %v", n, ok)
			}
			const sent = 200
			msgs := make([]Message, sent)
			for i := range msgs {
				msgs[i] = Message{Buf: make([]byte, 500), Addr: rx.LocalAddr()}
			}
			for k := 0; k < sent; {
				n, err := tx.WriteBatch(msgs[k:])
				if err != nil {
					t.Fatal(err)
				}
				k += n
			}
			// Loopback delivers in the sender's system call: what did not
			// fit the ~2 KB buffer is dropped by now.
			n, ok := rx.SocketDrops()
			if !ok || n < sent/2 || n > sent {
				t.Fatalf("%d datagrams into a %d-byte buffer nobody reads: %d dropped (ok %v)", sent, rx.Info().ReadBuffer, n, ok)
			}
			t.Logf("%d of %d dropped (buffer %d bytes)", n, sent, rx.Info().ReadBuffer)
		})
	}
}
