package reliability

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// testPeer drives one end of a connection the way the root package's tick
// loop is meant to: receive → frames → acks; then update → build packets.
type testPeer struct {
	name   string
	acks   *PacketAcks
	rel    *Reliable
	seqr   Sequencer
	filter SequenceFilter

	maxPacket    int
	packetsPerTk int  // max packets per tick while reliable data is pending
	flushAlways  bool // call Flush every tick instead of Update

	// received reliable messages, in order
	onMessage func(now time.Time, msg []byte) error
	// sequenced messages received (channel 3), checked for order
	lastSeqMsg   uint32
	seqReceived  int
	seqOutOfOrdr int
	nextSeqMsg   uint32

	recvBuf []byte
	pktBuf  []byte
	payload []byte
	err     error
}

func newTestPeer(name string, conv uint32, cfg ReliableConfig) *testPeer {
	rel, err := NewReliable(conv, cfg)
	if err != nil {
		panic(err)
	}
	return &testPeer{
		name:         name,
		acks:         NewPacketAcks(AckConfig{}, nil),
		rel:          rel,
		maxPacket:    rel.Config().MaxPacketSize,
		packetsPerTk: 4,
		recvBuf:      make([]byte, 0, 1<<20),
		pktBuf:       make([]byte, 0, proto.MaxPacketSizeLimit),
		payload:      make([]byte, 0, proto.MaxPacketSizeLimit),
	}
}

func (p *testPeer) fail(err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: %w", p.name, err)
	}
}

// receive handles one datagram, in the order the lead's connection should.
func (p *testPeer) receive(now time.Time, pkt []byte) {
	h, n, err := proto.ParseHeader(pkt)
	if err != nil {
		p.fail(err)
		return
	}
	pn, fresh := p.acks.ExpandSeq(h.Seq)
	if !fresh {
		return // replay / duplicate: dropped before any processing
	}
	// (AEAD open with nonce pn would go here.)
	var ackDelay time.Duration
	r := proto.FrameReader{Payload: pkt[n:]}
	for r.Next() {
		switch r.Type() {
		case proto.FrameAckOnly:
			f, _, _ := proto.ParseAckOnlyFrame(r.Frame())
			ackDelay = time.Duration(f.DelayMicros) * time.Microsecond
		case proto.FrameReliable:
			f, _, _ := proto.ParseReliableFrame(r.Frame())
			if err := p.rel.Input(now, f.Data); err != nil {
				p.fail(err)
			}
		case proto.FrameMessage:
			f, _, _ := proto.ParseMessageFrame(r.Frame())
			if p.filter.AcceptFrame(&f) {
				v := uint32(f.Data[0]) | uint32(f.Data[1])<<8 | uint32(f.Data[2])<<16 | uint32(f.Data[3])<<24
				if p.seqReceived > 0 && v <= p.lastSeqMsg {
					p.seqOutOfOrdr++
				}
				p.lastSeqMsg = v
				p.seqReceived++
			}
		}
	}
	if r.Err() != nil {
		p.fail(r.Err())
		return
	}
	p.acks.OnReceive(now, &h, pn, len(pkt)+proto.SealOverhead, ackDelay)
	for {
		var ok bool
		p.recvBuf, ok = p.rel.Receive(p.recvBuf[:0])
		if !ok {
			break
		}
		if p.onMessage != nil {
			if err := p.onMessage(now, p.recvBuf); err != nil {
				p.fail(err)
			}
		}
	}
}

// sendTick builds and sends this tick's packets: always one (acks + a
// sequenced message), more while reliable segments are pending.
func (p *testPeer) sendTick(now time.Time, link *netem.Impairment) {
	if p.flushAlways {
		p.rel.Flush(now)
	} else {
		p.rel.Update(now)
	}
	room := p.maxPacket - proto.HeaderSize - proto.SealOverhead
	for i := 0; i < p.packetsPerTk; i++ {
		if i > 0 && p.rel.Pending() == 0 {
			break
		}
		pl, _ := p.rel.AppendFrame(p.payload[:0], room)
		if i == 0 {
			var m [4]byte
			v := p.nextSeqMsg
			m[0], m[1], m[2], m[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			f := proto.MessageFrame{Channel: 3, Data: m[:]}
			if len(pl)+f.Len()+2 <= room { // +2: the Seq it is about to get
				p.nextSeqMsg++
				p.seqr.Stamp(&f)
				pl, _ = f.Append(pl)
			}
		}
		h := proto.Header{Type: proto.PacketData, ConnID: 7}
		p.acks.Send(now, &h, proto.HeaderSize+len(pl)+proto.SealOverhead)
		pkt, err := h.Append(p.pktBuf[:0])
		if err != nil {
			p.fail(err)
			return
		}
		pkt = append(pkt, pl...)
		if len(pkt)+proto.SealOverhead > p.maxPacket {
			p.fail(fmt.Errorf("packet of %d bytes over max %d", len(pkt)+proto.SealOverhead, p.maxPacket))
		}
		link.Enqueue(now, netem.Packet{Data: bytes.Clone(pkt)}) // pkt is pktBuf, reused
	}
}
