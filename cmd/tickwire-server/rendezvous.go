package main

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/tickwire/tickwire"

	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/relay"
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

// Relay allocations the lobby grants (-nat-relay): for the length of a
// game's start and play, and a budget of bytes a 30 Hz game's pair
// forwards in about an hour.
const (
	relayGrantTTL    = 10 * time.Minute
	relayGrantBudget = 256 << 20
)

// relayGrants returns the lobby's Config.RelayPair for -nat-relay: pairs
// of grants minted with the key the relay shares (-key-file; key, or
// loaded from it when this process runs no game server).
func relayGrants(o *options, key tickwire.Key) (func() (lobby.RelayPair, error), error) {
	if key == (tickwire.Key{}) {
		k, _, err := tickwire.LoadOrCreateKey(o.keyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	return func() (lobby.RelayPair, error) {
		joiner, host, err := relay.MintPair(relay.Key(key), time.Now().Add(relayGrantTTL), relayGrantBudget)
		return lobby.RelayPair{Addr: o.natRelay, Joiner: joiner, Host: host}, err
	}, nil
}
