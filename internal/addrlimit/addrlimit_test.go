package addrlimit

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

var t0 = time.Unix(1e9, 0)

func key(s string) Key { return KeyOf(netip.MustParseAddr(s)) }

// v4 is the i-th address of 10.0.0.0/16.
func v4(i int) Key { return KeyOf(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})) }

// TestKeyOf: an IPv4 address is its own key; an IPv6 address counts by
// its /64, without its zone; an IPv4-mapped address is its IPv4 one; the
// zero Addr has the zero Key.
func TestKeyOf(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1/32",
		"::ffff:192.0.2.1":     "192.0.2.1/32",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::":       "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"::1":                  "::/64",
	} {
		if got := key(addr).String(); got != want {
			t.Errorf("KeyOf(%s) = %s, want %s", addr, got, want)
		}
	}
	for _, same := range [][2]string{
		{"::ffff:192.0.2.1", "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"2001:db8:1:2::", "2001:db8:1:2:8000::"},
		{"fe80::1%eth0", "fe80::2"},
	} {
		if key(same[0]) != key(same[1]) {
			t.Errorf("%s and %s have keys %s and %s, want one", same[0], same[1], key(same[0]), key(same[1]))
		}
	}
	for _, apart := range [][2]string{
		{"192.0.2.1", "192.0.2.2"},               // IPv4 is not grouped
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},   // the next /64
		{"::ffff:192.0.2.1", "::ffff:192.0.2.2"}, // mapped ones neither
		{"192.0.2.1", "::c000:201"},              // IPv4-compatible is IPv6
	} {
		if key(apart[0]) == key(apart[1]) {
			t.Errorf("%s and %s share key %s", apart[0], apart[1], key(apart[0]))
		}
	}
	if KeyOf(netip.Addr{}) != (Key{}) {
		t.Errorf("KeyOf(zero Addr) = %s, want the zero Key", KeyOf(netip.Addr{}))
	}
}

// TestCounts: a key holds up to max; the next Hold is refused with the
// count and changes nothing; other keys are apart, addresses of one /64
// together; a Release frees a place, and a key holding nothing is
// forgotten.
func TestCounts(t *testing.T) {
	var c Counts
	a, a2, b := key("2001:db8::1"), key("2001:db8::2"), key("192.0.2.1")
	for i := range 2 {
		if held, ok := c.Hold(a, 3); !ok || held != i {
			t.Fatalf("hold %d: %d, %v", i+1, held, ok)
		}
	}
	if held, ok := c.Hold(a2, 3); !ok || held != 2 {
		t.Fatalf("hold 3 from the same /64: %d, %v", held, ok)
	}
	if held, ok := c.Hold(a, 3); ok || held != 3 {
		t.Fatalf("hold 4: %d, %v; want 3, refused", held, ok)
	}
	if n := c.Held(a); n != 3 {
		t.Fatalf("a refused hold changed the count: %d", n)
	}
	if held, ok := c.Hold(b, 3); !ok || held != 0 {
		t.Fatalf("another key: %d, %v", held, ok)
	}
	c.Release(a)
	if _, ok := c.Hold(a2, 3); !ok {
		t.Fatal("no place after a release")
	}
	if c.Len() != 2 {
		t.Fatalf("%d keys, want 2", c.Len())
	}
	for range 3 {
		c.Release(a)
	}
	c.Release(b)
	if c.Len() != 0 || c.Held(a) != 0 {
		t.Fatalf("after releasing all: %d keys, a holds %d", c.Len(), c.Held(a))
	}
	c.Release(b) // holds nothing: no effect
	if c.Held(b) != 0 || c.Len() != 0 {
		t.Fatalf("releasing a key holding nothing: it holds %d, %d keys", c.Held(b), c.Len())
	}
	if held, ok := c.Hold(b, 0); ok || held != 0 {
		t.Fatalf("max 0: %d, %v", held, ok)
	}
	for i := range 100 {
		if held, ok := c.Hold(b, -1); !ok || held != i {
			t.Fatalf("no limit, hold %d: %d, %v", i+1, held, ok)
		}
	}
}

// TestCountsConcurrent: goroutines holding and releasing one key never
// hold more than max at once.
func TestCountsConcurrent(t *testing.T) {
	const max = 3
	var c Counts
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if _, ok := c.Hold(Key{}, max); !ok {
					continue
				}
				n := in.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				in.Add(-1)
				c.Release(Key{})
			}
		})
	}
	wg.Wait()
	if most.Load() > max || c.Len() != 0 {
		t.Fatalf("%d held at once (max %d); %d keys left", most.Load(), max, c.Len())
	}
}

