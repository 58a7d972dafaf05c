// Command tickwire-server runs a tickwire game server with an embedded
// game; on its public HTTP address (-http) the lobby, /healthz and, with
// the development switch -dev-join, a token endpoint for tools and bots
// (POST /api/join); on its operator address (-admin, loopback by
// default) the dashboard, Prometheus /metrics, the detailed stats and,
// with -pprof, net/http/pprof; with -relay, a relay (package relay) for
// the players of peer-hosted games whom no direct path joins, whose
// grants the lobby mints. Run with -h for its flags.
//
// SIGINT or SIGTERM tells every client the server is shutting down, stops
// the tick loop and the HTTP server, and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/relay"
	"github.com/tickwire/tickwire/udp"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr, nil))
}

// run is main with its environment passed in, for tests: ready (if not
// nil) receives the bound addresses once the server serves, and the
// server stops when ctx ends or a signal arrives.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- addrs) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flagHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "tickwire-server:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	if err := serve(ctx, o, log, ready); err != nil {
		log.Error("tickwire-server stopped", "err", err)
		return 1
	}
	return 0
}

// addrs are where a running server listens.
type addrs struct {
	udp   net.Addr // nil without a game server
	http  net.Addr
	admin net.Addr
	nats  string   // the embedded NATS's URL with -nats-listen
	relay net.Addr // the relay's control address with -relay
}

