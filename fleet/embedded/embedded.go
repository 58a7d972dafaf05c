// Package embedded runs a NATS server inside the process: the fleet's
// directory on one machine (with no listener: in-process connections
// only), or for a few machines (on a TCP address). Every client proves
// it holds an nkey (it signs the server's nonce) and presents a token;
// Config.Authorize maps the two to the client's permissions
// (fleet.Authorizer gives each role its own).
//
// It is its own package so that what only talks to a fleet (package
// fleet, the lobby) does not link a NATS server.
package embedded

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nkeys"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config configures a NATS server run inside this process.
type Config struct {
	// Listen is the TCP address other processes reach it on, host:port
	// (port 0: any free port). Empty means none: only this process's
	// connections (Server.Connect), which need no network at all.
	Listen string
	// Authorize decides what a client that proved it holds the nkey id
	// (a public user key) and presented token may do: ok false refuses
	// it. Required with Listen; nil without means every in-process
	// connection may do anything (tests).
	Authorize func(token, id string) (p Permissions, ok bool)
	// MaxPayload bounds one message (fleet.MaxMessage for a fleet's).
	// Zero means NATS's default, 1 MiB.
	MaxPayload int32
}

// Permissions are the subjects a client may publish and subscribe to;
// Responses lets it answer, once each within a minute, the requests it
// received. The same fields as fleet.Permissions, which converts.
type Permissions struct {
	Publish   []string
	Subscribe []string
	Responses bool
}

// Server is a NATS server running inside this process.
type Server struct {
	ns *natsserver.Server
}

// authorizer is the natsserver.Authentication of Config.Authorize.
type authorizer func(token, id string) (Permissions, bool)

// Check admits a client whose signature of the nonce verifies with the
// nkey it names, and whose token and nkey Authorize accepts.
func (a authorizer) Check(c natsserver.ClientAuthentication) bool {
	o := c.GetOpts()
	if o == nil || o.Nkey == "" || !nkeys.IsValidPublicUserKey(o.Nkey) {
		return false
	}
	pub, err := nkeys.FromPublicKey(o.Nkey)
	if err != nil {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(o.Sig)
	if err != nil {
		if sig, err = base64.StdEncoding.DecodeString(o.Sig); err != nil {
			return false
		}
	}
	if len(c.GetNonce()) == 0 || pub.Verify(c.GetNonce(), sig) != nil {
		return false
	}
	p, ok := a(o.Token, o.Nkey)
	if !ok {
		return false
	}
	perms := &natsserver.Permissions{
		Publish:   &natsserver.SubjectPermission{Allow: nonNil(p.Publish)},
		Subscribe: &natsserver.SubjectPermission{Allow: nonNil(p.Subscribe)},
	}
	if p.Responses {
		perms.Response = &natsserver.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	c.RegisterUser(&natsserver.User{Username: o.Nkey, Permissions: perms})
	return true
}

// nonNil keeps an empty allow list from meaning "everything": NATS
// reads a nil list as no restriction.
func nonNil(s []string) []string {
	if len(s) == 0 {
		return []string{"_tickwire.nothing"}
	}
	return s
}

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
	if cfg.Authorize != nil {
		opts.AlwaysEnableNonce = true
		opts.CustomClientAuthentication = authorizer(cfg.Authorize)
	}
	if cfg.Listen != "" {
		if cfg.Authorize == nil {
			return nil, fmt.Errorf("embedded: an embedded NATS server on %s needs Authorize: "+
				"whoever connects could reserve seats and announce servers", cfg.Listen)
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
	return &Server{ns: ns}, nil
}

// URL is where other processes reach the server; empty without Listen.
func (e *Server) URL() string {
	if e.ns.Addr() == nil {
		return ""
	}
	return e.ns.ClientURL()
}

// Connect opens a connection from this process, over no network, with
// opts (fleet.Credentials.Options) added.
func (e *Server) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.Name(name), nats.InProcessServer(e.ns)}, opts...)...)
}

// Clients is how many connections the server holds.
func (e *Server) Clients() int { return e.ns.NumClients() }

// Close stops the server and waits until it stopped.
func (e *Server) Close() {
	e.ns.Shutdown()
	e.ns.WaitForShutdown()
}
