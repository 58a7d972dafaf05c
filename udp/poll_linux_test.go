package udp

import (
	"testing"
	"time"
)

// TestTryReadBatch reads an empty socket without waiting, then the
// datagrams queued on it, without allocating.
func TestTryReadBatch(t *testing.T) {
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	var pool BufferPool
	out, in := make([]Message, 3), make([]Message, 8)
	pool.Fill(out)
	pool.Fill(in)
	for i := range out {
		out[i].Buf = append(out[i].Buf[:0], byte(i), 'x')
		out[i].Addr = loopback(b)
	}
	if n, err := b.TryReadBatch(in); n != 0 || err != nil {
		t.Fatalf("TryReadBatch on an empty socket = %d, %v; want 0, nil", n, err)
	}
	if n, err := a.WriteBatch(out); n != len(out) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	// Loopback delivers within the send call, but poll with a deadline
	// rather than assume it.
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got < len(out); {
		n, err := b.TryReadBatch(in[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d datagrams in 5 s", got, len(out))
		}
	}
	for i := range got {
		if m := in[i]; m.N != 2 || m.Buf[0] != byte(i) || m.Addr != loopback(a) {
			t.Errorf("datagram %d: % x from %v, want %d 'x' from %v", i, m.Buf[:m.N], m.Addr, i, loopback(a))
		}
	}
	if n, err := b.TryReadBatch(in); n != 0 || err != nil {
		t.Fatalf("TryReadBatch after draining = %d, %v; want 0, nil", n, err)
	}
	poll := func() {
		if n, err := b.TryReadBatch(in); n != 0 || err != nil {
			t.Fatalf("TryReadBatch = %d, %v", n, err)
		}
	}
	if allocs := testing.AllocsPerRun(100, poll); allocs != 0 {
		t.Fatalf("%v allocations per empty poll, want 0", allocs)
	}
	b.Close()
	if _, err := b.TryReadBatch(in); err == nil {
		t.Fatal("TryReadBatch after Close: no error")
	}
}
