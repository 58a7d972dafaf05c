package lobby

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/proto"
)

// Config configures a Lobby. The zero value is a working lobby that offers
// one game type, "demo", hosted by its players (no game server is known);
// give Servers to host games on game servers.
type Config struct {
	// Types are the game types on the menu, in menu order. Empty means the
	// types the Servers run, or one type named "demo" when they name none.
	Types []GameType

	// Servers are the game servers that host server-hosted games, chosen
	// round robin. Empty means Fleet, or without it every game is
	// peer-hosted.
	Servers []GameServer

	// Fleet, when set, hosts server-hosted games of the types no Servers
	// entry runs: each new game goes to the least-loaded healthy server
	// of the fleet that runs its type, which reserves the seats and
	// hands the lobby its token key before the players get tokens. The
	// dashboard shows the fleet.
	Fleet *fleet.Directory

	// Rendezvous, when set, is the UDP address ("host:port") of the
	// reflector that learns the NAT mappings of the players of
	// peer-hosted games (package rendezvous, docs/NAT.md): each seat of a
	// peer-hosted room gets a ticket to send it from its game sockets,
	// and whoever runs the reflector reports what it learns through
	// Lobby.NoteMapping. The assignment then names the host's public
	// mapping (and, to a player behind the same public address, its
	// local addresses) as the host's candidates, and tells the host every
	// player's, to punch toward. Empty: the lobby names the address the
	// host's HTTP request came from, as without NAT traversal.
	Rendezvous string

	// MaxRoomsPerType bounds the open rooms of one game type.
	// Zero means 100.
	MaxRoomsPerType int
	// MaxNameLen bounds player and game names, in characters.
	// Zero means 24.
	MaxNameLen int
	// MaxChatLen bounds one chat line, in characters. Zero means 280.
	MaxChatLen int
	// MaxMessageBytes bounds one WebSocket message or API request body.
	// A larger message is answered with an "message_too_large" error and
	// changes nothing; one larger than 64 times this closes the socket
	// with status 1009. Zero means 4096.
	MaxMessageBytes int
	// MaxSockets bounds the WebSocket connections open at once; further
	// upgrades get 503 "busy". Zero means 10000.
	MaxSockets int

	// Per-address limits. A client address is the TCP peer's IP address
	// (see TrustedProxies), an IPv6 one counted by its /64. A rate limit
	// is answered with 429 "rate_limited" and a Retry-After header (over
	// a socket: an error message with retryAfter), a per-address cap
	// with 429 "address_limit"; either changes nothing. Negative caps
	// and NoRateLimit turn a limit off.

	// CreateRate bounds how fast one address creates rooms. Zero means
	// 5 at once, then one per 10 s.
	CreateRate RateLimit
	// GlobalCreateRate bounds how fast the lobby creates rooms from all
	// addresses together; a create refused by it still spends the
	// address's CreateRate token, so many addresses together ask at most
	// the sum of their CreateRates. Zero means 20 at once, then 10 a
	// second.
	GlobalCreateRate RateLimit
	// JoinRate bounds how fast one address joins rooms. Zero means 10 at
	// once, then one per second.
	JoinRate RateLimit
	// ChatRate bounds how fast one address chats, in all its rooms
	// together. Zero means 5 lines at once, then one per second.
	ChatRate RateLimit
	// MaxRoomsPerAddr bounds the open rooms one address created. Zero
	// means 5.
	MaxRoomsPerAddr int
	// MaxSocketsPerAddr bounds the WebSockets one address holds open.
	// Zero means 20.
	MaxSocketsPerAddr int
	// TrustedProxies are the reverse proxies in front of the lobby. A
	// request whose peer is in one of them is counted against the
	// rightmost X-Forwarded-For address that is not (Lobby.ClientAddr).
	// Empty means X-Forwarded-For is ignored: behind a proxy, every
	// player then shares the proxy's limits.
	TrustedProxies []netip.Prefix

	// SeatTimeout is how long a player that joined through the JSON API
	// (without a WebSocket) keeps its place without calling the API; a
	// long-poll for the assignment counts as present the whole time.
	// It is also how long an assignment stays available to API players
	// after it was made. Zero means 10 s: a room nobody is present in
	// goes within seconds.
	SeatTimeout time.Duration
	// IdleTimeout is how long a player keeps its seat without acting
	// (create, join, ready, unready, chat): an idle player leaves its
	// room ("went idle") even while it long-polls or keeps its socket
	// open, so nobody holds a place or a room for ever. Zero means
	// 10 min; negative means never.
	IdleTimeout time.Duration
	// PingInterval is how often the lobby pings each WebSocket to find
	// dead connections; a socket that fails to answer a ping within the
	// same interval is dropped (and its player leaves). Zero means 15 s.
	PingInterval time.Duration
	// TokenTTL is the validity of the connect tokens the lobby mints.
	// Zero means tickwire.DefaultTokenTTL.
	TokenTTL time.Duration

	// Relay, when set, is the relay that the players of peer-hosted
	// games fall back to when no direct path joins them: RelayGrants
	// mints its grants. Nil: no relay.
	Relay *RelayConfig

	// OriginPatterns are extra host patterns (path.Match syntax, e.g.
	// "*.example.com") whose pages may open WebSockets to the lobby.
	// Same-origin pages and non-browser clients are always allowed.
	OriginPatterns []string

	// Stats feeds the dashboard with the game server's games, connections
	// and tick timing. Nil means the dashboard shows the lobby only.
	Stats StatsSource

	// Registerer receives the lobby's Prometheus collectors. Nil means a
	// new registry (with the Go and process collectors) that Admin's
	// /metrics serves.
	Registerer prometheus.Registerer
	// Gatherer is what Admin's /metrics serves. Nil means Registerer
	// when it is also a Gatherer (as *prometheus.Registry is), else
	// prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer

	// PlayURL, when set, is the page that plays a server-hosted game in
	// the browser (tickwire-server's /play): once the lobby page hears
	// its game is assigned, it keeps the player's token in the tab's
	// sessionStorage (key "tickwire.token") and opens PlayURL; the menu's
	// "Play now" seats the player in a game with one click (see the
	// package documentation). Empty: the page shows the assignment only.
	PlayURL string
	// DemoURL, when set, is a page where a visitor watches a game
	// without joining (tickwire-server's -demo); the menu links it.
	DemoURL string

	// OnAssigned, when set, is called once for every game the lobby
	// assigns, after the players were sent their tokens, from the
	// goroutine that completed the room. It must not block for long.
	OnAssigned func(GameAssigned)

	// Logger receives the lobby's log lines. Nil means slog.Default().
	Logger *slog.Logger
}

