package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/webgate"
	"github.com/tickwire/tickwire/webpage"
)

// webServer is the browser side of the game server: the gateway that
// carries browsers' packets into the server's packet path, the
// WebTransport server, and what the page needs to know.
type webServer struct {
	gate   *webgate.Conn
	wt     *webgate.WebTransportServer // nil: WebSocket only
	wtConn net.PacketConn
	info   *webpage.WebTransport
	client *webpage.Client
	demo   *demo // -demo; nil: none
	log    *slog.Logger
}

// startWeb wraps the game socket in the gateway and binds the
// WebTransport socket. On error nothing is left open but conn.
func startWeb(o *options, log *slog.Logger, conn *udp.Conn) (*webServer, error) {
	gate, err := webgate.New(conn, webgate.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	w := &webServer{gate: gate, log: log}
	if o.webClient != "" {
		if w.client, err = webpage.LoadClient(o.webClient); err != nil {
			return nil, fmt.Errorf("-web-client: %w", err)
		}
	} else {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "tickwire", "web-client")
		src := webpage.SourceDir()
		w.client = webpage.BuildOnDemand("", dir, func(err error) {
			if err != nil {
				log.Error("browser client: build failed: it is built with the go command from the tickwire source this binary was "+
					"built from, or the current directory's module without it (a -trimpath build); or give -web-client", "source", src, "err", err)
				return
			}
			log.Info("browser client: built", "dir", dir, "source", src)
		})
	}
	if o.webTransport == "" {
		return w, nil
	}
	cert, hash := o.tls, []byte(nil)
	if cert == nil {
		c, h, err := webgate.NewDevCertificate(certHosts(o), time.Now())
		if err != nil {
			return nil, err
		}
		cert, hash = &c, h[:]
	}
	pc, err := net.ListenPacket("udp", o.webTransport)
	if err != nil {
		return nil, fmt.Errorf("-webtransport %s: %w", o.webTransport, err)
	}
	w.wtConn = pc
	w.wt = gate.NewWebTransport(*cert)
	w.info = &webpage.WebTransport{
		Port:     pc.LocalAddr().(*net.UDPAddr).Port,
		Addr:     o.webTransportAddr,
		Path:     webgate.WebTransportPath,
		CertHash: hash,
	}
	log.Info("serving browsers", "webtransport", pc.LocalAddr(), "dev_certificate", hash != nil, "page", "/play")
	return w, nil
}

// certHosts are the names a development certificate is made for.
func certHosts(o *options) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, _ := net.SplitHostPort(o.publicAddr); h != "" {
		hosts = append(hosts, h)
	}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	return hosts
}

// handler serves the page, the client and the WebSocket fallback.
// clientAddr names a request's client for the per-address limit.
func (w *webServer) handler(clientAddr func(*http.Request) netip.Addr) http.Handler {
	spectate := ""
	if w.demo != nil {
		spectate = "/play/spectate"
	}
	return webpage.Handler(webpage.Config{
		Client:       w.client,
		Demo:         spectate,
		WebSocket:    w.gate.WebSocketHandler(clientAddr),
		WebTransport: w.info,
	})
}

// serveWebTransport serves WebTransport until close.
func (w *webServer) serveWebTransport() error {
	if w.wt == nil {
		return nil
	}
	return w.wt.Serve(w.wtConn)
}

// close stops the WebTransport server (the game socket closes with the
// game server).
func (w *webServer) close() {
	if w.wt != nil {
		w.wt.Close()
	}
	if w.wtConn != nil {
		w.wtConn.Close()
	}
}

// transportCollector reads the gateway's figures and the server's
// connections by transport at scrape time.
type transportCollector struct {
	srv  *tickwire.Server
	gate *webgate.Conn

	connections, links, accepted, refused *prometheus.Desc
	packets, bytes, drops                 *prometheus.Desc
}

func newTransportCollector(srv *tickwire.Server, gate *webgate.Conn) *transportCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tickwire_transport_"+name, help, labels, nil)
	}
	return &transportCollector{
		srv:         srv,
		gate:        gate,
		connections: d("connections", "Open client connections, by the transport their packets travel on.", "transport"),
		links:       d("links", "Open browser connections (WebTransport sessions, WebSockets), with or without a game session.", "transport"),
		accepted:    d("links_accepted_total", "Browser connections opened.", "transport"),
		refused:     d("links_refused_total", "Browser connections refused by a limit.", "transport"),
		packets:     d("packets_total", "Packets by transport and direction.", "transport", "direction"),
		bytes:       d("bytes_total", "Packet bytes by transport and direction.", "transport", "direction"),
		drops:       d("dropped_total", "Browser messages dropped by the gateway, by reason.", "transport", "reason"),
	}
}

func (c *transportCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *transportCollector) Collect(ch chan<- prometheus.Metric) {
	var conns [webgate.NumTransports]int
	c.srv.Do(func() {
		c.srv.Each(func(cn *tickwire.Conn) { conns[webgate.TransportOf(cn.Addr())]++ })
	})
	st := c.gate.Stats()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for t := range webgate.NumTransports {
		name := t.String()
		s := st[t]
		ch <- prometheus.MustNewConstMetric(c.connections, gauge, float64(conns[t]), name)
		ch <- prometheus.MustNewConstMetric(c.packets, counter, float64(s.PacketsIn), name, "in")
		ch <- prometheus.MustNewConstMetric(c.bytes, counter, float64(s.BytesIn), name, "in")
		if t == webgate.UDP {
			continue // the socket's own figures are tickwire_packets_total
		}
		ch <- prometheus.MustNewConstMetric(c.packets, counter, float64(s.PacketsOut), name, "out")
		ch <- prometheus.MustNewConstMetric(c.bytes, counter, float64(s.BytesOut), name, "out")
		ch <- prometheus.MustNewConstMetric(c.links, gauge, float64(s.Open), name)
		ch <- prometheus.MustNewConstMetric(c.accepted, counter, float64(s.Accepted), name)
		ch <- prometheus.MustNewConstMetric(c.refused, counter, float64(s.Refused), name)
		for _, r := range []struct {
			reason string
			n      uint64
		}{{"malformed", s.Malformed}, {"queue_full", s.QueueFull}, {"send_full", s.SendFull}, {"link_gone", s.Gone}, {"stale", s.Stale}} {
			ch <- prometheus.MustNewConstMetric(c.drops, counter, float64(r.n), name, r.reason)
		}
	}
}
