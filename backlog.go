package tickwire

import (
	"net/netip"
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// The datagrams that wait for the loop while it ticks (or that arrive
// in a burst) are received together, as a backlog: with at least
// minOpenPerWorker for each of two workers or more, the build workers
// open its session packets first (Server.openShare: the AEAD and the
// replay check, half of receiving one), each the packets of its own
// connections, and the loop then receives them in their order, the
// handlers' part included, as it would have one by one.

// minOpenPerWorker: below this many datagrams per worker, handing them
// out costs more than opening them on the loop.
const minOpenPerWorker = 32

// openedPacket is what a worker made of one datagram of the backlog.
type openedPacket struct {
	c       *Conn // nil: not a session packet of a connection (the loop receives it whole)
	h       proto.Header
	pn      uint64
	payload []byte
	drop    DropReason // why it failed to open, when !ok
	ok      bool
}

// takeBacklog gathers first (nil: none) and the batches the read loop
// holds ready into s.backlog. On the loop.
func (s *Server) takeBacklog(first *udp.Batch) {
	s.backlog = s.backlog[:0]
	if first != nil {
		s.backlog = append(s.backlog, first)
	}
	for len(s.backlog) < readBatches {
		select {
		case b := <-s.in.Batches():
			s.backlog = append(s.backlog, b)
		default:
			return
		}
	}
}

// receiveBacklog receives the datagrams of s.backlog in order, having
// the workers open them first when there are enough, hands its batches
// back to the read loop and returns when the last one arrived. On the
// loop, with mu held.
func (s *Server) receiveBacklog() (at time.Time) {
	s.receiveBatches(s.backlog)
	for _, b := range s.backlog {
		at = b.At
		s.in.Release(b)
	}
	clear(s.backlog) // no batch kept here once released
	s.backlog = s.backlog[:0]
	return at
}

// receiveBatches receives the datagrams of bs in order.
func (s *Server) receiveBatches(bs []*udp.Batch) {
	total := 0
	for _, b := range bs {
		total += b.N
	}
	s.opened = s.opened[:0]
	if n := min(s.cfg.Workers, total/minOpenPerWorker); n > 1 {
		s.opened = slices.Grow(s.opened, total)[:total]
		clear(s.opened)
		s.openFrom = bs
		s.builder.open(s, n)
		s.openFrom = nil
		s.stats.OpenedAhead += uint64(total)
	}
	k := 0
	for _, b := range bs {
		for i := range b.N {
			m := &b.Msgs[i]
			s.stats.PacketsIn++
			s.stats.BytesIn += uint64(m.N)
			switch {
			case m.N > proto.MaxPacketSizeLimit:
				s.stats.Dropped[DropOversize]++
			case len(s.opened) > 0 && s.opened[k].c != nil:
				s.receiveOpenedPacket(&s.opened[k], m.Buf[:m.N], m.Addr.Addr().Unmap(), m.Addr.Port(), b.At)
			default:
				s.receiveDatagram(m.Buf[:m.N], m.Addr.Addr().Unmap(), m.Addr.Port(), b.At)
			}
			k++
		}
	}
	clear(s.opened) // no connection or payload kept
}

// openShare opens the session packets of worker w's connections (their
// id mod n is w) among the datagrams of s.openFrom into s.opened. The
// loop waits meanwhile: the workers only read the connection table, and
// a connection's packets are all opened by one worker, in order.
func (s *Server) openShare(w, n int) {
	k := -1
	for _, b := range s.openFrom {
		for i := range b.N {
			k++
			m := &b.Msgs[i]
			if m.N > proto.MaxPacketSizeLimit {
				continue
			}
			pkt := m.Buf[:m.N]
			t, sealed, err := proto.ParsePrefix(pkt)
			if err != nil || !sealed || t != proto.PacketData && t != proto.PacketKeepAlive && t != proto.PacketDisconnect {
				continue
			}
			h, _, err := proto.ParseHeader(pkt)
			if err != nil || int(h.ConnID%uint32(n)) != w {
				continue
			}
			c := s.conns[h.ConnID]
			if c == nil {
				continue
			}
			pn, payload, drop, ok := c.sess.Open(pkt, &h)
			s.opened[k] = openedPacket{c: c, h: h, pn: pn, payload: payload, drop: drop, ok: ok}
		}
	}
}

// receiveOpenedPacket receives a datagram a worker opened, as
// receiveDatagram would have: the packets received before it may have
// closed its connection, or received a copy of it.
func (s *Server) receiveOpenedPacket(p *openedPacket, pkt []byte, ip netip.Addr, port uint16, at time.Time) {
	switch {
	case !p.ok:
		s.stats.Dropped[p.drop]++
	case s.conns[p.h.ConnID] != p.c:
		s.stats.Dropped[DropUnknownConn]++
	case !p.c.sess.Fresh(p.pn):
		s.stats.Dropped[DropReplay]++
	default:
		s.receiveOpened(p.c, &p.h, p.pn, pkt, p.payload, netip.AddrPortFrom(ip, port), at)
	}
}
