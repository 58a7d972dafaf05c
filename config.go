package tickwire

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/tickwire/tickwire/internal/session"
	"github.com/tickwire/tickwire/proto"
)

// Config tunes a Server or Client. The zero value is usable: every field
// documents its default, applied by withDefaults. A Server and its Clients
// need not share a Config: the server tells each client the tick rate,
// packet size and timeouts it uses in the accept packet.
type Config struct {
	// TickRate is the fixed simulation rate in ticks per second.
	// Default 60. Server only (clients follow the server's).
	TickRate int

	// MaxPacketSize is the largest UDP payload sent, in bytes.
	// Default proto.DefaultMaxPacketSize (1200); at most
	// proto.MaxPacketSizeLimit (1472). The server's value wins.
	MaxPacketSize int

	// Heartbeat is the longest a peer stays silent: a keep-alive goes out
	// when nothing else has for this long. Default 500 ms.
	Heartbeat time.Duration

	// Timeout drops a peer after this long without an authenticated
	// packet. A server tells its clients its Timeout in the accept, and
	// a client follows it unless its own is set (and longer than the
	// server's heartbeat). Default 10 s: what real networks need to survive a Wi-Fi
	// roam, a mobile handover, a closed laptop lid or a stalled process
	// (netcode.io and GameNetworkingSockets use the same). It is not the
	// clock that finds a dead host for host migration: that one is
	// migrate.DefaultTimeout (1.5 s), and the game sees a silent peer
	// long before Timeout through Interrupt.
	Timeout time.Duration

	// Interrupt marks a connection interrupted after this long without
	// an authenticated packet (Conn.Interrupted), and tells a Handler
	// that implements InterruptHandler, so a game can show "connection
	// interrupted" and hold or predict the player's inputs while the
	// session waits for it, up to Timeout. Default 1 s (at least two
	// heartbeats, and halfway from Heartbeat to Timeout at most); less
	// than Timeout. Server only.
	Interrupt time.Duration

	// RejoinGrace is how long a client whose session ended without a
	// leave (a timeout, a process restart, a new network) may come back
	// into the same player slots with the rejoin credential the server
	// gave it over the encrypted channel (Client.RejoinToken). Default
	// 30 s; negative: no rejoin. Server only.
	RejoinGrace time.Duration

	// ReliableFEC has no effect: every connection protects new reliable
	// data on lossy links with Reed–Solomon parity frames, at the rate the
	// measured loss calls for, and sends nothing extra on a clean one
	// (reliability.RedundancyFor; bench/README.md, "Reliable
	// messaging"). It stays so that configurations that set it compile.
	ReliableFEC bool

	// HandshakeTimeout bounds a client's whole connection attempt and the
	// lifetime of a challenge cookie. Default 5 s.
	HandshakeTimeout time.Duration

	// MaxConnections caps connections on a server. Default 1024.
	MaxConnections int

	// MaxGames caps the games a server hosts at once (it creates a game on
	// the first valid token naming it). Default 64.
	MaxGames int

	// Workers is how many goroutines build the connections' packets each
	// tick — interest scheduling, delta encoding, sealing — each owning a
	// fixed share of the connections (the packets are the same whatever
	// the number). They also open (authenticate and decrypt) a backlog
	// of received datagrams before the loop handles them in order.
	// Default: GOMAXPROCS, at most 16; 1 builds on the server's loop.
	// Server only.
	Workers int

	// AcceptGame, if set, says whether the server hosts a game id; tokens
	// naming another game are denied (DenyWrongGame). Default: any game,
	// up to MaxGames at once.
	AcceptGame func(gameID uint64) bool

	// PreviousKeys are token keys a server still accepts besides its own
	// (at most 3), during a key rotation: tokens name their key by id.
	// Server only.
	PreviousKeys []Key

	// ServerAddrs are the addresses ("host:port", as tokens name them)
	// a server answers to: a token that names none of them is denied
	// (DenyWrongServer), so a token minted for one server does not open
	// another that shares its key. Server only. Default: not checked.
	ServerAddrs []string

	// ObserveTick, if set, is called on the server's loop after every
	// tick with the tick number and how long the tick's work took (the
	// handler's Tick plus building and sending every packet).
	ObserveTick func(tick uint32, took time.Duration)

	// Logger receives connection lifecycle events. Default: discard.
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultTickRate         = 60
	DefaultHeartbeat        = 500 * time.Millisecond
	DefaultTimeout          = 10 * time.Second
	DefaultInterrupt        = time.Second
	DefaultRejoinGrace      = 30 * time.Second
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultMaxConnections   = 1024
	DefaultMaxGames         = 64
)

