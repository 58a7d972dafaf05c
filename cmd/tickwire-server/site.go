package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// httpLimits bound what one client holds on a listener: how long it may
// take to send a request or read an answer, how long an idle keep-alive
// connection stays, and how big a request may be.
type httpLimits struct {
	readHeader time.Duration // the request line and headers
	read       time.Duration // the whole request, body included
	write      time.Duration // one answer; long-polls extend theirs, WebSockets (hijacked) keep their own
	idle       time.Duration // a keep-alive connection between requests
	maxHeader  int           // bytes of request line and headers
	maxBody    int64         // bytes of request body
}

// defaultHTTPLimits are the public listener's.
var defaultHTTPLimits = httpLimits{
	readHeader: 5 * time.Second,
	read:       10 * time.Second,
	write:      30 * time.Second,
	idle:       60 * time.Second,
	maxHeader:  64 << 10,
	maxBody:    64 << 10,
}

// adminWriteTimeout lets the operator listener answer pprof's 30 s
// profiles and traces (pprof refuses durations beyond WriteTimeout).
const adminWriteTimeout = 2 * time.Minute

// site is one HTTP listener of the server: the public one (-http) or the
// operator one (-admin).
type site struct {
	name    string // "HTTP" or "admin", as the log line says
	addr    string
	handler http.Handler
	page    string // the page the log line points at
	limits  httpLimits

	ln  net.Listener
	srv *http.Server
	tls bool
}

// listen binds the site's address, with at most -max-http-conns
// connections at once and -max-http-conns-per-addr from one address.
func (s *site) listen(o *options, log *slog.Logger) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen %s (%s): %w", s.addr, s.name, err)
	}
	s.ln = limitPerAddr(netutil.LimitListener(ln, o.maxConns), o.maxConnsPerAddr, o.trusted)
	s.srv = &http.Server{
		Handler:           http.MaxBytesHandler(s.handler, s.limits.maxBody),
		ReadHeaderTimeout: s.limits.readHeader,
		ReadTimeout:       s.limits.read,
		WriteTimeout:      s.limits.write,
		IdleTimeout:       s.limits.idle,
		MaxHeaderBytes:    s.limits.maxHeader,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if o.tls != nil {
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*o.tls}, MinVersion: tls.VersionTLS12}
		s.tls, scheme = true, "https"
	}
	log.Info("serving "+s.name, "addr", ln.Addr(), "url", scheme+"://"+ln.Addr().String()+s.page)
	return nil
}

// serve serves the site until Shutdown.
func (s *site) serve() error {
	serve := s.srv.Serve
	if s.tls {
		serve = func(ln net.Listener) error { return s.srv.ServeTLS(ln, "", "") }
	}
	if err := serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}