func serve(ctx context.Context, o *options, log *slog.Logger, ready chan<- addrs) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var (
		key   tickwire.Key
		conn  *udp.Conn
		srv   *tickwire.Server
		game  *gameHost
		web   *webServer // the browser client's transports, with -web
		sites []*site
		// The relay of -relay.
		rsrv  *relay.Server
		rconn *udp.Conn
		rkey  *relay.Key
	)
	// Until they serve, the game socket and the listeners are closed on
	// the way out.
	serving := false
	defer func() {
		if serving {
			return
		}
		if conn != nil {
			conn.Close()
		}
		if rconn != nil {
			rconn.Close()
		}
		for _, s := range sites {
			if s.ln != nil {
				s.ln.Close()
			}
		}
	}()
	if o.listen != "" {
		var err error
		if key, srv, conn, game, err = startGame(o, log); err != nil {
			return err
		}
		reg.MustRegister(newServerCollector(srv, game, conn.SocketDrops))
		reg.MustRegister(game.tickHist)
		if o.web {
			if web, err = startWeb(o, log, conn); err != nil {
				return err
			}
			defer web.close()
			reg.MustRegister(newTransportCollector(srv, web.gate))
			game.describe = web.gate.Describe
			if o.demo > 0 {
				web.demo = newDemo(o, key, log)
			}
		}
	} else if o.http != "" {
		log.Info("no game server in this process (-listen is empty): the lobby only")
	}
	if o.natRelay != "" {
		k, s, c, err := startRelay(o, log)
		if err != nil {
			return err
		}
		rsrv, rconn, rkey = s, c, &k
		reg.MustRegister(newRelayCollector(rsrv))
	}
	fl, err := joinFleet(ctx, o, log, key, game)
	if err != nil {
		return err
	}
	defer fl.close()

	health := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if srv == nil {
			fmt.Fprintln(w, "ok lobby")
			return
		}
		fmt.Fprintf(w, "ok tick=%d connections=%d\n", game.ticks.Load(), srv.Stats().Connections)
	}
	var lb *lobby.Lobby
	var reflector *rendezvousServer
	if o.rendezvous != "" {
		if reflector, err = listenRendezvous(o.rendezvous, log); err != nil {
			return err
		}
		defer reflector.close()
	}
	if o.http != "" {
		cfg := lobby.Config{
			Types:          []lobby.GameType{{Name: o.game, Title: gameTitle(o.game), MinPlayers: 1, MaxPlayers: min(o.maxPlayers, 64)}},
			Fleet:          fl.dir,
			Registerer:     reg,
			Logger:         log,
			TrustedProxies: o.trustedProxies,
		}
		if web != nil {
			cfg.PlayURL = "/play"
			if web.demo != nil {
				cfg.DemoURL = "/play?demo=1"
			}
		}
		if game != nil {
			cfg.Stats = game
		}
		if reflector != nil {
			cfg.Rendezvous = reflector.addr
		}
		if cfg.Relay, err = lobbyRelay(o, rkey); err != nil {
			return err
		}
		if lb, err = lobby.New(cfg); err != nil {
			return err
		}
		if reflector != nil {
			reflector.serve(lb)
		}
		defer lb.Close() // on the error paths
		mux := http.NewServeMux()
		mux.Handle("/", lb)
		mux.HandleFunc("GET /healthz", health)
		if web != nil {
			play := web.handler(lb.ClientAddr)
			mux.Handle("/play", play)
			mux.Handle("/play/", play)
			if web.demo != nil {
				mux.Handle("POST /play/spectate", lb.ProtectCrossOrigin(web.demo.spectate(lb.ClientAddr)))
			}
		}
		if host, _, _ := net.SplitHostPort(o.http); o.tls == nil && len(o.trustedProxies) == 0 && !isLoopback(host) {
			log.Warn("serving the lobby over plain HTTP: connect tokens travel in clear; in production give -tls-cert and -tls-key, or put a TLS-terminating proxy in front (-trusted-proxies)", "addr", o.http)
		}
		if o.devJoin {
			mux.Handle("POST /api/join", lb.ProtectCrossOrigin(newJoinHandler(key, o, game, log, lb.ClientAddr)))
			log.Warn("POST /api/join mints tokens for the default game: a development switch", "addr", o.http, "secret", o.joinSecret != "")
		} else {
			mux.HandleFunc("POST /api/join", joinOff)
		}
		sites = append(sites, &site{name: "HTTP", addr: o.http, handler: mux, page: "/", limits: o.httpLimits})
	}
	if o.admin != "" {
		mux := http.NewServeMux()
		if lb != nil {
			mux.Handle("/", lb.Admin())
		}
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", health)
		if o.record != "" {
			mux.HandleFunc("GET "+timelinePath, timelineHandler(o.record, o.game))
		}
		if o.pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		limits := o.httpLimits
		limits.write = max(limits.write, adminWriteTimeout)
		sites = append(sites, &site{name: "admin", addr: o.admin, handler: mux, page: "/dashboard", limits: limits})
	}
	for _, s := range sites {
		if err := s.listen(o, log); err != nil {
			return err
		}
	}
	if fl.dir != nil && lb != nil {
		// Other lobbies of the fleet send players of this lobby's rooms here.
		u := o.publicURL
		if u == "" {
			u = localURL(o, sites[0].ln.Addr())
		}
		tag, err := fl.dir.Announce(u)
		if err != nil {
			return err
		}
		log.Info("fleet: lobby announced", "url", u, "tag", tag)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	served := make(chan error, 2+len(sites))
	serving = true
	if srv != nil {
		var bc udp.BatchConn = conn
		if web != nil {
			bc = web.gate // the socket, and the browsers' packets
			go func() {
				if err := web.serveWebTransport(); err != nil {
					served <- fmt.Errorf("webtransport: %w", err)
				}
			}()
		}
		go func() { served <- srv.Serve(bc) }()
		if web != nil && web.demo != nil {
			dctx, stop := context.WithCancel(ctx)
			defer stop()
			web.demo.run(dctx)
		}
	}
	if rsrv != nil {
		go func() {
			if err := rsrv.Serve(rconn); !errors.Is(err, relay.ErrClosed) {
				served <- fmt.Errorf("relay: %w", err)
			}
		}()
	}
	for _, s := range sites {
		go func() {
			if err := s.serve(); err != nil {
				served <- err
			}
		}()
	}
	if ready != nil {
		var a addrs
		if conn != nil {
			a.udp = net.UDPAddrFromAddrPort(conn.LocalAddr())
		}
		if fl.embedded != nil {
			a.nats = fl.embedded.URL()
		}
		if rconn != nil {
			a.relay = net.UDPAddrFromAddrPort(rconn.LocalAddr())
		}
		for _, s := range sites {
			if s.name == "admin" {
				a.admin = s.ln.Addr()
			} else {
				a.http = s.ln.Addr()
			}
		}
		ready <- a
	}

	var runErr error
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case <-ctx.Done():
		log.Info("shutting down", "why", context.Cause(ctx))
	case <-fl.ended():
		log.Info("shutting down", "why", "Agones was told the last game ended")
	case runErr = <-served:
	}
	fl.drain()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if lb != nil {
		lb.Close() // answers long-polls and closes sockets, which Shutdown does not wait for
	}
	for _, s := range sites {
		s.srv.Shutdown(ctx)
	}
	if rsrv != nil {
		rsrv.Close()
		st := rsrv.Stats()
		log.Info("relay stopped", "allocations", st.AllocationsCreated, "forwarded", st.Forwarded, "forwarded_bytes", st.ForwardedBytes)
	}
	if srv == nil {
		log.Info("stopped")
		return runErr
	}
	if err := srv.Shutdown(ctx); err != nil && runErr == nil {
		runErr = err
	}
	st := srv.Stats()
	log.Info("stopped", "ticks", st.Ticks, "accepted", st.Accepted, "packets_in", st.PacketsIn, "packets_out", st.PacketsOut)
	return runErr
}

