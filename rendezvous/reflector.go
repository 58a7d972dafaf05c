package rendezvous

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tickwire/tickwire/udp"
)

// ReflectorConfig configures a Reflector.
type ReflectorConfig struct {
	// Note is told the mapping of every request whose ticket it
	// recognizes, and says so: the reflector answers only then. It is
	// called from the reflector's goroutine (the lobby's NoteMapping).
	Note func(t Ticket, role Role, mapping netip.AddrPort, local []netip.AddrPort) bool
	// Logger; nil: slog.Default.
	Logger *slog.Logger
}

// ReflectorStats count a Reflector's datagrams.
type ReflectorStats struct {
	Requests     uint64 // well-formed requests
	Malformed    uint64 // datagrams that are no request
	Unauthorized uint64 // requests whose ticket Note did not recognize
	Replies      uint64
}

// Reflector answers players' requests, from the socket they play on,
// with the address (NAT mapping) each came from, and reports it to the
// lobby (ReflectorConfig.Note). It answers only a request with a ticket
// the lobby issued, with a reply smaller than the request.
type Reflector struct {
	cfg ReflectorConfig

	mu     sync.Mutex
	conn   udp.BatchConn
	closed bool

	requests, malformed, unauthorized, replies atomic.Uint64
}

// NewReflector returns a reflector; Serve runs it.
func NewReflector(cfg ReflectorConfig) (*Reflector, error) {
	if cfg.Note == nil {
		return nil, errors.New("rendezvous: ReflectorConfig.Note is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reflector{cfg: cfg}, nil
}

// Serve answers requests on conn until Close, and closes conn.
func (r *Reflector) Serve(conn udp.BatchConn) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		conn.Close()
		return net.ErrClosed
	}
	r.conn = conn
	r.mu.Unlock()
	defer conn.Close()
	in := make([]udp.Message, 16)
	for i := range in {
		in[i].Buf = make([]byte, RequestSize+1) // one more: a longer datagram is malformed
	}
	var out []udp.Message
	replies := make([][ReplySize]byte, len(in))
	for {
		n, err := conn.ReadBatch(in)
		if err != nil {
			r.mu.Lock()
			closed := r.closed
			r.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		out = out[:0]
		for i := range n {
			m := &in[i]
			req, err := ParseRequest(m.Buf[:m.N])
			if err != nil {
				r.malformed.Add(1)
				continue
			}
			r.requests.Add(1)
			from := netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
			if !r.cfg.Note(req.Ticket, req.Role, from, req.Local) {
				r.unauthorized.Add(1)
				continue
			}
			rep := Reply{TxID: req.TxID, Mapping: from}
			b := rep.Append(replies[len(out)][:0])
			out = append(out, udp.Message{Buf: b, N: len(b), Addr: m.Addr})
		}
		if len(out) == 0 {
			continue
		}
		if _, err := conn.WriteBatch(out); err != nil {
			r.cfg.Logger.Warn("rendezvous: replies", "err", err)
		}
		r.replies.Add(uint64(len(out)))
	}
}

// Addr is the address Serve listens on (zero before Serve).
func (r *Reflector) Addr() netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return netip.AddrPort{}
	}
	return r.conn.LocalAddr()
}

// Stats returns the reflector's counts.
func (r *Reflector) Stats() ReflectorStats {
	return ReflectorStats{Requests: r.requests.Load(), Malformed: r.malformed.Load(),
		Unauthorized: r.unauthorized.Load(), Replies: r.replies.Load()}
}

// Close stops Serve.
func (r *Reflector) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.conn != nil {
		return r.conn.Close()
	}
	return nil
}