// withDefaults returns c with zero fields replaced by their defaults, or an
// error naming the first field that is out of range.
func (c Config) withDefaults() (Config, error) {
	if c.TickRate == 0 {
		c.TickRate = DefaultTickRate
	}
	if c.MaxPacketSize == 0 {
		c.MaxPacketSize = proto.DefaultMaxPacketSize
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Interrupt == 0 {
		// Past two heartbeats (an idle peer is not interrupted), and
		// well before the timeout.
		c.Interrupt = min(max(DefaultInterrupt, 2*c.Heartbeat), (c.Heartbeat+c.Timeout)/2)
	}
	if c.RejoinGrace == 0 {
		c.RejoinGrace = DefaultRejoinGrace
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxGames == 0 {
		c.MaxGames = DefaultMaxGames
	}
	if c.Workers == 0 {
		c.Workers = min(runtime.GOMAXPROCS(0), 16)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.TickRate < 1 || c.TickRate > 1000:
		return c, fmt.Errorf("tickwire: Config.TickRate %d out of range 1..1000", c.TickRate)
	case c.MaxPacketSize < session.MinPacketSize || c.MaxPacketSize > proto.MaxPacketSizeLimit:
		return c, fmt.Errorf("tickwire: Config.MaxPacketSize %d out of range %d..%d", c.MaxPacketSize, session.MinPacketSize, proto.MaxPacketSizeLimit)
	case c.Heartbeat < time.Millisecond || c.Heartbeat > 30*time.Second:
		return c, fmt.Errorf("tickwire: Config.Heartbeat %v out of range 1ms..30s", c.Heartbeat)
	case c.Timeout <= c.Heartbeat || c.Timeout > time.Minute:
		return c, fmt.Errorf("tickwire: Config.Timeout %v must exceed Heartbeat (%v) and be at most 1m", c.Timeout, c.Heartbeat)
	case c.Interrupt < 0 || c.Interrupt >= c.Timeout:
		return c, fmt.Errorf("tickwire: Config.Interrupt %v must be positive and less than Timeout (%v)", c.Interrupt, c.Timeout)
	case c.RejoinGrace > time.Hour:
		return c, fmt.Errorf("tickwire: Config.RejoinGrace %v is over an hour", c.RejoinGrace)
	case c.HandshakeTimeout < 10*time.Millisecond:
		return c, fmt.Errorf("tickwire: Config.HandshakeTimeout %v too short", c.HandshakeTimeout)
	case c.MaxConnections < 1 || c.MaxConnections > 1<<20:
		return c, fmt.Errorf("tickwire: Config.MaxConnections %d out of range", c.MaxConnections)
	case c.MaxGames < 1:
		return c, fmt.Errorf("tickwire: Config.MaxGames %d out of range", c.MaxGames)
	case c.Workers < 1 || c.Workers > 256:
		return c, fmt.Errorf("tickwire: Config.Workers %d out of range 1..256", c.Workers)
	case len(c.PreviousKeys) > 3:
		return c, fmt.Errorf("tickwire: Config.PreviousKeys holds %d keys, at most 3", len(c.PreviousKeys))
	}
	return c, nil
}
