package main

import (
	"net"
	"net/netip"
	"sync"

	"github.com/tickwire/tickwire/internal/addrlimit"
)

// addrLimitListener admits at most max connections at once from one
// client address (an IPv6 address counts by its /64) and closes the
// others as soon as they are accepted. Addresses exempt allows (trusted
// reverse proxies, which carry many clients) are not limited.
type addrLimitListener struct {
	net.Listener
	max    int
	exempt func(netip.Addr) bool
	open   addrlimit.Counts
}

func limitPerAddr(ln net.Listener, max int, exempt func(netip.Addr) bool) *addrLimitListener {
	return &addrLimitListener{Listener: ln, max: max, exempt: exempt}
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
		key := addrlimit.KeyOf(ta.AddrPort().Addr())
		if _, ok := l.open.Hold(key, l.max); !ok {
			c.Close()
			continue
		}
		return &addrConn{Conn: c, release: func() { l.open.Release(key) }}, nil
	}
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
