package lobby

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/tickwire/tickwire/relay"
)

// RelayConfig names the relay (package relay) that the players of a
// peer-hosted game fall back to when no direct path joins them: the
// lobby mints its grants (Lobby.RelayGrants).
type RelayConfig struct {
	// Addr is the relay's control address as players reach it,
	// "host:port". Required.
	Addr string
	// Key is the relay's key (the relay's -relay-key-file). Required.
	Key relay.Key
	// GrantTTL is how long the grants bind (a side whose NAT remaps it
	// binds again with its grant, so it should outlast the game). Zero
	// means DefaultRelayGrantTTL.
	GrantTTL time.Duration
	// Budget is the bytes one allocation forwards, both ways together.
	// Zero means DefaultRelayBudget.
	Budget uint64
}

// Defaults of RelayConfig.
const (
	DefaultRelayGrantTTL = 4 * time.Hour
	DefaultRelayBudget   = 1 << 30 // 1 GiB: a 2-hour game at 150 kB/s
)

// withDefaults validates r and fills in its defaults.
func (r RelayConfig) withDefaults() (RelayConfig, error) {
	if _, _, err := net.SplitHostPort(r.Addr); err != nil || len(r.Addr) > 200 {
		return r, fmt.Errorf("lobby: relay address %q is not host:port", r.Addr)
	}
	if r.Key == (relay.Key{}) {
		return r, errors.New("lobby: the relay has no key")
	}
	if r.GrantTTL < 0 {
		return r, fmt.Errorf("lobby: relay grant TTL %v is negative", r.GrantTTL)
	}
	if r.GrantTTL == 0 {
		r.GrantTTL = DefaultRelayGrantTTL
	}
	if r.Budget == 0 {
		r.Budget = DefaultRelayBudget
	}
	return r, nil
}

// RelayGrants are the grants of one relay allocation: what the joiner
// and the host of a peer-hosted game each need to be relayed to the
// other (relay.Bind with the relay's address and its own grant).
type RelayGrants struct {
	// Addr is the relay's control address (RelayConfig.Addr).
	Addr string
	// Joiner is the grant of side 0, for the player who joins; Host that
	// of side 1, for the player who hosts. Hand each only to its player.
	Joiner, Host []byte
	// Expires is when the grants stop binding.
	Expires time.Time
}

// ErrNoRelay is returned by RelayGrants when Config.Relay is not set.
var ErrNoRelay = errors.New("lobby: no relay configured")

// RelayGrants mints the grants of a new relay allocation for a joiner
// and a host whom no direct path joins.
func (l *Lobby) RelayGrants() (RelayGrants, error) {
	r := l.cfg.Relay
	if r == nil {
		return RelayGrants{}, ErrNoRelay
	}
	exp := l.now().Add(r.GrantTTL)
	j, h, err := relay.MintPair(r.Key, exp, r.Budget)
	if err != nil {
		return RelayGrants{}, err
	}
	return RelayGrants{Addr: r.Addr, Joiner: j, Host: h, Expires: exp}, nil
}
