package relay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire/udp"
)

// Server is a relay: it answers bind requests on its control address
// and forwards datagrams between the two bound sides of each
// allocation. Stats, Addr and Close are safe for concurrent use.
type Server struct {
	cfg    Config
	macKey []byte
	st     counters

	mu       sync.Mutex
	conn     udp.BatchConn // the control socket, once Serve was called
	allocs   map[uint64]*allocation
	spent    map[uint64]spentBudget // closed allocations whose grants still bind
	nextPort uint16                 // the next port of the range to try
	closed   bool
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup
}

// spentBudget is what an allocation closed for idleness had forwarded,
// kept until its grant expires: its grants may open it again, but with
// only the rest of its budget.
type spentBudget struct {
	used    uint64
	expires time.Time
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("relay: server closed")

// NewServer returns a relay that accepts the grants minted under key.
// It serves once Serve is called.
func NewServer(key Key, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:      cfg,
		macKey:   key.macKey(),
		allocs:   map[uint64]*allocation{},
		spent:    map[uint64]spentBudget{},
		nextPort: cfg.PortMin,
		done:     make(chan struct{}),
	}, nil
}

// ListenAndServe opens a UDP socket on addr as the control address and
// serves on it (Serve).
func (s *Server) ListenAndServe(addr string) error {
	c, err := udp.Listen("udp", addr, udp.Config{})
	if err != nil {
		return fmt.Errorf("relay: listen %s: %w", addr, err)
	}
	return s.Serve(c)
}

// Serve answers bind requests on conn, the control address, until
// Close, and returns ErrClosed then. Relayed ports are opened on conn's
// IP address. Serve closes conn.
func (s *Server) Serve(conn udp.BatchConn) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		conn.Close()
		return ErrClosed
	case s.conn != nil:
		s.mu.Unlock()
		conn.Close()
		return errors.New("relay: Serve called twice")
	}
	s.conn = conn
	s.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.reap()
	}()
	msgs := make([]udp.Message, readBatch)
	for i := range msgs {
		msgs[i].Buf = make([]byte, udp.BufferSize)
	}
	var replies outbox
	mac := newGrantMAC(s.macKey)
	for {
		n, err := conn.ReadBatch(msgs)
		if err != nil {
			if s.isClosed() {
				return ErrClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			continue
		}
		now := time.Now()
		replies.reset()
		for i := range msgs[:n] {
			m := &msgs[i]
			s.st.in(m.N)
			if r, ok := s.bindControl(mac, m.Buf[:m.N], now); ok {
				replies.add(r, m.Addr)
			}
		}
		replies.send(conn, nil, &s.st)
	}
}

// readBatch is how many datagrams one read of a socket takes.
const readBatch = 32

// Addr is the control address, once Serve was called.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return netip.AddrPort{}
	}
	return s.conn.LocalAddr()
}

// Stats returns the relay's counters.
func (s *Server) Stats() Stats { return s.st.snapshot() }

// Close stops the relay: it closes the control socket and every
// allocation, and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var err error
	if s.conn != nil {
		err = s.conn.Close()
	}
	for _, a := range s.allocs {
		s.closeLocked(a, false)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// bindControl answers a bind request at the control address: it opens
// the grant's allocation if need be and returns the reply naming the
// side's relayed port. ok is false for a datagram that gets no answer.
func (s *Server) bindControl(mac *grantMAC, b []byte, now time.Time) (r BindReply, ok bool) {
	token, err := ParseBindRequest(b)
	if err != nil {
		s.st.drop(DropMalformed)
		return r, false
	}
	g, err := mac.open(token)
	if err != nil {
		s.st.drop(DropBadGrant)
		return r, false
	}
	r = BindReply{Alloc: g.Alloc, Side: g.Side}
	if now.After(g.Expires) {
		s.st.drop(DropExpired)
		r.Status = StatusExpired
		return r, true
	}
	a := s.allocation(g, now)
	if a == nil {
		s.st.drop(DropFull)
		r.Status = StatusFull
		return r, true
	}
	if a.spent() {
		s.st.drop(DropBudget)
		r.Status = StatusSpent
		return r, true
	}
	a.mu.Lock()
	r.Port = a.sides[g.Side].port
	r.PeerBound = a.sides[1-g.Side].bound.IsValid()
	a.mu.Unlock()
	s.st.binds.Add(1)
	return r, true
}

// allocation returns g's allocation, opening it if it is not held; nil
// when the relay is full or closed.
func (s *Server) allocation(g Grant, now time.Time) *allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.allocs[g.Alloc]; a != nil {
		return a
	}
	if s.closed || len(s.allocs) >= s.cfg.MaxAllocations {
		return nil
	}
	a := &allocation{
		srv:     s,
		id:      g.Alloc,
		budget:  g.Budget,
		expires: g.Expires,
		limiter: rate.NewLimiter(rate.Limit(s.cfg.Rate), s.cfg.Burst),
		active:  now,
	}
	if sp, ok := s.spent[g.Alloc]; ok {
		a.used.Store(sp.used)
		delete(s.spent, g.Alloc)
	}
	ip := s.conn.LocalAddr().Addr()
	for i := range a.sides {
		c, err := s.listenLocked(ip)
		if err != nil {
			for j := range i {
				a.sides[j].conn.Close()
			}
			return nil
		}
		a.sides[i].conn, a.sides[i].port = c, c.LocalAddr().Port()
	}
	s.allocs[g.Alloc] = a
	s.st.allocations.Add(1)
	s.st.allocationsCreated.Add(1)
	for i := range a.sides {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			a.serve(i)
		}()
	}
	return a
}

// listenLocked opens a relayed port on ip: the next free one of the
// configured range, or one the kernel picks.
func (s *Server) listenLocked(ip netip.Addr) (udp.BatchConn, error) {
	if s.cfg.PortMin == 0 {
		return s.cfg.ListenPacket(netip.AddrPortFrom(ip, 0))
	}
	var err error
	for range int(s.cfg.PortMax-s.cfg.PortMin) + 1 {
		p := s.nextPort
		if s.nextPort == s.cfg.PortMax {
			s.nextPort = s.cfg.PortMin
		} else {
			s.nextPort++
		}
		var c udp.BatchConn
		if c, err = s.cfg.ListenPacket(netip.AddrPortFrom(ip, p)); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("relay: no free port in %d..%d: %w", s.cfg.PortMin, s.cfg.PortMax, err)
}

// reap closes idle allocations and forgets the budgets of expired
// grants, until Close.
func (s *Server) reap() {
	t := time.NewTicker(max(s.cfg.IdleTimeout/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.mu.Lock()
			for _, a := range s.allocs {
				if a.idleSince(now) >= s.cfg.IdleTimeout {
					s.closeLocked(a, true)
				}
			}
			for id, sp := range s.spent {
				if now.After(sp.expires) {
					delete(s.spent, id)
				}
			}
			s.mu.Unlock()
		}
	}
}

// closeLocked closes a's sockets and forgets it; idle says it expired
// (its budget is remembered while its grants bind).
func (s *Server) closeLocked(a *allocation, idle bool) {
	delete(s.allocs, a.id)
	a.mu.Lock()
	a.closed = true
	for i := range a.sides {
		if a.sides[i].bound.IsValid() {
			s.st.bound.Add(-1)
		}
	}
	a.mu.Unlock()
	for i := range a.sides {
		a.sides[i].conn.Close()
	}
	s.st.allocations.Add(-1)
	if idle {
		s.st.allocationsExpired.Add(1)
		s.spent[a.id] = spentBudget{used: a.used.Load(), expires: a.expires}
	}
}
