package fleet

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedConfig configures a NATS server run inside this process.
type EmbeddedConfig struct {
	// Listen is the TCP address other processes reach it on, host:port
	// (port 0: any free port). Empty means none: only this process's
	// connections (Embedded.Connect), which need no network at all.
	Listen string
	// Token is the secret clients present. Required with Listen.
	Token string
}

// Embedded is a NATS server running inside this process.
type Embedded struct {
	ns    *natsserver.Server
	token string
}

// minToken is the shortest Token an Embedded server accepts.
const minToken = 16

// StartEmbedded starts a NATS server in this process and waits until it
// accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	opts := &natsserver.Options{
		ServerName: "tickwire-embedded",
		NoSigs:     true,
		NoLog:      true,
		DontListen: cfg.Listen == "",
		// Fleet messages are small (maxMessage); refuse big ones early.
		MaxPayload: maxMessage,
	}
	if cfg.Listen != "" {
		if len(cfg.Token) < minToken {
			return nil, fmt.Errorf("fleet: an embedded NATS server on %s needs a token of %d+ characters: "+
				"whoever connects may reserve seats and read the servers' token keys", cfg.Listen, minToken)
		}
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("fleet: NATS address %q: %v", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("fleet: NATS address %q: port must be 0..65535", cfg.Listen)
		}
		if p == 0 {
			p = natsserver.RANDOM_PORT
		}
		opts.Host, opts.Port = host, p
		opts.Authorization = cfg.Token
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("fleet: embedded NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("fleet: embedded NATS did not start within 10 s (is its address in use?)")
	}
	return &Embedded{ns: ns, token: cfg.Token}, nil
}

// URL is where other processes reach the server; empty without Listen.
func (e *Embedded) URL() string {
	if e.ns.Addr() == nil {
		return ""
	}
	return e.ns.ClientURL()
}

// Connect opens a connection from this process, over no network.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.InProcessServer(e.ns)}
	if e.token != "" {
		opts = append(opts, nats.Token(e.token))
	}
	return nats.Connect("", opts...)
}

// Close stops the server and waits until it stopped.
func (e *Embedded) Close() {
	e.ns.Shutdown()
	e.ns.WaitForShutdown()
}

// Dial connects to the fleet's NATS at url (nats://host:port; several
// comma-separated for a cluster) with token (empty: none, or the user
// and password in url). It keeps trying in the background when NATS is
// not up yet, and reconnects for ever.
func Dial(url, token, name string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
	}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: NATS %s: %w", url, err)
	}
	return nc, nil
}
