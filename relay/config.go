package relay

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/tickwire/tickwire/udp"
)

// Config configures a Server. The zero value is the default, with
// relayed ports chosen by the kernel.
type Config struct {
	// MaxAllocations bounds the allocations held at once; a grant for a
	// new one beyond it gets StatusFull. Zero means 1024.
	MaxAllocations int

	// PortMin and PortMax, when set, are the range the relayed ports are
	// taken from (two per allocation), for a firewall that opens only
	// those. Zero for both means ports the kernel picks.
	PortMin, PortMax uint16

	// Rate bounds the bytes one allocation forwards per second, both
	// directions together, after Burst bytes at once (a token bucket);
	// datagrams beyond it are dropped. Zero means 256 KiB/s.
	Rate int
	// Burst is the token bucket's size in bytes. Zero means Rate/4, at
	// least MaxDatagram.
	Burst int

	// IdleTimeout is how long an allocation lives without forwarding a
	// datagram or hearing an authenticated bind request; its sockets are
	// then closed. Zero means 60 s (four missed keep-alives at
	// KeepAliveInterval).
	IdleTimeout time.Duration

	// RebindQuiet is how long a side's bound address must have been
	// silent before a bind request with the side's grant from another
	// address takes the side over (a NAT that remapped the player).
	// Zero means 3 s.
	RebindQuiet time.Duration

	// ListenPacket opens a relayed port at addr (port 0: any). Nil means
	// a UDP socket of package udp with the kernel's default buffer sizes.
	// Tests pass sockets of an in-memory network.
	ListenPacket func(addr netip.AddrPort) (udp.BatchConn, error)
}

// Defaults and bounds of Config.
const (
	DefaultMaxAllocations = 1024
	DefaultRate           = 256 << 10
	DefaultIdleTimeout    = 60 * time.Second
	DefaultRebindQuiet    = 3 * time.Second

	// KeepAliveInterval is how often a bound side should repeat its bind
	// request to its relayed port, to keep its NAT's mapping and the
	// allocation alive.
	KeepAliveInterval = 15 * time.Second

	// MaxDatagram is the largest datagram the relay forwards (tickwire's
	// hard maximum packet); larger ones are dropped.
	MaxDatagram = 1472
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("relay: invalid config")

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.MaxAllocations == 0 {
		c.MaxAllocations = DefaultMaxAllocations
	}
	if c.MaxAllocations < 0 {
		return c, fmt.Errorf("%w: MaxAllocations %d is negative", ErrConfig, c.MaxAllocations)
	}
	if (c.PortMin == 0) != (c.PortMax == 0) || c.PortMin > c.PortMax {
		return c, fmt.Errorf("%w: port range %d..%d: give both ends, the first no larger than the second", ErrConfig, c.PortMin, c.PortMax)
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Rate < 0 || c.Burst < 0 {
		return c, fmt.Errorf("%w: Rate %d and Burst %d must not be negative", ErrConfig, c.Rate, c.Burst)
	}
	if c.Burst == 0 {
		c.Burst = max(c.Rate/4, MaxDatagram)
	}
	if c.Burst < MaxDatagram {
		return c, fmt.Errorf("%w: Burst %d is smaller than the largest datagram (%d)", ErrConfig, c.Burst, MaxDatagram)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.RebindQuiet == 0 {
		c.RebindQuiet = DefaultRebindQuiet
	}
	if c.IdleTimeout < 0 || c.RebindQuiet < 0 {
		return c, fmt.Errorf("%w: IdleTimeout %v and RebindQuiet %v must not be negative", ErrConfig, c.IdleTimeout, c.RebindQuiet)
	}
	if c.ListenPacket == nil {
		c.ListenPacket = listenUDP
	}
	return c, nil
}

// listenUDP is Config.ListenPacket's default. Relayed ports keep the
// kernel's buffer sizes: a relay holds two per allocation.
func listenUDP(addr netip.AddrPort) (udp.BatchConn, error) {
	network := "udp6"
	switch a := addr.Addr(); {
	case a.Unmap().Is4():
		network = "udp4"
	case a.IsUnspecified():
		network = "udp" // dual-stack, like a control socket on [::]
	}
	return udp.Listen(network, addr.String(), udp.Config{ReadBuffer: -1, WriteBuffer: -1})
}
