package lobby

import (
	"errors"
	"testing"
	"time"

	"github.com/tickwire/tickwire/relay"
)

// TestRelayGrants: a lobby given a relay mints pairs of grants the
// relay's key opens: side 0 for the joiner, side 1 for the host, one
// allocation per pair, binding for GrantTTL with the default budget. A
// lobby without a relay says so; a relay without an address or a key
// is refused.
func TestRelayGrants(t *testing.T) {
	key := relay.Key{7}
	l, err := New(Config{Relay: &RelayConfig{Addr: "relay.example:3478", Key: key, GrantTTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	l.now = func() time.Time { return t0 }
	g, err := l.RelayGrants()
	if err != nil {
		t.Fatal(err)
	}
	j, err1 := relay.Open(key, g.Joiner)
	h, err2 := relay.Open(key, g.Host)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if g.Addr != "relay.example:3478" || !g.Expires.Equal(t0.Add(time.Hour)) || j.Alloc != h.Alloc ||
		j.Side != relay.SideJoiner || h.Side != relay.SideHost || !j.Expires.Equal(g.Expires) || j.Budget != DefaultRelayBudget {
		t.Fatalf("grants %+v: joiner %+v host %+v", g, j, h)
	}
	if g2, _ := l.RelayGrants(); string(g2.Joiner) == string(g.Joiner) {
		t.Fatal("two pairs are one allocation")
	}

	l, err = New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RelayGrants(); !errors.Is(err, ErrNoRelay) {
		t.Fatalf("without a relay: %v", err)
	}
	for _, r := range []RelayConfig{{Addr: "no-port", Key: key}, {Addr: "relay:3478"}, {Addr: "relay:3478", Key: key, GrantTTL: -1}} {
		if _, err := New(Config{Relay: &r}); err == nil {
			t.Errorf("relay %+v accepted", r)
		}
	}
}
