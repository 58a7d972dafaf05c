package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/proto"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tickwire/tickwire"
)

// options are the validated command-line flags.
type options struct {
	listen     string
	http       string
	admin      string
	game       string
	tick       int
	maxPlayers int
	keyFile    string
	logLevel   slog.Level
	pprof      bool
	gameID     uint64
	publicAddr string
	// previousKeyFile holds a key still accepted while its tokens live.
	previousKeyFile string
	tokenTTL        time.Duration
	npcs            int
	units           int
	// The commits relay's settings (-game relay).
	relayInputSize    int
	relayMaxState     int
	relayStateTimeout time.Duration
	// maxRewind is the arena's lag-compensation window
	// (sim.ServerConfig.MaxRewind; 0: the engine's default).
	maxRewind time.Duration
	// snapshotInterval is the arena's game.Config.SnapshotInterval.
	snapshotInterval int
	// allAvatars makes every arena player see every avatar, wherever it
	// is (the browser's minimap); costs players² entity updates.
	allAvatars bool
	// record is the directory -record writes each game's replay to
	// (empty: none).
	record string

	maxConns        int
	maxConnsPerAddr int
	trustedProxies  []netip.Prefix

	tls *tls.Certificate // from -tls-cert and -tls-key; nil: plain HTTP

	natsURL    string // -nats: an external NATS; empty: embedded (with a lobby) or none
	natsListen string // -nats-listen: the embedded NATS's TCP address
	natsToken  string // from -nats-token-file: this process's role token for -nats
	natsNKey   string // -nats-nkey-file: this process's nkey seed for -nats; empty: a fresh nkey
	// natsRoleTokens are the tokens the embedded NATS on -nats-listen
	// admits game servers and lobbies with.
	natsServerToken, natsLobbyToken string
	publicURL                       string // -public-url: where players reach this lobby
	rendezvous                      string // -rendezvous: the reflector's UDP address
	name                            string // the server's name in the fleet

	// The browser client (web.go).
	web              bool   // -web: /play, the WebSocket fallback and WebTransport
	webTransport     string // -webtransport: the QUIC UDP address; empty: off
	webTransportAddr string // -webtransport-addr: host:port pages open instead
	webClient        string // -web-client: a client built beforehand; empty: build on demand
	demo             int    // -demo: bots in a demo game browsers can watch

	sessionTimeout time.Duration // -session-timeout: a silent client is dropped after this
	interrupt      time.Duration // -interrupt: a silent client is shown interrupted after this
	rejoinGrace    time.Duration // -rejoin-grace: how long a dropped client may come back into its slots

	devJoin    bool
	joinSecret string // from -join-secret or -join-secret-file
	joinRate   float64
	joinBurst  int

	// The relay for players no direct path joins (relay.go); not the
	// commits relay of -game relay.
	natRelay        string    // -relay: its control address; empty: none
	natRelayKeyFile string    // -relay-key-file
	natRelayPublic  string    // -relay-public-addr: where players reach it; empty: no relay known
	natRelayPorts   [2]uint16 // -relay-ports: its relayed ports' range; zero: any

	// Not flags; tests change them.
	httpLimits httpLimits
	now        func() time.Time // the clock of the rate limits
}

// validRelay checks the -relay-* flags, which apply to -game relay only.
func (o *options) validRelay(fs *flag.FlagSet) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "relay-") && !contains(natRelayFlags, f.Name) {
			set = append(set, "-"+f.Name)
		}
	})
	switch {
	case len(set) > 0 && o.game != "relay":
		return fmt.Errorf("%s apply to -game relay only", strings.Join(set, ", "))
	case o.relayInputSize < 0 || o.relayInputSize > proto.MaxInputBytes/3:
		return fmt.Errorf("-relay-input-size %d out of range 0..%d", o.relayInputSize, proto.MaxInputBytes/3)
	case o.relayMaxState < 1024 || o.relayMaxState > proto.MaxStateSize:
		return fmt.Errorf("-relay-max-state %d out of range 1024..%d", o.relayMaxState, proto.MaxStateSize)
	case o.relayStateTimeout < 100*time.Millisecond || o.relayStateTimeout > time.Minute:
		return fmt.Errorf("-relay-state-timeout %v out of range 100ms..1m", o.relayStateTimeout)
	}
	return nil
}