// startGame loads the token key, binds the UDP socket and builds the
// game server with its embedded game.
func startGame(o *options, log *slog.Logger) (tickwire.Key, *tickwire.Server, *udp.Conn, *gameHost, error) {
	// LoadOrCreateKey refuses a key file others can read.
	key, created, err := tickwire.LoadOrCreateKey(o.keyFile)
	if err != nil {
		return key, nil, nil, nil, err
	}
	if created {
		log.Info("generated a new connect-token key", "file", o.keyFile)
	}
	var previous []tickwire.Key
	if o.previousKeyFile != "" {
		b, err := tickwire.ReadSecretFile(o.previousKeyFile)
		if err != nil {
			return key, nil, nil, nil, fmt.Errorf("-previous-key-file: %w", err)
		}
		k, err := tickwire.ParseKey(string(b))
		if err != nil {
			return key, nil, nil, nil, fmt.Errorf("-previous-key-file %s: %w", o.previousKeyFile, err)
		}
		previous = append(previous, k)
	}

	conn, err := udp.Listen("udp", o.listen, udp.Config{})
	if err != nil {
		return key, nil, nil, nil, fmt.Errorf("listen %s: %w", o.listen, err)
	}
	if host, port, _ := net.SplitHostPort(o.publicAddr); port == "0" {
		// -listen asked for any port: tokens name the one we got.
		o.publicAddr = net.JoinHostPort(host, fmt.Sprint(conn.LocalAddr().Port()))
	}
	var game *gameHost
	srv, err := tickwire.NewServer(key, tickwire.Config{
		TickRate:       o.tick,
		Timeout:        o.sessionTimeout,
		Interrupt:      o.interrupt,
		RejoinGrace:    rejoinGrace(o.rejoinGrace),
		MaxConnections: o.maxPlayers,
		Logger:         log,
		ObserveTick:    func(tick uint32, took time.Duration) { game.observeTick(tick, took) },
		PreviousKeys:   previous,
		// Tokens minted for another server that shares this key are
		// refused: ours name the public address.
		ServerAddrs: []string{o.publicAddr},
	})
	if err != nil {
		conn.Close()
		return key, nil, nil, nil, err
	}
	if game, err = newGame(o, log, srv); err != nil {
		conn.Close()
		return key, nil, nil, nil, err
	}
	srv.Handle(game)
	game.srv = srv
	game.recorded, game.admin = o.record != "", o.admin != ""
	info := conn.Info()
	log.Info("serving game traffic", "udp", conn.LocalAddr(), "public", o.publicAddr, "game", o.game, "tick", o.tick,
		"traffic_class", info.TrafficClass, "marked_v4", info.MarkedIPv4, "marked_v6", info.MarkedIPv6,
		"rcvbuf", info.ReadBuffer, "sndbuf", info.WriteBuffer, "batch", info.BatchSize)
	return key, srv, conn, game, nil
}

// localURL is the lobby's URL on this machine: the -http address, with
// 127.0.0.1 for a listener on every interface.
func localURL(o *options, a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if o.tls != nil {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func gameTitle(name string) string {
	switch name {
	case "arena":
		return "Arena"
	case "swarm":
		return "Swarm"
	case "relay":
		return "Commits relay"
	}
	return name
}

// rejoinGrace is -rejoin-grace as tickwire.Config.RejoinGrace (whose zero
// is the default, and negative none).
func rejoinGrace(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
