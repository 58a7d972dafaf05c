package relay

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp"
)

// allocation is a pair of relayed ports, one per side. A datagram that
// arrives on one side's port from that side's bound address is sent on
// from the other side's port to the other side's bound address.
type allocation struct {
	srv     *Server
	id      uint64
	budget  uint64        // bytes it may forward (Grant.Budget)
	used    atomic.Uint64 // bytes it forwarded
	expires time.Time     // the opening grant's expiry
	limiter *rate.Limiter // Config.Rate, both directions

	mu     sync.Mutex // guards what follows and sides' bound and heard
	sides  [2]side
	active time.Time // the last datagram forwarded or bind accepted
	closed bool
}

// side is one side's relayed port.
type side struct {
	conn udp.BatchConn
	port uint16
	wmu  sync.Mutex // serialises writes on conn: both sides' loops send on it

	bound netip.AddrPort // the side's address; invalid until it binds
	heard time.Time      // the last datagram from bound
}

func (a *allocation) spent() bool { return a.used.Load() >= a.budget }

func (a *allocation) idleSince(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Sub(a.active)
}

// serve reads side i's port until the allocation closes.
func (a *allocation) serve(i int) {
	p := newPump(a, i)
	in := &a.sides[i]
	for {
		n, err := in.conn.ReadBatch(p.msgs)
		if err != nil {
			a.mu.Lock()
			closed := a.closed
			a.mu.Unlock()
			if closed {
				return
			}
			continue
		}
		p.handle(p.msgs[:n], time.Now())
	}
}

// pump is one side's receive state, owned by its loop: the buffers a
// batch is read into and the batches it sends, reused so that
// forwarding allocates nothing.
type pump struct {
	a       *allocation
	i       int
	mac     *grantMAC
	msgs    []udp.Message
	fwd     []udp.Message
	replies outbox
}

func newPump(a *allocation, i int) *pump {
	p := &pump{a: a, i: i, mac: newGrantMAC(a.srv.macKey), msgs: make([]udp.Message, readBatch), fwd: make([]udp.Message, 0, readBatch)}
	for j := range p.msgs {
		p.msgs[j].Buf = make([]byte, udp.BufferSize)
	}
	return p
}

// handle forwards or answers one batch read from side i's port.
func (p *pump) handle(msgs []udp.Message, now time.Time) {
	a, st := p.a, &p.a.srv.st
	in, out := &a.sides[p.i], &a.sides[1-p.i]
	a.mu.Lock()
	bound, peer := in.bound, out.bound
	a.mu.Unlock()
	p.fwd = p.fwd[:0]
	heard := false
	p.replies.reset()
	var inBytes int
	for j := range msgs {
		m := &msgs[j]
		b := m.Buf[:m.N]
		inBytes += m.N
		if IsControl(b) {
			if r, ok := p.bind(b, m.Addr, now); ok {
				p.replies.add(r, m.Addr)
			}
			a.mu.Lock()
			bound, peer = in.bound, out.bound
			a.mu.Unlock()
			continue
		}
		switch {
		case m.Addr != bound:
			st.drop(DropUnbound)
			continue
		case m.N > MaxDatagram || !isTickwire(b):
			st.drop(DropMalformed)
			continue
		}
		heard = true
		switch {
		case !peer.IsValid():
			st.drop(DropPeerUnbound)
		case a.used.Add(uint64(m.N)) > a.budget:
			a.used.Add(^uint64(m.N - 1)) // give back what was not sent
			st.drop(DropBudget)
		case !a.limiter.AllowN(now, m.N):
			a.used.Add(^uint64(m.N - 1))
			st.drop(DropRate)
		default:
			p.fwd = append(p.fwd, udp.Message{Buf: b, Addr: peer})
		}
	}
	st.packetsIn.Add(uint64(len(msgs)))
	st.bytesIn.Add(uint64(inBytes))
	if heard || len(p.fwd) > 0 {
		a.mu.Lock()
		if heard && in.bound == bound {
			in.heard = now
		}
		if len(p.fwd) > 0 {
			a.active = now
		}
		a.mu.Unlock()
	}
	if len(p.fwd) > 0 {
		sent, bytes := p.send(out)
		st.forward(sent, bytes)
	}
	p.replies.send(in.conn, &in.wmu, st)
}

