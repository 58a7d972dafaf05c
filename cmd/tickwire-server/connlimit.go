package main

import (
	"net"
	"net/netip"
	"sync"
)

// addrLimitListener admits at most max connections at once from one
// client address (an IPv6 address counts by its /64) and closes the
// others as soon as they are accepted. Addresses exempt allows (trusted
// reverse proxies, which carry many clients) are not limited.
type addrLimitListener struct {
	net.Listener
	max    int
	exempt func(netip.Addr) bool

	mu   sync.Mutex
	open map[netip.Prefix]int
}

func limitPerAddr(ln net.Listener, max int, exempt func(netip.Addr) bool) *addrLimitListener {
	return &addrLimitListener{Listener: ln, max: max, exempt: exempt, open: map[netip.Prefix]int{}}
}

func (l *addrLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ta, ok := c.RemoteAddr().(*net.TCPAddr)
		if !ok || l.exempt(ta.AddrPort().Addr().Unmap()) {
			return c, nil
		}
		key := addrKey(ta.AddrPort().Addr())
		l.mu.Lock()
		full := l.open[key] >= l.max
		if !full {
			l.open[key]++
		}
		l.mu.Unlock()
		if full {
			c.Close()
			continue
		}
		return &addrConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

func (l *addrLimitListener) release(key netip.Prefix) {
	l.mu.Lock()
	if l.open[key]--; l.open[key] == 0 {
		delete(l.open, key)
	}
	l.mu.Unlock()
}

// addrConn gives its address's place back when closed.
type addrConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *addrConn) Close() error {
	c.once.Do(c.release) // before the close the peer sees
	return c.Conn.Close()
}

// addrKey is what per-address limits count by: an IPv4 address, or the
// /64 of an IPv6 one (as the lobby counts them).
func addrKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
