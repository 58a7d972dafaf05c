package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/relay"
	"github.com/tickwire/tickwire/udp"
)

// natRelayFlags are the flags of the relay for players no direct path
// joins (-relay), as opposed to the commits relay's (-game relay).
var natRelayFlags = []string{"relay", "relay-key-file", "relay-public-addr", "relay-ports"}

// validNATRelay checks -relay and its flags and parses -relay-ports.
func (o *options) validNATRelay(ports string) error {
	if o.natRelay != "" {
		if err := validAddr("-relay", o.natRelay); err != nil {
			return err
		}
		if o.natRelayKeyFile == "" {
			return errors.New("-relay-key-file must name a file: the key the relay checks grants with")
		}
		if _, port, _ := net.SplitHostPort(o.natRelay); port != "0" && o.listen != "" && sameUDPPort(o.natRelay, o.listen) {
			return fmt.Errorf("-relay %q and -listen %q are one UDP port: the relay needs its own", o.natRelay, o.listen)
		}
	}
	if o.natRelayPublic != "" {
		if o.natRelay == "" && o.http == "" {
			return errors.New("-relay-public-addr is where players reach the relay, for the lobby (-http) or this process's relay (-relay): give one of them")
		}
		if err := validAddr("-relay-public-addr", o.natRelayPublic); err != nil {
			return err
		}
		if o.natRelayKeyFile == "" {
			return errors.New("-relay-key-file must name a file: the key the lobby mints the relay's grants with")
		}
	}
	if ports != "" {
		if o.natRelay == "" {
			return errors.New("-relay-ports are the relay's ports: give -relay too")
		}
		a, b, ok := strings.Cut(ports, "-")
		lo, err1 := strconv.ParseUint(a, 10, 16)
		hi, err2 := strconv.ParseUint(b, 10, 16)
		if !ok || err1 != nil || err2 != nil || lo == 0 || lo > hi {
			return fmt.Errorf("-relay-ports %q: want a range of UDP ports like 40000-40999", ports)
		}
		o.natRelayPorts = [2]uint16{uint16(lo), uint16(hi)}
	}
	if o.natRelay != "" && o.natRelayPublic == "" {
		o.natRelayPublic = publicAddr(o.natRelay, 0) // startRelay completes port 0
	}
	return nil
}

// sameUDPPort reports whether two listen addresses name one port on one
// host (an empty host is every interface).
func sameUDPPort(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	return pa == pb && (ha == hb || ha == "" || hb == "" || ha == "0.0.0.0" || hb == "0.0.0.0" || ha == "::" || hb == "::")
}

// startRelay loads (or creates) the relay's key and opens its control
// socket; the caller serves it.
func startRelay(o *options, log *slog.Logger) (relay.Key, *relay.Server, *udp.Conn, error) {
	k, created, err := tickwire.LoadOrCreateKey(o.natRelayKeyFile)
	if err != nil {
		return relay.Key{}, nil, nil, fmt.Errorf("-relay-key-file: %w", err)
	}
	if created {
		log.Info("generated a new relay key", "file", o.natRelayKeyFile)
	}
	key := relay.Key(k)
	srv, err := relay.NewServer(key, relay.Config{PortMin: o.natRelayPorts[0], PortMax: o.natRelayPorts[1]})
	if err != nil {
		return key, nil, nil, err
	}
	conn, err := udp.Listen("udp", o.natRelay, udp.Config{})
	if err != nil {
		return key, nil, nil, fmt.Errorf("-relay %s: %w", o.natRelay, err)
	}
	o.natRelayPublic = publicAddr(o.natRelayPublic, conn.LocalAddr().Port())
	log.Info("relaying for players no direct path joins", "udp", conn.LocalAddr(), "public", o.natRelayPublic)
	return key, srv, conn, nil
}

// publicAddr completes addr, a listen address, into one players dial:
// 127.0.0.1 for an empty or unspecified host, port for port 0.
func publicAddr(addr string, port uint16) string {
	host, p, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if p == "0" {
		p = strconv.Itoa(int(port))
	}
	return net.JoinHostPort(host, p)
}

// lobbyRelay is the lobby's Config.Relay: the relay this process runs
// (key), or, in a lobby without one, the relay at -relay-public-addr
// whose key is in -relay-key-file; nil when there is none.
func lobbyRelay(o *options, key *relay.Key) (*lobby.RelayConfig, error) {
	if o.natRelayPublic == "" {
		return nil, nil
	}
	if key == nil {
		b, err := tickwire.ReadSecretFile(o.natRelayKeyFile)
		if err != nil {
			return nil, fmt.Errorf("-relay-key-file (the relay's key, for -relay-public-addr): %w", err)
		}
		k, err := tickwire.ParseKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("-relay-key-file %s: %w", o.natRelayKeyFile, err)
		}
		rk := relay.Key(k)
		key = &rk
	}
	return &lobby.RelayConfig{Addr: o.natRelayPublic, Key: *key}, nil
}

// relayCollector reads the relay's counters at scrape time.
type relayCollector struct {
	srv                                  *relay.Server
	allocations, bound, created, expired *prometheus.Desc
	binds, forwarded, forwardedBytes     *prometheus.Desc
	packets, bytes, drops                *prometheus.Desc
}

func newRelayCollector(srv *relay.Server) *relayCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tickwire_relay_"+name, help, labels, nil)
	}
	return &relayCollector{
		srv:            srv,
		allocations:    d("allocations", "Relay allocations held (-relay)."),
		bound:          d("bound_sides", "Sides of relay allocations bound to an address."),
		created:        d("allocations_created_total", "Relay allocations opened."),
		expired:        d("allocations_expired_total", "Relay allocations closed for idleness."),
		binds:          d("binds_total", "Bind requests the relay accepted."),
		forwarded:      d("forwarded_packets_total", "Datagrams the relay forwarded."),
		forwardedBytes: d("forwarded_bytes_total", "Bytes the relay forwarded."),
		packets:        d("packets_total", "Datagrams on the relay's sockets, by direction.", "direction"),
		bytes:          d("bytes_total", "UDP payload bytes on the relay's sockets, by direction.", "direction"),
		drops:          d("dropped_packets_total", "Datagrams the relay dropped, by reason.", "reason"),
	}
}

func (c *relayCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.Stats()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	gauge(c.allocations, st.Allocations)
	gauge(c.bound, st.Bound)
	counter(c.created, st.AllocationsCreated)
	counter(c.expired, st.AllocationsExpired)
	counter(c.binds, st.Binds)
	counter(c.forwarded, st.Forwarded)
	counter(c.forwardedBytes, st.ForwardedBytes)
	counter(c.packets, st.PacketsIn, "in")
	counter(c.packets, st.PacketsOut, "out")
	counter(c.bytes, st.BytesIn, "in")
	counter(c.bytes, st.BytesOut, "out")
	for r, n := range st.Dropped {
		counter(c.drops, n, relay.DropReason(r).String())
	}
}