// isTickwire reports whether b starts with tickwire's magic bytes, the
// only datagrams the relay forwards (of any version: a relay need not
// change with the protocol).
func isTickwire(b []byte) bool {
	return len(b) >= proto.PrefixSize && b[0] == proto.Magic0 && b[1] == proto.Magic1
}

// send writes p.fwd on out's port and counts it; it returns what went.
func (p *pump) send(out *side) (sent, bytes int) {
	st := &p.a.srv.st
	out.wmu.Lock()
	sent, _ = out.conn.WriteBatch(p.fwd)
	out.wmu.Unlock()
	for _, m := range p.fwd[:sent] {
		bytes += len(m.Buf)
	}
	st.packetsOut.Add(uint64(sent))
	st.bytesOut.Add(uint64(bytes))
	if n := len(p.fwd) - sent; n > 0 {
		st.dropped[DropSend].Add(uint64(n))
	}
	return sent, bytes
}

// bind answers a bind request on side i's port: from the bound address
// it is a keep-alive; from another it binds that address, unless the
// grant expired or the bound one is live.
func (p *pump) bind(b []byte, from netip.AddrPort, now time.Time) (r BindReply, ok bool) {
	a, st := p.a, &p.a.srv.st
	token, err := ParseBindRequest(b)
	if err != nil {
		st.drop(DropMalformed)
		return r, false
	}
	g, err := p.mac.open(token)
	if err != nil {
		st.drop(DropBadGrant)
		return r, false
	}
	if g.Alloc != a.id || int(g.Side) != p.i {
		st.drop(DropWrongPort)
		return r, false
	}
	in, out := &a.sides[p.i], &a.sides[1-p.i]
	r = BindReply{Alloc: g.Alloc, Side: g.Side, Port: in.port}
	if a.spent() {
		st.drop(DropBudget)
		r.Status = StatusSpent
		return r, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case from == in.bound:
	case now.After(g.Expires):
		st.drop(DropExpired)
		r.Status = StatusExpired
	case in.bound.IsValid() && now.Sub(in.heard) < a.srv.cfg.RebindQuiet:
		st.drop(DropInUse)
		r.Status = StatusInUse
	default:
		if !in.bound.IsValid() {
			st.bound.Add(1)
		}
		in.bound = from
	}
	if r.Status == StatusOK {
		in.heard, a.active = now, now
		st.binds.Add(1)
	}
	r.PeerBound = out.bound.IsValid()
	return r, true
}

// outbox is a batch of bind replies, reused from batch to batch.
type outbox struct {
	buf  []byte
	msgs []udp.Message
}

func (o *outbox) reset() { o.buf, o.msgs = o.buf[:0], o.msgs[:0] }

func (o *outbox) add(r BindReply, to netip.AddrPort) {
	if o.buf == nil {
		o.buf = make([]byte, 0, readBatch*BindReplySize)
		o.msgs = make([]udp.Message, 0, readBatch)
	}
	start := len(o.buf)
	o.buf = r.Append(o.buf)
	o.msgs = append(o.msgs, udp.Message{Buf: o.buf[start:len(o.buf):len(o.buf)], Addr: to})
}

// send writes the replies on conn (holding wmu, if given).
func (o *outbox) send(conn udp.BatchConn, wmu *sync.Mutex, st *counters) {
	if len(o.msgs) == 0 {
		return
	}
	if wmu != nil {
		wmu.Lock()
		defer wmu.Unlock()
	}
	sent, _ := conn.WriteBatch(o.msgs)
	for _, m := range o.msgs[:sent] {
		st.out(len(m.Buf))
	}
	for range o.msgs[sent:] {
		st.drop(DropSend)
	}
}
