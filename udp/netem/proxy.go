package netem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/tickwire/tickwire/udp"
)

// ProxyConfig configures a Proxy. The zero value forwards unimpaired.
type ProxyConfig struct {
	Up   Spec // client → upstream
	Down Spec // upstream → client
	Seed uint64
	// IdleTimeout forgets a client (and closes its upstream socket) after
	// this long without traffic either way. Zero selects 2 minutes.
	IdleTimeout time.Duration
}

// DefaultIdleTimeout is ProxyConfig.IdleTimeout's default.
const DefaultIdleTimeout = 2 * time.Minute

// Proxy is a UDP proxy that impairs traffic both ways: clients send to
// its listening conn, it forwards to the upstream address from one
// socket per client (so the upstream tells clients apart) and sends the
// replies back. Both directions pass through one netem Conn wrapped
// around the listening conn: Up as its ingress, Down as its egress, so
// each direction is one queue shared by all clients, like a netem qdisc
// on a link.
type Proxy struct {
	ln       *Conn
	upstream net.Addr
	upAP     netip.AddrPort
	dial     func() (net.PacketConn, error)
	idle     time.Duration

	mu     sync.Mutex
	flows  map[netip.AddrPort]*flow
	closed bool
	wg     sync.WaitGroup

	dialErrors atomic.Uint64
}

type flow struct {
	client netip.AddrPort
	pc     net.PacketConn
	last   atomic.Int64 // UnixNano of the last datagram either way
}

// NewProxy starts a proxy on listen (which it owns and closes) towards
// upstream; dial opens the per-client upstream sockets. Any
// net.PacketConn works, including udptest conns inside a synctest
// bubble.
func NewProxy(listen net.PacketConn, upstream net.Addr, dial func() (net.PacketConn, error), cfg ProxyConfig) *Proxy {
	p := &Proxy{
		ln:       Wrap(listen, Config{Ingress: cfg.Up, Egress: cfg.Down, Seed: cfg.Seed}),
		upstream: upstream,
		dial:     dial,
		idle:     cfg.IdleTimeout,
		flows:    make(map[netip.AddrPort]*flow),
	}
	if ua, ok := upstream.(*net.UDPAddr); ok {
		p.upAP = unmapped(ua.AddrPort())
	}
	if p.idle <= 0 {
		p.idle = DefaultIdleTimeout
	}
	p.wg.Add(1)
	go p.serve()
	return p
}

// ListenProxy listens on listenAddr ("host:port") and forwards to
// upstreamAddr over real UDP sockets, each marked DSCP EF so the proxy
// keeps tickwire's marking.
func ListenProxy(listenAddr, upstreamAddr string, cfg ProxyConfig) (*Proxy, error) {
	up, err := net.ResolveUDPAddr("udp", upstreamAddr)
	if err != nil {
		return nil, fmt.Errorf("netem: upstream %q: %w", upstreamAddr, err)
	}
	ln, err := net.ListenPacket("udp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("netem: listen %q: %w", listenAddr, err)
	}
	markEF(ln)
	network := "udp4"
	if up.IP.To4() == nil {
		network = "udp6"
	}
	dial := func() (net.PacketConn, error) {
		pc, err := net.ListenPacket(network, ":0")
		if err == nil {
			markEF(pc)
		}
		return pc, err
	}
	return NewProxy(ln, up, dial, cfg), nil
}

// markEF marks a socket DSCP EF for both families, best effort.
func markEF(pc net.PacketConn) {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return
	}
	tc := udp.TrafficClass(udp.DSCPEF, udp.ECNNotECT)
	ipv4.NewConn(uc).SetTOS(tc)
	ipv6.NewConn(uc).SetTrafficClass(tc)
}

// Addr is the address clients send to.
func (p *Proxy) Addr() net.Addr { return p.ln.LocalAddr() }

// Stats returns the impairment counters of each direction.
func (p *Proxy) Stats() (up, down Stats) {
	down, up = p.ln.Stats()
	return up, down
}

// Clients is the number of clients the proxy currently keeps a socket for.
func (p *Proxy) Clients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.flows)
}

// Close stops the proxy and closes every socket it opened.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return net.ErrClosed
	}
	p.closed = true
	flows := p.flows
	p.flows = nil
	p.mu.Unlock()
	err := p.ln.Close()
	for _, f := range flows {
		f.pc.Close()
	}
	p.wg.Wait()
	return err
}

// serve forwards client datagrams upstream.
func (p *Proxy) serve() {
	defer p.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, client, err := p.ln.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f := p.flow(unmapped(client))
		if f == nil {
			continue
		}
		f.last.Store(time.Now().UnixNano())
		f.pc.WriteTo(buf[:n], p.upstream)
	}
}

// flow returns the client's flow, opening its upstream socket if new.
func (p *Proxy) flow(client netip.AddrPort) *flow {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if f := p.flows[client]; f != nil {
		return f
	}
	pc, err := p.dial()
	if err != nil {
		p.dialErrors.Add(1)
		return nil
	}
	f := &flow{client: client, pc: pc}
	p.flows[client] = f
	p.wg.Add(1)
	go p.back(f)
	return f
}

// back forwards upstream replies to one client until the flow idles out.
func (p *Proxy) back(f *flow) {
	defer p.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		f.pc.SetReadDeadline(time.Now().Add(p.idle))
		n, from, err := f.pc.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if time.Since(time.Unix(0, f.last.Load())) < p.idle {
				continue
			}
			p.mu.Lock()
			if p.flows != nil && p.flows[f.client] == f {
				delete(p.flows, f.client)
			}
			p.mu.Unlock()
			f.pc.Close()
			return
		}
		if err != nil {
			return // closed
		}
		if ua, ok := from.(*net.UDPAddr); ok && p.upAP.IsValid() && unmapped(ua.AddrPort()) != p.upAP {
			continue // only the upstream may answer through this socket
		}
		f.last.Store(time.Now().UnixNano())
		p.ln.WriteToUDPAddrPort(buf[:n], f.client)
	}
}

func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
