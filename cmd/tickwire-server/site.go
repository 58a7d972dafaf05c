package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// site is one HTTP listener of the server: the public one (-http) or the
// operator one (-admin).
type site struct {
	name    string // "HTTP" or "admin", as the log line says
	addr    string
	handler http.Handler
	page    string // the page the log line points at

	ln  net.Listener
	srv *http.Server
}

// listen binds the site's address.
func (s *site) listen(log *slog.Logger) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen %s (%s): %w", s.addr, s.name, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving "+s.name, "addr", ln.Addr(), "url", "http://"+ln.Addr().String()+s.page)
	return nil
}

// serve serves the site until Shutdown.
func (s *site) serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}