// trusted reports whether a is one of -trusted-proxies.
func (o *options) trusted(a netip.Addr) bool {
	for _, p := range o.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// flagHelp is returned for -h: usage was printed, exit 0.
var flagHelp = flag.ErrHelp

// knownGames are the games this binary embeds.
var knownGames = []string{"arena", "swarm", "relay"}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{httpLimits: defaultHTTPLimits, now: time.Now}
	fs := flag.NewFlagSet("tickwire-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tickwire-server [flags]\n\n"+
			"Runs a tickwire game server with an embedded game, the lobby on a public\n"+
			"HTTP address, and the operator pages (dashboard, metrics) on a private one.\n\n"+
			"Single machine (the default): one process runs the game server and the lobby,\n"+
			"which allocates games to it through a NATS server embedded in the process.\n\n"+
			"Fleet: game servers on many machines announce themselves on NATS; each lobby\n"+
			"allocates a new game to the least-loaded healthy server that runs its type.\n"+
			"  lobby:   tickwire-server -listen '' -nats-listen :4222 -nats-server-token-file server.token -nats-lobby-token-file lobby.token\n"+
			"  servers: tickwire-server -http '' -nats nats://lobby-host:4222 -nats-token-file server.token\n"+
			"  more lobbies: tickwire-server -listen '' -nats nats://lobby-host:4222 -nats-token-file lobby.token\n"+
			"Under Agones (AGONES_SDK_HTTP_PORT set) the server reports Ready, Health and its\n"+
			"player count to the SDK sidecar, and shuts down when its last game ends.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", ":7777", "UDP `address` for game traffic (empty: no game server, the lobby only)")
	fs.StringVar(&o.http, "http", ":8080", "public HTTP `address` for the lobby, /healthz and, with -dev-join, POST /api/join (empty: off)")
	fs.StringVar(&o.admin, "admin", "127.0.0.1:8081", "operator HTTP `address` for the dashboard, /metrics, the stats with players' addresses and -pprof;\nkeep it on loopback or a private network (empty: off)")
	fs.StringVar(&o.game, "game", "arena", "`game` to host: arena or swarm (embedded), or relay (commits mode with no game on the server:\n"+
		"any commits-mode client plays on it, such as tickwire-bot -game swarm; see -relay-*)")
	fs.IntVar(&o.tick, "tick", 60, "simulation tick `rate` in Hz (1..240)")
	fs.IntVar(&o.maxPlayers, "max-players", 256, "maximum connected `players` (1..4096)")
	fs.StringVar(&o.keyFile, "key-file", "tickwire.key", "connect-token key `file`; generated (mode 0600) when absent, refused when group or other users may read it")
	fs.StringVar(&o.previousKeyFile, "previous-key-file", "", "a previous connect-token key `file`, still accepted during a key rotation (mode 0600)")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	certFile := fs.String("tls-cert", "", "serve HTTPS on -http and -admin with this PEM certificate `file` (chain first); with -tls-key.\nConnect tokens must travel over TLS in production: use it, or a TLS-terminating proxy")
	keyFile := fs.String("tls-key", "", "PEM private key `file` of -tls-cert")
	fs.IntVar(&o.maxConns, "max-http-conns", 10000, "HTTP `connections` open at once on each listener; more wait in the kernel's backlog")
	fs.IntVar(&o.maxConnsPerAddr, "max-http-conns-per-addr", 64, "HTTP `connections` one client address may hold open on each listener (an IPv6 /64 counts as one;\n-trusted-proxies are not limited)")
	proxies := fs.String("trusted-proxies", "", "comma-separated `CIDRs` of reverse proxies in front of -http, whose X-Forwarded-For names the client\nthe lobby's per-address limits count (default: none; X-Forwarded-For is ignored)")
	fs.BoolVar(&o.pprof, "pprof", false, "serve net/http/pprof under /debug/pprof/ on the -admin address")
	fs.BoolVar(&o.devJoin, "dev-join", false, "development only: serve POST /api/join on -http, which mints a token for the default game to\nevery caller it lets through (the bots use it); needs -http on loopback or a -join-secret")
	fs.StringVar(&o.joinSecret, "join-secret", "", "bearer `secret` (16+ characters) POST /api/join then requires; other users can read it in ps:\nprefer -join-secret-file")
	secretFile := fs.String("join-secret-file", "", "`file` holding the -join-secret (mode 0600)")
	fs.Float64Var(&o.joinRate, "join-rate", 20, "`tokens` per second POST /api/join hands one client address, after -join-burst")
	fs.IntVar(&o.joinBurst, "join-burst", 50, "`tokens` POST /api/join hands one client address at once")
	fs.Uint64Var(&o.gameID, "game-id", 1, "`id` of the default game POST /api/join hands out (-dev-join)")
	fs.StringVar(&o.publicAddr, "public-addr", "", "UDP `host:port` put in tokens (default: the -listen address, with 127.0.0.1 for an empty host)")
	fs.DurationVar(&o.tokenTTL, "token-ttl", 30*time.Second, "validity of tokens minted by POST /api/join (-dev-join)")
	fs.IntVar(&o.npcs, "npcs", 300, "wandering `NPCs` in each arena game (0..4000)")
	fs.DurationVar(&o.maxRewind, "max-rewind", 0, "arena: how far back lag compensation rewinds a shot (0: the engine's 200 ms; at most 1s); players whose\nround trip plus interpolation delay exceed it must lead their targets, and their view is cut to it (see the bots' -max-interp-lag)")
	fs.IntVar(&o.snapshotInterval, "snapshot-interval", 1, "arena: `ticks` between a player's snapshots (1..8; 2: 30 Hz at -tick 60); the game and the inputs keep the tick\nrate, the server builds each tick only 1/N of the players' packets, and remote entities show about N−1 ticks later")
	fs.BoolVar(&o.allAvatars, "all-avatars", false, "arena: every player sees every avatar wherever it is (the browser's minimap shows them all); off, avatars\n"+
		"beyond the view radius are not sent, like everything else. Each avatar then goes to every player: players² updates,\n"+
		"so the default is on only with -max-players up to 256")
	fs.IntVar(&o.units, "units", swarm.DefaultUnits, "`units` in each swarm game (1..100000)")
	fs.IntVar(&o.relayInputSize, "relay-input-size", 0, "relay: the games' command size in `bytes` (1..341); 0: each game's first command fixes it")
	fs.IntVar(&o.relayMaxState, "relay-max-state", commits.DefaultMaxState, "relay: the largest committed state, in `bytes` (1024..16777216), a client may upload for a joining or\n"+
		"resynchronised client; a game whose state is larger refuses them")
	fs.DurationVar(&o.relayStateTimeout, "relay-state-timeout", commits.DefaultStateTimeout, "relay: how long a client may take to answer a request for its committed state, and to move its\n"+
		"upload on, before another client is asked (100ms..1m)")
	fs.StringVar(&o.natRelay, "relay", "", "UDP `address` of a relay for the players of peer-hosted games whom no direct path joins (docs/NAT.md);\n"+
		"the lobby (-http) mints its grants. Not the commits relay of -game relay (empty: none)")
	fs.StringVar(&o.natRelayKeyFile, "relay-key-file", "relay.key", "the -relay's key `file`, which its lobbies share; generated (mode 0600) when absent, refused when group or\nother users may read it")
	fs.StringVar(&o.natRelayPublic, "relay-public-addr", "", "`host:port` the lobby hands players for the relay: -relay's (default: its address, with 127.0.0.1 for an\n"+
		"empty host), or, without -relay, a relay another process runs with the same -relay-key-file")
	natRelayPorts := fs.String("relay-ports", "", "`range` of UDP ports the -relay relays on, two per pair of players, like 40000-40999 (default: any)")
	fs.StringVar(&o.natsURL, "nats", "", "join the fleet on this external NATS `URL` (nats://host:4222; comma-separated for a cluster);\n"+
		"default: a lobby (-http) embeds a NATS server, and a server without -http runs alone")
	fs.StringVar(&o.natsListen, "nats-listen", "", "TCP `address` on which the embedded NATS accepts other processes of the fleet (needs -nats-server-token-file;\n"+
		"default: none, this process only)")
	natsTokenFile := fs.String("nats-token-file", "", "`file` holding this process's role token for -nats (16+ characters, mode 0600): a game server's\n"+
		"-nats-server-token-file or a lobby's -nats-lobby-token-file of the NATS it joins (an external NATS that names nkeys needs none)")
	natsServerTokenFile := fs.String("nats-server-token-file", "", "`file` holding the token game servers present to the embedded NATS on -nats-listen (16+ characters,\n"+
		"mode 0600); they may announce themselves and answer reservations, nothing else")
	natsLobbyTokenFile := fs.String("nats-lobby-token-file", "", "`file` holding the token other lobbies present to the embedded NATS on -nats-listen (16+ characters,\n"+
		"mode 0600); default: no other lobby may join")
	fs.StringVar(&o.natsNKey, "nats-nkey-file", "", "`file` holding this process's NATS nkey seed (SU..., mode 0600; nk -gen user) for -nats: its public key\n"+
		"is its fleet id, which an external NATS's permissions name (docs/FLEET.md); default: a fresh nkey per run")
	fs.StringVar(&o.publicURL, "public-url", "", "the `URL` players reach this lobby at, announced to the fleet so that other lobbies send\n"+
		"players of this lobby's rooms here (default: http://<-http address>, 127.0.0.1 for every interface)")
	fs.StringVar(&o.rendezvous, "rendezvous", "", "UDP `address` of the rendezvous reflector, which learns the NAT mappings of peer-hosted games' players\n"+
		"for the lobby, so that they connect through their NATs (docs/NAT.md; needs -http; empty: off)")
	fs.BoolVar(&o.web, "web", true, "serve the browser client on -http: the page /play, the client built to WebAssembly, the WebSocket\nfallback /play/ws and WebTransport on -webtransport (needs -listen and -http)")
	fs.StringVar(&o.webTransport, "webtransport", ":0", "UDP `address` of the WebTransport (QUIC) server of -web; port 0 picks one, which the page learns\n(empty: WebSocket only)")
	fs.StringVar(&o.webTransportAddr, "webtransport-addr", "", "`host:port` the page opens WebTransport sessions at, when not -webtransport's port on the page's\nhost (a proxy or tickwire-netem in front)")
	fs.StringVar(&o.webClient, "web-client", "", "`directory` holding a browser client built beforehand (client.wasm, wasm_exec.js; see docs/BROWSER.md);\nempty: the server builds it with the go command the first time /play asks for it")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", tickwire.DefaultTimeout, "drop a client silent for this long (more than the heartbeat, at most 1m): long enough for a\nWi-Fi roam, a closed lid or a stalled process; the players see it interrupted long before (-interrupt)")
	fs.DurationVar(&o.interrupt, "interrupt", 0, "show a client silent for this long as interrupted to the other players (less than -session-timeout;\ndefault 1s, or halfway to a shorter -session-timeout)")
	fs.DurationVar(&o.rejoinGrace, "rejoin-grace", tickwire.DefaultRejoinGrace, "keep a dropped client's player slots this long for it to rejoin with its credential (0: no rejoin; at most 1h)")
	fs.IntVar(&o.demo, "demo", 0, "run `bots` (0..64) in a demo arena game that /play shows visitors as spectators, without joining\n(needs -web and -game arena)")
	fs.StringVar(&o.name, "name", "", "the server's `name` in the fleet and on the dashboard (default: -public-addr)")
	fs.StringVar(&o.record, "record", "", "record every game to a file of its own in `directory` (created if needed), for tickwire-replay:\n"+
		"the arena's every step, the swarm's committed commands, checksums and full states (docs/DEBUGGING.md); not -game relay")
	// A mistake gets one line and a pointer to -h, not every flag.
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			usage()
			return nil, err
		}
		return nil, fmt.Errorf("%w (tickwire-server -h lists every flag)", err)
	}
	fs.SetOutput(stderr)
	if !isSet(fs, "all-avatars") {
		o.allAvatars = o.maxPlayers <= 256
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	if o.listen == "" && o.http == "" && o.natRelay == "" {
		return nil, errors.New("-listen and -http are both empty, and no -relay: nothing to serve")
	}
	if o.listen != "" {
		if err := validAddr("-listen", o.listen); err != nil {
			return nil, err
		}
	}
	for _, a := range []struct{ flag, addr string }{{"-http", o.http}, {"-admin", o.admin}} {
		if a.addr == "" {
			continue
		}
		if err := validAddr(a.flag, a.addr); err != nil {
			return nil, err
		}
	}
	if _, port, _ := net.SplitHostPort(o.http); o.http != "" && o.http == o.admin && port != "0" {
		return nil, fmt.Errorf("-http and -admin are both %q: the operator pages need their own address", o.http)
	}
	if o.maxConns < 1 || o.maxConns > 1_000_000 {
		return nil, fmt.Errorf("-max-http-conns %d out of range 1..1000000", o.maxConns)
	}
	if o.maxConnsPerAddr < 1 || o.maxConnsPerAddr > o.maxConns {
		return nil, fmt.Errorf("-max-http-conns-per-addr %d out of range 1..%d (-max-http-conns)", o.maxConnsPerAddr, o.maxConns)
	}
	for _, s := range strings.Split(*proxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			p, err = a.Prefix(a.BitLen())
		}
		if err != nil {
			return nil, fmt.Errorf("-trusted-proxies: %q is not an IP address or CIDR like 10.0.0.0/8", s)
		}
		o.trustedProxies = append(o.trustedProxies, p.Masked())
	}
	if (*certFile == "") != (*keyFile == "") {
		return nil, errors.New("-tls-cert and -tls-key go together: give both files, or neither for plain HTTP")
	}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return nil, fmt.Errorf("-tls-cert %s and -tls-key %s: %v", *certFile, *keyFile, err)
		}
		o.tls = &cert
	}
	if err := o.validJoin(fs, *secretFile); err != nil {
		return nil, err
	}
	if o.rendezvous != "" && o.http == "" {
		return nil, errors.New("-rendezvous learns mappings for the lobby: it needs -http")
	}
	if o.pprof && o.admin == "" {
		return nil, errors.New("-pprof serves on the -admin address, which is off: give -admin too")
	}
	if !contains(knownGames, o.game) {
		return nil, fmt.Errorf("-game %q is not embedded in this binary (have: %s)", o.game, strings.Join(knownGames, ", "))
	}
	if o.tick < 1 || o.tick > 240 {
		return nil, fmt.Errorf("-tick %d out of range 1..240", o.tick)
	}
	if o.maxRewind < 0 || o.maxRewind > time.Second {
		return nil, fmt.Errorf("-max-rewind %v out of range 0..1s", o.maxRewind)
	}
	if o.snapshotInterval < 1 || o.snapshotInterval > game.MaxSnapshotInterval {
		return nil, fmt.Errorf("-snapshot-interval %d out of range 1..%d", o.snapshotInterval, game.MaxSnapshotInterval)
	}
	if o.snapshotInterval != 1 && o.game != "arena" {
		return nil, fmt.Errorf("-snapshot-interval applies to -game arena only (-game %s sends commits every tick)", o.game)
	}
	if o.maxPlayers < 1 || o.maxPlayers > 4096 {
		return nil, fmt.Errorf("-max-players %d out of range 1..4096", o.maxPlayers)
	}
	if o.keyFile == "" {
		return nil, errors.New("-key-file must name a file")
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", *level)
	}
	if o.units < 1 || o.units > 100000 {
		return nil, fmt.Errorf("-units %d out of range 1..100000", o.units)
	}
	if err := o.validRelay(fs); err != nil {
		return nil, err
	}
	if err := o.validNATRelay(*natRelayPorts); err != nil {
		return nil, err
	}
	if o.record != "" && o.game == "relay" {
		return nil, errors.New("-record records the game the server runs: -game relay runs none (record the clients: tickwire-bot -record-replay)")
	}
	if o.npcs < 0 || o.npcs > 4000 {
		return nil, fmt.Errorf("-npcs %d out of range 0..4000", o.npcs)
	}
	if o.gameID == 0 {
		return nil, errors.New("-game-id must be positive")
	}
	if o.tokenTTL < time.Second || o.tokenTTL > 24*time.Hour {
		return nil, fmt.Errorf("-token-ttl %v out of range 1s..24h", o.tokenTTL)
	}
	if err := o.validFleet(*natsTokenFile, *natsServerTokenFile, *natsLobbyTokenFile); err != nil {
		return nil, err
	}
	if o.listen == "" {
		return o, nil
	}
	if o.publicAddr == "" {
		o.publicAddr = publicAddr(o.listen, 0)
	} else if err := validAddr("-public-addr", o.publicAddr); err != nil {
		return nil, err
	}
	return o, nil
}

