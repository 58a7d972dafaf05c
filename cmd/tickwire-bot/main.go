// Command tickwire-bot fills a tickwire server with headless players: N
// clients in one process that get tokens from the server's POST /api/join
// (a development switch: run tickwire-server with -dev-join), connect
// over UDP, play the game with scripted random inputs and send a
// numbered reliable message every 100 ms that the server echoes back. It
// prints a progress line every few seconds and a summary at the end (one
// JSON object on stdout with -json), and exits non-zero when any client
// desynced or lost, duplicated or reordered a reliable message.
//
//	tickwire-server -dev-join -http 127.0.0.1:8080 &
//	tickwire-bot -server http://127.0.0.1:8080 -n 50 -duration 30s
//	tickwire-bot -n 50 -via 127.0.0.1:7000     # through tickwire-netem
//	tickwire-bot -n 500 -headless -verify 10   # cheap load (client groups)
//
// With -headless the clients run on tickwire.ClientGroups (-groups, one
// per core by default): a goroutine, a timer and 16 sockets for many
// clients, packets sent and read in batches; -verify of them rebuild the
// state and check the server's checksums, the others only ack it. The
// summary reports the bot's own CPU per client and tick.
//
// With -peer it is instead ONE player of a peer-hosted game (host
// migration, docs/MIGRATION.md): it takes a seat in the lobby's room of
// that name (creating it), offers its own UDP port to host, readies when
// the room holds -room-size players, and plays through a peerhost.Player —
// hosting the game when the lobby picks it, taking it over when the host
// is lost. A host that stops (SIGTERM, SIGINT, the end of -duration)
// hands the game over to its successor first. Run one process per
// player, one after the other (the first creates the room), and kill or
// stop the host to watch the game move (each prints a line per
// migration event):
//
//	tickwire-server -http 127.0.0.1:8080 &
//	for p in a b c d; do tickwire-bot -peer room1 -room-size 4 -name $p -duration 60s & sleep 0.5; done
//	pkill -TERM -f 'tickwire-bot.*-name a'    # the host (the first to sit down) quits: it hands the game over
//	pkill -KILL -f 'tickwire-bot.*-name a'    # or it crashes: the others find it silent
//
// With -game swarm as well, the room plays swarm in commits mode: the
// host runs a relay (no game code: hosting is relaying), every player
// holds the worlds, and a relay lost or quitting is taken over the same
// way (docs/MIGRATION.md, "Commits games"); -record writes the player's
// record of what its committed world ran:
//
//	tickwire-server -game swarm -tick 30 -http 127.0.0.1:8080 &
//	for p in a b c d; do tickwire-bot -peer room2 -game swarm -room-size 4 -name $p -duration 60s & sleep 0.5; done
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/udp/netem"
)

type options struct {
	rejoin    bool // -rejoin
	server    string
	secret    string // POST /api/join's bearer secret
	n         int
	duration  time.Duration
	via       string
	json      bool
	players   int
	echoEvery time.Duration
	seed      uint64
	headless  bool
	groups    int // ClientGroups the clients run on (0: a loop each)
	verify    int // -headless: clients that rebuild the state and check checksums
	// interpLag bounds the bots' interpolation delay
	// (sim.ClientConfig.MaxInterpLag; 0: the engine's default).
	interpLag time.Duration
	// inputInterval is the game clients' SetInputInterval.
	inputInterval int
	rampUp        time.Duration
	logLevel      slog.Level
	progress      time.Duration
	cpuProf       string
	game          string // arena (state sync) or swarm (commits mode)
	units         int
	record        string
	recordReplay  string // -record-replay: the directory of each client's replay
	mesh          bool
	meshNetem     string

	// -lobby: tokens from the lobby's rooms instead of POST /api/join.
	lobby     bool
	sourceIPs int

	// -peer mode: one player of a peer-hosted game.
	peer       string // the room's name
	roomSize   int
	hostPort   int
	hostOffer  int
	peerBind   string
	gameType   string
	playerName string
	npcs       int
}

