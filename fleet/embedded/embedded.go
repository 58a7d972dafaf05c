// Package embedded runs a NATS server inside the process: the fleet's
// directory on one machine (with no listener: in-process connections
// only), or for a few machines (on a TCP address, with a token).
//
// It is its own package so that what only talks to a fleet (package
// fleet, the lobby) does not link a NATS server.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config configures a NATS server run inside this process.
type Config struct {
	// Listen is the TCP address other processes reach it on, host:port
	// (port 0: any free port). Empty means none: only this process's
	// connections (Server.Connect), which need no network at all.
	Listen string
	// Token is the secret clients present. Required with Listen.
	Token string
	// MaxPayload bounds one message (fleet.MaxMessage for a fleet's).
	// Zero means NATS's default, 1 MiB.
	MaxPayload int32
}

// Server is a NATS server running inside this process.
type Server struct {
	ns    *natsserver.Server
	token string
}

// minToken is the shortest Token a Server accepts.
const minToken = 16

// Start starts a NATS server in this process and waits until it accepts
// connections.
func Start(cfg Config) (*Server, error) {
	opts := &natsserver.Options{
		ServerName: "tickwire-embedded",
		NoSigs:     true,
		NoLog:      true,
		DontListen: cfg.Listen == "",
		MaxPayload: cfg.MaxPayload,
	}
	if cfg.Listen != "" {
		if len(cfg.Token) < minToken {
			return nil, fmt.Errorf("embedded: an embedded NATS server on %s needs a token of %d+ characters: "+
				"whoever connects may reserve seats and read the servers' token keys", cfg.Listen, minToken)
		}
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded: NATS address %q: %v", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("embedded: NATS address %q: port must be 0..65535", cfg.Listen)
		}
		if p == 0 {
			p = natsserver.RANDOM_PORT
		}
		opts.Host, opts.Port = host, p
		opts.Authorization = cfg.Token
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("embedded: the NATS server did not start within 10 s (is its address in use?)")
	}
	return &Server{ns: ns, token: cfg.Token}, nil
}

// URL is where other processes reach the server; empty without Listen.
func (e *Server) URL() string {
	if e.ns.Addr() == nil {
		return ""
	}
	return e.ns.ClientURL()
}

// Connect opens a connection from this process, over no network.
func (e *Server) Connect(name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.InProcessServer(e.ns)}
	if e.token != "" {
		opts = append(opts, nats.Token(e.token))
	}
	return nats.Connect("", opts...)
}

// Clients is how many connections the server holds.
func (e *Server) Clients() int { return e.ns.NumClients() }

// Close stops the server and waits until it stopped.
func (e *Server) Close() {
	e.ns.Shutdown()
	e.ns.WaitForShutdown()
}
