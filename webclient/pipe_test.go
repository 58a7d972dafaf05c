package webclient

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/tickwire/tickwire/udp"
)

// TestPipe: written datagrams go to send whatever their address, pushed
// ones come from Peer in order, an oversize one reads as oversize (as a
// socket reports it), and a closed pipe fails both ways.
func TestPipe(t *testing.T) {
	var sent [][]byte
	p := NewPipe(func(b []byte) { sent = append(sent, bytes.Clone(b)) })
	if n, err := p.WriteBatch([]udp.Message{{Buf: []byte("a")}, {Buf: []byte("bc"), Addr: p.Peer()}}); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if len(sent) != 2 || string(sent[0]) != "a" || string(sent[1]) != "bc" {
		t.Errorf("sent %q", sent)
	}
	p.Push([]byte("one"))
	p.Push(bytes.Repeat([]byte{1}, 20))
	msgs := []udp.Message{{Buf: make([]byte, 10)}, {Buf: make([]byte, 10)}, {Buf: make([]byte, 10)}}
	n, err := p.ReadBatch(msgs)
	if n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if string(msgs[0].Buf[:msgs[0].N]) != "one" || msgs[0].Addr != p.Peer() || msgs[1].N != 11 {
		t.Errorf("read %q from %v, then N %d", msgs[0].Buf[:msgs[0].N], msgs[0].Addr, msgs[1].N)
	}
	p.Close()
	if _, err := p.ReadBatch(msgs); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
	if _, err := p.WriteBatch(msgs); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
}
