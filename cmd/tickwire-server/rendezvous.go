package main

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/rendezvous"
	"github.com/tickwire/tickwire/udp"
)

// rendezvousServer is the reflector of -rendezvous beside the lobby.
type rendezvousServer struct {
	conn *udp.Conn
	addr string // what the lobby hands players: the flag's host, the port bound
	r    *rendezvous.Reflector
	log  *slog.Logger
}

// listenRendezvous opens the reflector's socket on addr.
func listenRendezvous(addr string, log *slog.Logger) (*rendezvousServer, error) {
	conn, err := udp.Listen("udp", addr, udp.Config{})
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return &rendezvousServer{conn: conn, log: log,
		addr: net.JoinHostPort(host, strconv.Itoa(int(conn.LocalAddr().Port())))}, nil
}

// serve answers players' mapping requests for lb until close.
func (s *rendezvousServer) serve(lb *lobby.Lobby) {
	s.r, _ = rendezvous.NewReflector(rendezvous.ReflectorConfig{Logger: s.log,
		Note: func(t rendezvous.Ticket, role rendezvous.Role, m netip.AddrPort, local []netip.AddrPort) bool {
			return lb.NoteMapping(t, role == rendezvous.RoleHost, m, local)
		}})
	s.log.Info("serving rendezvous", "udp", s.conn.LocalAddr())
	go func() {
		if err := s.r.Serve(s.conn); err != nil {
			s.log.Warn("rendezvous stopped", "err", err)
		}
	}()
}

func (s *rendezvousServer) close() {
	if s.r != nil {
		s.r.Close()
		return
	}
	s.conn.Close()
}
