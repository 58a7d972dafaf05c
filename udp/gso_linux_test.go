//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// gsoBatch is a write whose runs end every way a run can: a shorter
// datagram, another address, a longer datagram, and maxSegments; each
// datagram numbered in its first four bytes.
func gsoBatch(a, b netip.AddrPort) (msgs []Message, runs []int) {
	add := func(n, size int, to netip.AddrPort) {
		for range n {
			buf := make([]byte, size)
			binary.BigEndian.PutUint32(buf, uint32(len(msgs)))
			for i := 4; i < size; i++ {
				buf[i] = byte(len(msgs) + i)
			}
			msgs = append(msgs, Message{Buf: buf, Addr: to})
		}
	}
	add(10, 100, a) // a run of 11 with the shorter one after it
	add(1, 60, a)
	add(5, 100, a)            // a run of 5: the address changes
	add(3, 80, b)             // a run of 3: the next is longer
	add(1, 120, b)            // alone: the address changes
	add(maxSegments+6, 50, a) // 64, then 6
	return msgs, []int{11, 5, 3, 1, maxSegments, 6}
}

// checkReceived reads every datagram of msgs addressed to c and checks
// they arrived whole, in order.
func checkReceived(t *testing.T, c *Conn, msgs []Message) {
	t.Helper()
	var want []Message
	for _, m := range msgs {
		if m.Addr == loopback(c) {
			want = append(want, m)
		}
	}
	in := make([]Message, len(want))
	for i := range in {
		in[i].Buf = make([]byte, 2048)
	}
	got := readAll(t, c, in, len(want))
	for i, m := range got {
		if string(m.Buf[:m.N]) != string(want[i].Buf) {
			t.Fatalf("datagram %d at %v: %d bytes numbered %d, want %d bytes numbered %d", i, loopback(c),
				m.N, binary.BigEndian.Uint32(m.Buf), len(want[i].Buf), binary.BigEndian.Uint32(want[i].Buf))
		}
	}
}

// gsoSender opens a socket that writes with GSO, or skips the test where
// the kernel takes no UDP_SEGMENT (before Linux 4.18).
func gsoSender(t *testing.T) *Conn {
	tx, err := Listen("udp4", "127.0.0.1:0", Config{BatchSize: 128, GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	if !tx.Info().GSO {
		t.Skip("the kernel takes no UDP_SEGMENT (before Linux 4.18)")
	}
	return tx
}

// TestGSORuns writes runs of datagrams as segmented messages over
// loopback and checks that each arrives as its own datagram, whole and in
// order, and that the write counted them.
func TestGSORuns(t *testing.T) {
	tx := gsoSender(t)
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	msgs, runs := gsoBatch(loopback(a), loopback(b))
	if n, err := tx.WriteBatch(msgs); n != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", n, err, len(msgs))
	}
	checkReceived(t, a, msgs)
	checkReceived(t, b, msgs)

	segs := 0
	for _, r := range runs {
		if r > 1 {
			segs += r
		}
	}
	st := tx.Stats().Write
	if st.Datagrams != uint64(len(msgs)) || st.Segmented != uint64(segs) || st.Syscalls != 1 {
		t.Fatalf("write stats: %d datagrams, %d segmented, %d system calls; want %d, %d, 1", st.Datagrams, st.Segmented, st.Syscalls, len(msgs), segs)
	}
	var w writer
	for i, k := 0, 0; i < len(msgs); k++ {
		if got := w.segmented(msgs[i:]); got != runs[k] {
			t.Fatalf("run %d at datagram %d: %d datagrams, want %d", k, i, got, runs[k])
		}
		i += runs[k]
	}
}

// TestGSOOff writes the same batch without Config.GSO: nothing
// segmented, everything delivered.
func TestGSOOff(t *testing.T) {
	tx, err := Listen("udp4", "127.0.0.1:0", Config{BatchSize: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if tx.Info().GSO {
		t.Fatal("Info().GSO without Config.GSO")
	}
	a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
	msgs, _ := gsoBatch(loopback(a), loopback(b))
	if n, err := tx.WriteBatch(msgs); n != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	checkReceived(t, a, msgs)
	checkReceived(t, b, msgs)
	if s := tx.Stats().Write.Segmented; s != 0 {
		t.Fatalf("%d datagrams segmented without Config.GSO", s)
	}
}

// TestGSORefused stands in a kernel that refuses segmented messages with
// EIO (as for a device without checksum offload): the refused run goes
// again as separate datagrams, nothing is lost or reported, and the
// socket writes without GSO from then on.
func TestGSORefused(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EIO, unix.EINVAL} {
		t.Run(errno.Error(), func(t *testing.T) {
			tx := gsoSender(t)
			real := tx.w.send
			refused := 0
			tx.w.send = func(ms []ipv4.Message, flags int) (int, error) {
				for i, m := range ms {
					if m.OOB != nil {
						refused++
						n, err := real(ms[:i], flags)
						if err != nil {
							return n, err
						}
						return n, fmt.Errorf("sendmmsg: %w", errno)
					}
				}
				return real(ms, flags)
			}
			a, b := listenPair(t, "udp4", "127.0.0.1:0", Config{})
			msgs, _ := gsoBatch(loopback(a), loopback(b))
			if n, err := tx.WriteBatch(msgs); n != len(msgs) || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", n, err, len(msgs))
			}
			if refused != 1 {
				t.Fatalf("%d segmented messages tried, want 1 (then none)", refused)
			}
			if tx.Info().GSO {
				t.Fatal("Info().GSO still set after the kernel refused it")
			}
			if n, err := tx.WriteBatch(msgs); n != len(msgs) || err != nil || refused != 1 {
				t.Fatalf("second WriteBatch = %d, %v, %d segmented tries; want %d, nil, 1", n, err, refused, len(msgs))
			}
			checkReceived(t, a, append(msgs, msgs...))
			checkReceived(t, b, append(msgs, msgs...))
			st := tx.Stats().Write
			if st.Errors != 1 || st.Segmented != 0 || st.Datagrams != 2*uint64(len(msgs)) {
				t.Fatalf("write stats: %d errors, %d segmented, %d datagrams; want 1, 0, %d", st.Errors, st.Segmented, st.Datagrams, 2*len(msgs))
			}
		})
	}
}

// TestGSOOtherErrorsReported: an error that is not about segmentation
// (a datagram no UDP can carry) is reported at its index as before, and
// GSO stays on.
func TestGSOOtherErrorsReported(t *testing.T) {
	tx, rx := listenPair(t, "udp4", "127.0.0.1:0", Config{GSO: true})
	to := loopback(rx)
	msgs := []Message{{Buf: make([]byte, 100), Addr: to}, {Buf: make([]byte, 100), Addr: to}, {Buf: make([]byte, 70000), Addr: to}}
	if n, err := tx.WriteBatch(msgs); n != 2 || err == nil {
		t.Fatalf("WriteBatch = %d, %v; want 2 and an error for the oversize datagram", n, err)
	}
	if want := gsoSupported(tx.raw); tx.Info().GSO != want {
		t.Fatalf("Info().GSO = %v after an unrelated error, want %v", tx.Info().GSO, want)
	}
}
