package lobby

import (
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// This file holds the per-address limits: what one client address may
// hold (open rooms, sockets) and how fast it may act (create, join,
// chat). Everything here runs with Lobby.mu held.

// RateLimit is a token bucket: Burst actions at once, then one more per
// Every. A negative Burst turns the limit off.
type RateLimit struct {
	Every time.Duration
	Burst int
}

// NoRateLimit turns a rate limit off.
var NoRateLimit = RateLimit{Burst: -1}

func (r RateLimit) withDefault(d RateLimit) RateLimit {
	if r == (RateLimit{}) {
		return d
	}
	return r
}

func (r RateLimit) valid() bool { return r.Burst < 0 || (r.Burst > 0 && r.Every > 0) }

// limiter returns a bucket for r, or nil when r is off.
func (r RateLimit) limiter() *rate.Limiter {
	if r.Burst < 0 {
		return nil
	}
	return rate.NewLimiter(rate.Every(r.Every), r.Burst)
}

// addrState is one client address: its buckets (nil when off) and what
// it holds.
type addrState struct {
	create, join, chat *rate.Limiter
	rooms              int // open rooms it created
	sockets            int // sockets open or being accepted
}

// minSweep is how many addresses the lobby tracks before it first forgets
// the ones that hold nothing and have full buckets.
const minSweep = 1024

// clientKey is what the per-address limits count by: an IPv4 address, or
// the /64 of an IPv6 one (a host usually has the whole /64).
func clientKey(a netip.Addr) netip.Prefix {
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // the zero Addr gives the zero Prefix: one shared entry
	return p
}

// addr returns the state of the client address key, creating it.
func (l *Lobby) addr(key netip.Prefix) *addrState {
	c := l.addrs[key]
	if c != nil {
		return c
	}
	if len(l.addrs) >= l.sweepAt {
		l.sweepAddrs()
		l.sweepAt = max(minSweep, 2*len(l.addrs))
	}
	c = &addrState{create: l.cfg.CreateRate.limiter(), join: l.cfg.JoinRate.limiter(), chat: l.cfg.ChatRate.limiter()}
	l.addrs[key] = c
	return c
}

// sweepAddrs forgets the addresses that hold nothing and whose buckets
// are full: a new entry for them would be the same.
func (l *Lobby) sweepAddrs() {
	now := l.now()
	full := func(b *rate.Limiter) bool { return b == nil || b.TokensAt(now) >= float64(b.Burst()) }
	for k, c := range l.addrs {
		if c.rooms == 0 && c.sockets == 0 && full(c.create) && full(c.join) && full(c.chat) {
			delete(l.addrs, k)
		}
	}
}

// take spends a token of b for one action ("games created", "joins",
// "chat messages"), or says how long to wait.
func (l *Lobby) take(b *rate.Limiter, what string) *Error {
	if b == nil {
		return nil
	}
	now := l.now()
	r := b.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	r.CancelAt(now)
	secs := int(math.Ceil(d.Seconds()))
	e := errorf(CodeRateLimited, "too many %s from your address: wait %d s", what, secs)
	e.RetryAfter = secs
	return e
}

// atMost refuses an address that already holds max of something (a
// negative max is no limit).
func atMost(held, max int, what string) *Error {
	if max >= 0 && held >= max {
		return errorf(CodeAddrLimit, "your address already has %d %s open, the most allowed: close one first", held, what)
	}
	return nil
}

// ClientAddr returns the address the lobby attributes r to: the TCP peer
// (r.RemoteAddr), or, when the peer is one of Config.TrustedProxies, the
// rightmost X-Forwarded-For address that is not a trusted proxy. It is
// the address per-address limits count (an IPv6 one by its /64) and
// peer-hosted games name. The zero Addr means r.RemoteAddr is not an
// IP address.
func (l *Lobby) ClientAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a := ap.Addr().Unmap()
	if !l.trusted(a) {
		return a
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // not written by a proxy of ours: keep the last hop we trust
		}
		a = hop.Unmap()
		if !l.trusted(a) {
			break
		}
	}
	return a
}

func (l *Lobby) trusted(a netip.Addr) bool {
	for _, p := range l.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
