package udp

import "sync"

// BufferSize is the size of a pooled datagram buffer: a whole Ethernet
// MTU, more than the largest UDP payload that crosses one unfragmented
// (1472 bytes over IPv4, 1452 over IPv6). tickwire's packets are at most
// 1200 bytes.
const BufferSize = 1500

// Buffer is one pooled datagram buffer.
type Buffer [BufferSize]byte

// BufferPool hands out fixed-size datagram buffers and takes them back,
// so steady-state receive and send loops do not allocate. The zero value
// is ready to use; it is safe for concurrent use.
type BufferPool struct {
	p sync.Pool
}

// Get returns a buffer; its contents are unspecified.
func (p *BufferPool) Get() *Buffer {
	if b, ok := p.p.Get().(*Buffer); ok {
		return b
	}
	return new(Buffer)
}

// Put returns b to the pool. The caller must not use b afterwards.
func (p *BufferPool) Put(b *Buffer) {
	if b != nil {
		p.p.Put(b)
	}
}

// Fill gives every message in msgs without a buffer a pooled one
// (Buf = whole buffer, so cap(Buf) == BufferSize).
func (p *BufferPool) Fill(msgs []Message) {
	for i := range msgs {
		if msgs[i].Buf == nil {
			msgs[i].Buf = p.Get()[:]
		}
	}
}

// Release returns the buffers of msgs that Fill handed out (any length,
// capacity BufferSize, starting at the buffer's first byte) and clears
// Buf, N and Addr so no message keeps a pooled buffer alive.
func (p *BufferPool) Release(msgs []Message) {
	for i := range msgs {
		if b := msgs[i].Buf; cap(b) == BufferSize {
			p.Put((*Buffer)(b[:BufferSize]))
		}
		msgs[i] = Message{}
	}
}