// validFleet checks the fleet flags and reads the token files.
func (o *options) validFleet(tokenFile, serverTokenFile, lobbyTokenFile string) error {
	if o.natsURL != "" {
		if o.natsListen != "" {
			return errors.New("-nats joins an external NATS and -nats-listen serves an embedded one: give one of them")
		}
		for _, u := range strings.Split(o.natsURL, ",") {
			pu, err := url.Parse(strings.TrimSpace(u))
			if err != nil || (pu.Scheme != "nats" && pu.Scheme != "tls") || pu.Host == "" {
				return fmt.Errorf("-nats %q: want nats://host:port or tls://host:port (comma-separated for a cluster)", u)
			}
		}
		if o.listen != "" && o.http != "" {
			return errors.New("-nats: a process joins the fleet as a game server (-http '') or as a lobby (-listen ''), " +
				"each with its own role's credentials: run the two as separate processes")
		}
	}
	if o.natsListen != "" {
		if o.http == "" {
			return errors.New("-nats-listen serves the NATS a lobby embeds, but -http (the lobby) is off: give -http, or join a NATS with -nats")
		}
		if err := validAddr("-nats-listen", o.natsListen); err != nil {
			return err
		}
		if serverTokenFile == "" {
			return errors.New("-nats-listen needs -nats-server-token-file: the token game servers join the embedded NATS with")
		}
		if tokenFile != "" {
			return errors.New("-nats-token-file is what this process presents to -nats; the embedded NATS of -nats-listen takes " +
				"-nats-server-token-file (game servers) and -nats-lobby-token-file (other lobbies)")
		}
	} else if serverTokenFile != "" || lobbyTokenFile != "" {
		return errors.New("-nats-server-token-file and -nats-lobby-token-file are the embedded NATS's (-nats-listen): give -nats-listen")
	}
	if tokenFile != "" && o.natsURL == "" {
		return errors.New("-nats-token-file is presented to -nats: give -nats")
	}
	if o.natsNKey != "" && o.natsURL == "" {
		return errors.New("-nats-nkey-file identifies this process to -nats: give -nats")
	}
	var err error
	if o.natsToken, err = readToken("-nats-token-file", tokenFile); err != nil {
		return err
	}
	if o.natsServerToken, err = readToken("-nats-server-token-file", serverTokenFile); err != nil {
		return err
	}
	if o.natsLobbyToken, err = readToken("-nats-lobby-token-file", lobbyTokenFile); err != nil {
		return err
	}
	if o.natsServerToken != "" && o.natsServerToken == o.natsLobbyToken {
		return errors.New("-nats-server-token-file and -nats-lobby-token-file hold the same token: the roles must differ")
	}
	if o.publicURL != "" {
		u, err := url.Parse(o.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" {
			return fmt.Errorf("-public-url %q: want http(s)://host[:port]", o.publicURL)
		}
		if o.http == "" {
			return errors.New("-public-url names the lobby, which is off (-http)")
		}
	}
	if o.web && (o.listen == "" || o.http == "") {
		o.web = false // the browser client needs the game server and the lobby's address
	}
	if o.sessionTimeout <= tickwire.DefaultHeartbeat || o.sessionTimeout > time.Minute {
		return fmt.Errorf("-session-timeout %v out of range: more than the heartbeat (%v), at most 1m", o.sessionTimeout, tickwire.DefaultHeartbeat)
	}
	if o.interrupt < 0 || (o.interrupt > 0 && o.interrupt >= o.sessionTimeout) {
		return fmt.Errorf("-interrupt %v out of range: more than 0 and less than -session-timeout (%v)", o.interrupt, o.sessionTimeout)
	}
	if o.rejoinGrace < 0 || o.rejoinGrace > time.Hour {
		return fmt.Errorf("-rejoin-grace %v out of range: 0 (no rejoin) to 1h", o.rejoinGrace)
	}
	if o.demo < 0 || o.demo > 64 {
		return fmt.Errorf("-demo %d out of range 0..64", o.demo)
	}
	if o.demo > 0 && (!o.web || o.game != "arena") {
		return errors.New("-demo shows the arena in the browser: it needs -web, -listen, -http and -game arena")
	}
	if o.web && o.webTransport != "" {
		if err := validAddr("-webtransport", o.webTransport); err != nil {
			return err
		}
	}
	if o.webTransportAddr != "" {
		if err := validAddr("-webtransport-addr", o.webTransportAddr); err != nil {
			return err
		}
	}
	if o.devJoin && o.listen == "" {
		return errors.New("-dev-join mints tokens for this process's game server, but -listen is empty (lobby only)")
	}
	if len(o.name) > 200 {
		return errors.New("-name is longer than 200 characters")
	}
	return nil
}

func validAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q is not host:port: %v", flagName, addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%s %q: port must be a number 0..65535", flagName, addr)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isSet reports whether flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// validJoin checks the -dev-join flags and reads -join-secret-file.
func (o *options) validJoin(fs *flag.FlagSet, secretFile string) error {
	if !o.devJoin {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "join-") {
				set = append(set, "-"+f.Name)
			}
		})
		if len(set) > 0 {
			return fmt.Errorf("%s only apply to POST /api/join, which is off: give -dev-join too", strings.Join(set, ", "))
		}
		return nil
	}
	if o.http == "" {
		return errors.New("-dev-join serves POST /api/join on -http, which is off")
	}
	if secretFile != "" {
		if o.joinSecret != "" {
			return errors.New("give -join-secret or -join-secret-file, not both")
		}
		b, err := tickwire.ReadSecretFile(secretFile)
		if err != nil {
			return fmt.Errorf("-join-secret-file: %w", err)
		}
		o.joinSecret = strings.TrimSpace(string(b))
	}
	if o.joinSecret == "" {
		if host, _, _ := net.SplitHostPort(o.http); !isLoopback(host) {
			return fmt.Errorf("-dev-join would mint tokens for anyone who reaches -http %q: give -join-secret or -join-secret-file, "+
				"or serve -http on loopback (e.g. -http 127.0.0.1:8080)", o.http)
		}
	} else if len(o.joinSecret) < 16 {
		return fmt.Errorf("the -join-secret has %d characters: want at least 16 (e.g. openssl rand -hex 16)", len(o.joinSecret))
	}
	if o.joinRate <= 0 || o.joinBurst < 1 {
		return fmt.Errorf("-join-rate %v and -join-burst %d must be positive", o.joinRate, o.joinBurst)
	}
	return nil
}

// isLoopback reports whether host (of a listen address) is a loopback
// address; an empty host listens on every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// readToken reads a NATS role token from file (flag names it); "" for
// no file.
func readToken(flag, file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := tickwire.ReadSecretFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	t := strings.TrimSpace(string(b))
	if len(t) < fleet.MinToken {
		return "", fmt.Errorf("%s %s holds %d characters: want at least %d (e.g. openssl rand -hex 16)", flag, file, len(t), fleet.MinToken)
	}
	return t, nil
}