// GameType is one kind of game on the menu.
type GameType struct {
	// Name identifies the type in URLs and tokens: 1 to 32 characters of
	// a-z, 0-9, '-' and '_'. Required.
	Name string
	// Title is the menu text. Empty means Name.
	Title string
	// Description is one line under the title on the menu.
	Description string
	// MinPlayers is how many players must be in a room before it can
	// start (when all are ready). Zero means 2.
	MinPlayers int
	// MaxPlayers is the largest room a player may create.
	// Zero means 8; at most 1000.
	MaxPlayers int
}

// GameServer is a game server process the lobby assigns games to. Such a
// process hosts many games on one UDP port and creates a game the first
// time a valid connect token names its id, so assigning a game needs no
// call to it: the lobby picks a server, a fresh game id and mints tokens.
type GameServer struct {
	// Name labels the server on the dashboard. Empty means Addrs[0].
	Name string
	// Addrs are the UDP addresses players dial, "host:port", tried in
	// order (1 to tickwire.MaxTokenAddrs). An address with no host or an
	// unspecified one (":7777", "0.0.0.0:7777", "[::]:7777") is completed
	// with the host name each player used to reach the lobby, which is
	// right when the lobby is served by the game server's own process.
	Addrs []string
	// Key is the server's token key (tickwire.LoadOrCreateKey). Required.
	Key tickwire.Key
	// Types are the names of the game types it runs. Empty means all.
	Types []string
}

// GameAssigned tells Config.OnAssigned about a game that was just assigned.
type GameAssigned struct {
	GameID  uint64
	Type    string
	Hosting Hosting
	// Server is the game server's name for server-hosted games.
	Server string
	// Addrs are the addresses in the tokens (for peer-hosted games, the
	// host player's).
	Addrs   []string
	Players []AssignedPlayer
}

// Defaults for the zero Config.
const (
	DefaultType              = "demo"
	DefaultMaxRoomsPerType   = 100
	DefaultMaxNameLen        = 24
	DefaultMaxChatLen        = 280
	DefaultMaxMessageBytes   = 4096
	DefaultMaxSockets        = 10000
	DefaultMaxRoomsPerAddr   = 5
	DefaultMaxSocketsPerAddr = 20
	DefaultSeatTimeout       = 10 * time.Second
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultPingInterval      = 15 * time.Second
	DefaultMinPlayers        = 2
	DefaultMaxPlayers        = 8

	maxRoomPlayers = 1000
	maxTypeNameLen = proto.UserDataSize // the name goes into each token's UserData
)

// Default rate limits for the zero Config.
var (
	DefaultCreateRate       = RateLimit{Every: 10 * time.Second, Burst: 5}
	DefaultGlobalCreateRate = RateLimit{Every: 100 * time.Millisecond, Burst: 20}
	DefaultJoinRate         = RateLimit{Every: time.Second, Burst: 10}
	DefaultChatRate         = RateLimit{Every: time.Second, Burst: 5}
)

var typeNameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// withDefaults returns a copy of c with every zero field set to its
// default, or an error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&c.MaxRoomsPerType, DefaultMaxRoomsPerType)
	def(&c.MaxNameLen, DefaultMaxNameLen)
	def(&c.MaxChatLen, DefaultMaxChatLen)
	def(&c.MaxMessageBytes, DefaultMaxMessageBytes)
	def(&c.MaxSockets, DefaultMaxSockets)
	def(&c.MaxRoomsPerAddr, DefaultMaxRoomsPerAddr)
	def(&c.MaxSocketsPerAddr, DefaultMaxSocketsPerAddr)
	if c.SeatTimeout == 0 {
		c.SeatTimeout = DefaultSeatTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	c.CreateRate = c.CreateRate.withDefault(DefaultCreateRate)
	c.GlobalCreateRate = c.GlobalCreateRate.withDefault(DefaultGlobalCreateRate)
	c.JoinRate = c.JoinRate.withDefault(DefaultJoinRate)
	c.ChatRate = c.ChatRate.withDefault(DefaultChatRate)
	if c.MaxRoomsPerType < 0 || c.MaxNameLen < 0 || c.MaxChatLen < 0 || c.MaxMessageBytes < 0 || c.MaxSockets < 0 ||
		c.SeatTimeout < 0 || c.PingInterval < 0 || c.TokenTTL < 0 {
		return c, errors.New("lobby: negative limit in Config")
	}
	for _, r := range []struct {
		name string
		r    RateLimit
	}{{"CreateRate", c.CreateRate}, {"GlobalCreateRate", c.GlobalCreateRate}, {"JoinRate", c.JoinRate}, {"ChatRate", c.ChatRate}} {
		if !r.r.valid() {
			return c, fmt.Errorf("lobby: %s %+v: want a positive Every and Burst, or NoRateLimit", r.name, r.r)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Relay != nil {
		r, err := c.Relay.withDefaults()
		if err != nil {
			return c, err
		}
		c.Relay = &r
	}

	c.Servers = append([]GameServer(nil), c.Servers...)
	for i := range c.Servers {
		s := &c.Servers[i]
		if n := len(s.Addrs); n == 0 || n > tickwire.MaxTokenAddrs {
			return c, fmt.Errorf("lobby: game server %d needs 1 to %d addresses, has %d", i, tickwire.MaxTokenAddrs, n)
		}
		for _, a := range s.Addrs {
			if _, _, err := net.SplitHostPort(a); err != nil || len(a) > 200 {
				return c, fmt.Errorf("lobby: game server %d: bad address %q", i, a)
			}
		}
		if s.Key == (tickwire.Key{}) {
			return c, fmt.Errorf("lobby: game server %d (%s) has no key", i, s.Addrs[0])
		}
		if s.Name == "" {
			s.Name = s.Addrs[0]
		}
	}

	if len(c.Types) == 0 {
		seen := map[string]bool{}
		for _, s := range c.Servers {
			for _, t := range s.Types {
				if !seen[t] {
					seen[t] = true
					c.Types = append(c.Types, GameType{Name: t})
				}
			}
		}
		if len(c.Types) == 0 {
			c.Types = []GameType{{Name: DefaultType, Title: "Demo", Description: "The demo game that ships with tickwire."}}
		}
	}
	c.Types = append([]GameType(nil), c.Types...)
	seen := map[string]bool{}
	for i := range c.Types {
		t := &c.Types[i]
		if !typeNameRE.MatchString(t.Name) || len(t.Name) > maxTypeNameLen {
			return c, fmt.Errorf("lobby: game type name %q: want 1 to 32 of a-z 0-9 - _", t.Name)
		}
		if seen[t.Name] {
			return c, fmt.Errorf("lobby: game type %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.Title == "" {
			t.Title = t.Name
		}
		def(&t.MinPlayers, DefaultMinPlayers)
		def(&t.MaxPlayers, DefaultMaxPlayers)
		if t.MinPlayers < 1 || t.MaxPlayers < t.MinPlayers || t.MaxPlayers > maxRoomPlayers {
			return c, fmt.Errorf("lobby: game type %q: players %d..%d out of range 1..%d", t.Name, t.MinPlayers, t.MaxPlayers, maxRoomPlayers)
		}
	}
	for i, s := range c.Servers {
		for _, t := range s.Types {
			if !seen[t] {
				return c, fmt.Errorf("lobby: game server %d (%s) runs type %q, which is not in Types", i, s.Name, t)
			}
		}
	}
	return c, nil
}