// TestBucketsRefill: burst tokens at once, then an empty bucket says how
// long to wait, spends nothing, and refills with (virtual) time; keys
// are apart, addresses of one /64 together.
func TestBucketsRefill(t *testing.T) {
	b := NewBuckets(rate.Every(8*time.Second), 2, 100)
	a, a2, c := key("2001:db8:0:1::1"), key("2001:db8:0:1::2"), key("2001:db8:0:2::1")
	want := func(after time.Duration, k Key, wait time.Duration) {
		t.Helper()
		if got := b.Take(t0.Add(after), k); got != wait {
			t.Fatalf("at +%v, %s: wait %v, want %v", after, k, got, wait)
		}
	}
	want(0, a, 0)
	want(0, a2, 0)
	want(0, a, 8*time.Second)
	want(0, a2, 8*time.Second) // refused: nothing spent
	want(0, c, 0)
	want(0, c, 0)
	want(4*time.Second, a, 4*time.Second)
	want(8*time.Second, a, 0)
	want(8*time.Second, a, 8*time.Second)
	want(time.Hour, a, 0) // full again, not more
	want(time.Hour, a, 0)
	want(time.Hour, a, 8*time.Second)
	if b.Len() != 2 {
		t.Fatalf("%d keys, want 2", b.Len())
	}
}

// TestBucketsSweep: once there are minSweep keys, a new one makes Take
// forget the keys whose buckets are full, none before they are; the next
// time is when the keys it kept have doubled.
func TestBucketsSweep(t *testing.T) {
	b := NewBuckets(rate.Every(time.Second), 10, 1<<16)
	for i := range minSweep {
		b.Take(t0, v4(i))
	}
	for range 5 {
		b.Take(t0, v4(0)) // 4 tokens: full last
	}
	now := t0.Add(time.Second / 2)
	b.Take(now, v4(minSweep))
	if b.Len() != minSweep+1 {
		t.Fatalf("%d keys after a sweep with no full bucket, want %d", b.Len(), minSweep+1)
	}
	now = t0.Add(2 * time.Second) // all full but v4(0)
	for i := minSweep + 1; i < 2*minSweep; i++ {
		b.Take(now, v4(i))
		if b.Len() != i+1 {
			t.Fatalf("swept at %d keys, before they doubled", i)
		}
	}
	now = now.Add(time.Second) // and those too
	b.Take(now, v4(1<<15))
	if b.Len() != 2 || b.keys[v4(0)] == nil || b.keys[v4(1<<15)] == nil {
		t.Fatalf("after the next sweep: %d keys, the one not yet full kept: %v; want it and the newest",
			b.Len(), b.keys[v4(0)] != nil)
	}
}

// TestBucketsCap: at maxKeys a new key makes Take forget the fullest
// buckets down to three quarters of the cap, never an emptier one, and
// a forgotten key starts again with a full bucket. A spray of new
// addresses never grows it past the cap nor resets an emptied bucket.
func TestBucketsCap(t *testing.T) {
	const maxKeys = 8
	b := NewBuckets(rate.Every(time.Hour), 8, maxKeys)
	for i := range maxKeys { // key i keeps i tokens
		for range 8 - i {
			b.Take(t0, v4(i))
		}
	}
	b.Take(t0, v4(100))
	if b.Len() != 7 {
		t.Fatalf("%d keys, want 6 kept and the new one", b.Len())
	}
	for i := range maxKeys {
		if kept := b.keys[v4(i)] != nil; kept != (i < 6) {
			t.Errorf("key %d (%d tokens): kept %v", i, i, kept)
		}
	}
	if w := b.Take(t0, v4(0)); w == 0 {
		t.Error("the emptied key was given tokens back")
	}
	for range 8 { // a forgotten key has a new bucket: full
		if w := b.Take(t0, v4(7)); w != 0 {
			t.Fatalf("forgotten key: wait %v", w)
		}
	}

	for i := range 10000 { // one token from each of many addresses
		b.Take(t0, KeyOf(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 4: byte(i >> 16), 5: byte(i >> 8), 6: byte(i)})))
		if b.Len() > maxKeys {
			t.Fatalf("%d keys after %d new ones, cap %d", b.Len(), i+1, maxKeys)
		}
	}
	if w := b.Take(t0, v4(0)); w == 0 {
		t.Error("a spray of new addresses gave the emptied key tokens back")
	}
}

func TestNewBucketsPanics(t *testing.T) {
	for _, a := range []struct {
		limit          rate.Limit
		burst, maxKeys int
	}{{0, 1, 1}, {-1, 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewBuckets(%v, %d, %d) did not panic", a.limit, a.burst, a.maxKeys)
				}
			}()
			NewBuckets(a.limit, a.burst, a.maxKeys)
		}()
	}
}
