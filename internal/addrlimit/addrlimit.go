package addrlimit

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Key is one client address as the limits count it (KeyOf). The zero
// Key is that of the zero Addr: callers whose address is not an IP
// address share it.
type Key struct{ p netip.Prefix }

// KeyOf returns a's key: an IPv4 address (IPv4-mapped IPv6 ones
// included), or the /64 of an IPv6 one, without its zone.
func KeyOf(a netip.Addr) Key {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // the zero Addr gives the zero Prefix
	return Key{p}
}

// String is the key as a prefix: "192.0.2.1/32", "2001:db8:1:2::/64".
func (k Key) String() string { return k.p.String() }

// Counts is a count per key of something it holds. The zero Counts
// holds nothing and is ready to use.
type Counts struct {
	mu   sync.Mutex
	held map[Key]int // no zero counts
}

// Hold adds one to k's count unless k already holds max (a negative max
// is no limit). It returns k's count before the call and whether it
// added one.
func (c *Counts) Hold(k Key, max int) (held int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	held = c.held[k]
	if max >= 0 && held >= max {
		return held, false
	}
	if c.held == nil {
		c.held = map[Key]int{}
	}
	c.held[k] = held + 1
	return held, true
}

// Release gives back one of what k holds, forgetting k once it holds
// nothing. Releasing a key that holds nothing does nothing.
func (c *Counts) Release(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.held[k]; n > 1 {
		c.held[k] = n - 1
	} else {
		delete(c.held, k)
	}
}

// Held is what k holds.
func (c *Counts) Held(k Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[k]
}

// Len is the number of keys that hold something.
func (c *Counts) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// DefaultMaxKeys is the cap on keys that tickwire's users give their
// Buckets: at some 180 bytes a key, 11 MB.
const DefaultMaxKeys = 1 << 16

// minSweep is how many keys a Buckets keeps before it first forgets the
// full ones.
const minSweep = 1024

// Buckets is a token bucket per key, keeping at most a fixed number of
// keys (see the package doc).
type Buckets struct {
	limit   rate.Limit
	burst   int
	maxKeys int

	mu      sync.Mutex
	keys    map[Key]*rate.Limiter
	sweepAt int // len(keys) at which a new key makes Take forget some
}

// NewBuckets returns buckets that hold burst tokens and gain limit a
// second, for at most maxKeys keys. It panics unless all three are
// positive.
func NewBuckets(limit rate.Limit, burst, maxKeys int) *Buckets {
	if !(limit > 0) || burst < 1 || maxKeys < 1 {
		panic("addrlimit: NewBuckets wants a positive limit, burst and maxKeys")
	}
	return &Buckets{limit: limit, burst: burst, maxKeys: maxKeys,
		keys: map[Key]*rate.Limiter{}, sweepAt: min(minSweep, maxKeys)}
}

// Take spends a token of k's bucket at now and returns 0, or, when the
// bucket is empty, spends nothing and returns how long until it holds a
// token.
func (b *Buckets) Take(now time.Time, k Key) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.keys[k]
	if lim == nil {
		if len(b.keys) >= b.sweepAt {
			b.sweep(now)
		}
		lim = rate.NewLimiter(b.limit, b.burst)
		b.keys[k] = lim
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 {
		r.CancelAt(now)
	}
	return wait
}

// sweep forgets the keys whose buckets are full at now (a new bucket
// would be the same), then, above three quarters of maxKeys, the
// fullest down to that. The next sweep is when the keys have doubled,
// or at maxKeys.
func (b *Buckets) sweep(now time.Time) {
	type bucket struct {
		k      Key
		tokens float64
	}
	var left []bucket
	for k, lim := range b.keys {
		if t := lim.TokensAt(now); t >= float64(b.burst) {
			delete(b.keys, k)
		} else {
			left = append(left, bucket{k, t})
		}
	}
	if keep := b.maxKeys - (b.maxKeys+3)/4; len(left) > keep {
		slices.SortFunc(left, func(x, y bucket) int { return cmp.Compare(y.tokens, x.tokens) })
		for _, x := range left[:len(left)-keep] {
			delete(b.keys, x.k)
		}
	}
	b.sweepAt = min(b.maxKeys, max(minSweep, 2*len(b.keys)))
}

// Len is the number of keys kept.
func (b *Buckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.keys)
}
