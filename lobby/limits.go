package lobby

import (
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/tickwire/tickwire/internal/addrlimit"
)

// This file holds the per-address limits: what one client address may
// hold (open rooms, sockets) and how fast it may act (create, join,
// chat), on package addrlimit's counts and buckets. Everything here but
// ClientAddr runs with Lobby.mu held.

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

// buckets returns a bucket per client address for r, or nil when r is
// off.
func (r RateLimit) buckets() *addrlimit.Buckets {
	if r.Burst < 0 {
		return nil
	}
	return addrlimit.NewBuckets(rate.Every(r.Every), r.Burst, addrlimit.DefaultMaxKeys)
}

// take spends a token of k's bucket in b for one action ("games
// created", "joins", "chat messages"), or says how long to wait.
func (l *Lobby) take(b *addrlimit.Buckets, k addrlimit.Key, what string) *Error {
	return l.spend(b, k, "too many "+what+" from your address")
}

// takeGlobal spends a token of the lobby-wide bucket b (one bucket, the
// zero Key) for one action, or says how long to wait.
func (l *Lobby) takeGlobal(b *addrlimit.Buckets, what string) *Error {
	return l.spend(b, addrlimit.Key{}, "too many "+what+" right now")
}

func (l *Lobby) spend(b *addrlimit.Buckets, k addrlimit.Key, why string) *Error {
	if b == nil {
		return nil
	}
	d := b.Take(l.now(), k)
	if d == 0 {
		return nil
	}
	secs := int(math.Ceil(d.Seconds()))
	e := errorf(CodeRateLimited, "%s: wait %d s", why, secs)
	e.RetryAfter = secs
	return e
}

// hold counts one more of what k holds in c ("games", "lobby
// connections"), or refuses an address that already holds max (a
// negative max is no limit).
func hold(c *addrlimit.Counts, k addrlimit.Key, max int, what string) *Error {
	if held, ok := c.Hold(k, max); !ok {
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