var errHelp = flag.ErrHelp

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("tickwire-bot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tickwire-bot [flags]\n\n"+
			"Runs N headless tickwire clients against a server and reports what they saw.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8080", "server's HTTP `URL`: tokens come from its POST /api/join (tickwire-server -dev-join)")
	fs.StringVar(&o.secret, "join-secret", "", "the server's -join-`secret`, sent as a bearer token (in clear over http://); prefer -join-secret-file")
	secretFile := fs.String("join-secret-file", "", "`file` holding the server's -join-secret")
	fs.IntVar(&o.n, "n", 50, "number of `clients` (1..5000)")
	fs.StringVar(&o.game, "game", "arena", "the server's `game`: arena (state sync) or swarm (commits mode: group orders, every client simulates every unit)")
	fs.IntVar(&o.units, "units", 5000, "-game swarm: the server's -units")
	fs.BoolVar(&o.mesh, "mesh", true, "-game swarm: take part in the peer mesh (send commands straight to the other clients too, DSCP EF)")
	fs.StringVar(&o.meshNetem, "mesh-netem", "", "-game swarm: impair the datagrams each client sends to its peers with this netem `spec` (e.g. \"delay 10ms 2ms loss 5%\"): the peer paths, where -via impairs the server's")
	fs.StringVar(&o.record, "record", "", "-game swarm: write each client's record (commands its committed world ran, commands it issued, when each reached its screen) to `file`, one JSON object per line")
	fs.StringVar(&o.recordReplay, "record-replay", "", "record each client's game for tickwire-replay to `directory` (created if needed), a file per client\n"+
		"(bot-N.replay): arena, its inputs and predictions; swarm, its committed commands and states (docs/DEBUGGING.md)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long to play once all clients are connected")
	fs.StringVar(&o.via, "via", "", "send game traffic to UDP `host:port` instead of the assigned address (a proxy such as tickwire-netem)")
	fs.BoolVar(&o.json, "json", false, "print the summary as one JSON object on stdout")
	fs.IntVar(&o.players, "players", 1, "player slots per connection (1..4)")
	fs.DurationVar(&o.echoEvery, "echo-every", 100*time.Millisecond, "interval of each client's numbered reliable message")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the scripted inputs")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of the run to `file`")
	fs.BoolVar(&o.rejoin, "rejoin", true, "come back into the same player slots by itself after a session is lost without a leave (within the server's rejoin grace; past it, join again as a new player); false: a lost session is a disconnect")
	fs.BoolVar(&o.headless, "headless", false, "run only the clock and inputs, for cheap load generation: no state decoding, prediction or interpolation (corrections and stalls are not measured)")
	fs.IntVar(&o.verify, "verify", -1, "-headless: how many `clients` rebuild the server's state and check its checksums (desyncs); the others only ack\n"+
		"the snapshots, the cheapest load (-1: all)")
	fs.IntVar(&o.groups, "groups", -1, "run the clients on this many tickwire.ClientGroups, a load generator's mode: each one goroutine, one timer and\n"+
		"16 sockets for its share of the clients, their packets sent and received in batches; 0: each client its own socket,\n"+
		"goroutines and timer; -1: GOMAXPROCS with -headless, else 0")
	fs.DurationVar(&o.interpLag, "max-interp-lag", 0, "how far the shown moment may trail the moment an input reaches the server (0: the engine's 200 ms;\nat most 1s); match the server's -max-rewind")
	fs.IntVar(&o.inputInterval, "input-interval", 1, "arena: `ticks` between a client's packets (1..4; 2: inputs at 30 Hz at a 60 Hz tick, two per packet), as\nSource's cl_cmdrate: the server receives that many times fewer packets; the clock leads by 1.5 ticks more per step")
	fs.DurationVar(&o.rampUp, "ramp-up", 0, "spread the clients' connects over this long (default: n × 2 ms)")
	fs.DurationVar(&o.progress, "progress", 5*time.Second, "interval of progress lines on stderr (0: none)")
	fs.StringVar(&o.peer, "peer", "", "play ONE player of the peer-hosted `room` of this name through the lobby's JSON API at -server\n"+
		"(created when absent), offering this process's UDP port to host: it hosts when the lobby picks it and takes\n"+
		"the game over when the host is lost (host migration); with -game swarm the host is a commits relay, taken over\n"+
		"the same way; -n, -players, -via and -headless do not apply")
	fs.IntVar(&o.roomSize, "room-size", 2, "-peer: players the room waits for before they ready up (2..64)")
	fs.IntVar(&o.hostPort, "host-port", 0, "-peer: UDP `port` this player hosts on (0: any free port)")
	fs.IntVar(&o.hostOffer, "host-offer", 0, "-peer: UDP `port` offered to the lobby, when a proxy (tickwire-netem) fronts -host-port (default: -host-port)")
	fs.StringVar(&o.peerBind, "host-bind", "127.0.0.1", "-peer: `address` the host socket binds")
	fs.StringVar(&o.gameType, "type", "", "-peer, -lobby: the lobby's game `type` (default: -game)")
	fs.StringVar(&o.playerName, "name", "", "-peer: the player's `name` in the room (default bot-<pid>)")
	fs.IntVar(&o.npcs, "npcs", 30, "-peer: NPCs in the arena this player hosts (0..4000)")
	fs.BoolVar(&o.lobby, "lobby", false, "get tokens the way players do: every -room-size clients form a server-hosted room of -type in the lobby\n"+
		"at -server, ready up and play the game the lobby assigns (in a fleet, on the server it chose)")
	fs.IntVar(&o.sourceIPs, "source-ips", 1, "-lobby: send each room's lobby requests from one of 127.0.0.1..127.0.0.`N` in turn, so that a load test\n"+
		"from one machine stays within the lobby's per-address limits (1..254; loopback -server only)")
	level := fs.String("log-level", "warn", "log `level`: debug, info, warn or error")
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
		return nil, fmt.Errorf("%w (tickwire-bot -h lists every flag)", err)
	}
	fs.SetOutput(stderr)
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	u, err := url.Parse(o.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-server %q is not an http(s) URL", o.server)
	}
	if *secretFile != "" {
		if o.secret != "" {
			return nil, errors.New("give -join-secret or -join-secret-file, not both")
		}
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return nil, fmt.Errorf("-join-secret-file: %w", err)
		}
		o.secret = strings.TrimSpace(string(b))
	}
	if o.interpLag < 0 || o.interpLag > time.Second {
		return nil, fmt.Errorf("-max-interp-lag %v out of range 0..1s", o.interpLag)
	}
	if o.inputInterval < 1 || o.inputInterval > game.MaxInputInterval {
		return nil, fmt.Errorf("-input-interval %d out of range 1..%d", o.inputInterval, game.MaxInputInterval)
	}
	if o.n < 1 || o.n > 5000 {
		return nil, fmt.Errorf("-n %d out of range 1..5000", o.n)
	}
	if o.duration <= 0 {
		return nil, fmt.Errorf("-duration %v must be positive", o.duration)
	}
	if o.via != "" {
		_, port, err := net.SplitHostPort(o.via)
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("-via %q is not host:port", o.via)
		}
	}
	if o.game != "arena" && o.game != "swarm" {
		return nil, fmt.Errorf("-game %q: want arena or swarm", o.game)
	}
	if o.units < 1 || o.units > 100000 {
		return nil, fmt.Errorf("-units %d out of range 1..100000", o.units)
	}
	if o.meshNetem != "" {
		if _, err := netem.Parse(o.meshNetem); err != nil {
			return nil, fmt.Errorf("-mesh-netem: %w", err)
		}
		if !o.mesh || o.game != "swarm" {
			return nil, errors.New("-mesh-netem needs -game swarm and the mesh")
		}
	}
	if o.gameType == "" {
		o.gameType = o.game
	}
	if o.record != "" && o.game != "swarm" {
		return nil, errors.New("-record needs -game swarm")
	}
	if o.players < 1 || o.players > 4 {
		return nil, fmt.Errorf("-players %d out of range 1..4", o.players)
	}
	if o.echoEvery < time.Millisecond {
		return nil, fmt.Errorf("-echo-every %v too short", o.echoEvery)
	}
	if o.verify == -1 {
		o.verify = o.n
	}
	if o.verify < 0 || o.verify > o.n {
		return nil, fmt.Errorf("-verify %d out of range 0..-n (%d)", o.verify, o.n)
	}
	if o.verify < o.n && !o.headless {
		return nil, errors.New("-verify applies to -headless clients (the others need the state to show the game)")
	}
	if err := o.validGroups(); err != nil {
		return nil, err
	}
	if o.rampUp < 0 {
		return nil, fmt.Errorf("-ramp-up %v is negative", o.rampUp)
	}
	if o.rampUp == 0 {
		o.rampUp = time.Duration(o.n) * 2 * time.Millisecond
	}
	if o.peer != "" {
		if err := o.validPeer(); err != nil {
			return nil, err
		}
		if o.recordReplay != "" {
			return nil, errors.New("-record-replay records the bots of -game arena or swarm, not a -peer player")
		}
	}
	if err := o.validLobby(u); err != nil {
		return nil, err
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", *level)
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "tickwire-bot:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.cpuProf != "" {
		f, err := os.Create(o.cpuProf)
		if err != nil {
			fmt.Fprintln(stderr, "tickwire-bot:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "tickwire-bot:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	var sum *botproto.Summary
	if o.peer != "" {
		sum, err = playPeer(ctx, o, log, stderr)
	} else if o.game == "swarm" {
		sum, err = playCommits(ctx, o, log, stderr)
	} else {
		sum, err = play(ctx, o, log, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tickwire-bot:", err)
		return 1
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.Encode(sum)
	} else {
		printSummary(stderr, sum)
	}
	if sum.Failed() {
		return 1
	}
	return 0
}

// validGroups checks -groups and sets its default.
func (o *options) validGroups() error {
	if o.groups == -1 {
		o.groups = 0
		if o.headless && o.peer == "" && o.game == "arena" {
			o.groups = runtime.GOMAXPROCS(0)
		}
		return nil
	}
	switch {
	case o.groups < 0 || o.groups > 256:
		return fmt.Errorf("-groups %d out of range 0..256", o.groups)
	case o.groups > 0 && (o.peer != "" || o.game != "arena"):
		return errors.New("-groups applies to the arena's clients, not to -peer or -game swarm")
	}
	return nil
}

// validLobby checks the -lobby mode's flags.
func (o *options) validLobby(server *url.URL) error {
	if !o.lobby {
		if o.sourceIPs != 1 {
			return errors.New("-source-ips applies to -lobby")
		}
		return nil
	}
	switch {
	case o.peer != "":
		return errors.New("-lobby and -peer are two modes: give one")
	case o.players != 1:
		return errors.New("-lobby seats one player per connection: drop -players")
	case o.game != "arena":
		return errors.New("-lobby plays the arena: a swarm client kicked from the commit rejoins with a fresh token, which POST /api/join hands out and a lobby seat does not")
	case o.roomSize < 1 || o.roomSize > 64:
		return fmt.Errorf("-room-size %d out of range 1..64", o.roomSize)
	case o.sourceIPs < 1 || o.sourceIPs > 254:
		return fmt.Errorf("-source-ips %d out of range 1..254", o.sourceIPs)
	}
	if ip := net.ParseIP(server.Hostname()); o.sourceIPs > 1 && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-source-ips needs a -server on loopback (127.0.0.1), not %q", server.Host)
	}
	return nil
}

// validPeer checks the -peer mode's flags.
func (o *options) validPeer() error {
	switch {
	case len(o.peer) > 64:
		return fmt.Errorf("-peer %q: a room name is at most 64 bytes", o.peer)
	case o.roomSize < 2 || o.roomSize > 64:
		return fmt.Errorf("-room-size %d out of range 2..64", o.roomSize)
	case o.hostPort < 0 || o.hostPort > 65535:
		return fmt.Errorf("-host-port %d out of range 0..65535", o.hostPort)
	case o.hostOffer < 0 || o.hostOffer > 65535:
		return fmt.Errorf("-host-offer %d out of range 0..65535", o.hostOffer)
	case o.npcs < 0 || o.npcs > 4000:
		return fmt.Errorf("-npcs %d out of range 0..4000", o.npcs)
	case net.ParseIP(o.peerBind) == nil:
		return fmt.Errorf("-host-bind %q is not an IP address", o.peerBind)
	}
	if o.playerName == "" {
		o.playerName = fmt.Sprintf("bot-%d", os.Getpid())
	}
	return nil
}
