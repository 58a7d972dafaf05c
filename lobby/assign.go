package lobby

import (
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/tickwire/tickwire"
)

// maybeAssign starts r when it has enough players and all are ready: it
// picks where the game runs, mints one connect token per player, hands
// each player its Assignment and closes the room.
func (l *Lobby) maybeAssign(r *room) {
	if len(r.players) < r.typ.MinPlayers {
		return
	}
	for _, s := range r.players {
		if !s.ready {
			return
		}
	}
	now := time.Now()
	gameID := randomID()
	ud := userDataForType(r.typ.Name)
	var (
		key     tickwire.Key
		server  string
		addrsOf func(s *seat) []string
		host    *seat
		keyText string
	)
	switch r.hosting {
	case ServerHosted:
		gs := r.typ.servers[r.typ.next%len(r.typ.servers)]
		r.typ.next++
		key, server = gs.Key, gs.Name
		addrsOf = func(s *seat) []string { return completeAddrs(gs.Addrs, s.reqHost) }
	case PeerHosted:
		for _, s := range r.players {
			if s.hostPort != 0 && s.remote.IsValid() {
				host = s
				break
			}
		}
		if host == nil {
			l.roomNotice(r, errorf(CodeAssignFailed,
				"everyone is ready, but nobody can host: a player whose program runs a game server must be ready with its UDP port"))
			return
		}
		var err error
		if key, err = tickwire.GenerateKey(); err != nil {
			l.roomNotice(r, errorf(CodeAssignFailed, "cannot make a game key: %v", err))
			return
		}
		keyText = key.String()
		hostAddr := netip.AddrPortFrom(host.remote, host.hostPort).String()
		addrsOf = func(s *seat) []string {
			if s != host || host.remote.IsLoopback() {
				return []string{hostAddr}
			}
			return []string{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), host.hostPort).String(), hostAddr}
		}
	}

	players := make([]AssignedPlayer, len(r.players))
	for i, s := range r.players {
		players[i] = AssignedPlayer{Name: s.name, Slot: uint16(i + 1), ClientID: randomID(), Host: s == host}
		if r.hosting == PeerHosted && s.hostPort != 0 && s.remote.IsValid() {
			players[i].HostAddr = netip.AddrPortFrom(s.remote, s.hostPort).String()
		}
	}
	as := make([]*Assignment, len(r.players))
	for i, s := range r.players {
		addrs := addrsOf(s)
		tok, err := tickwire.MintToken(key, tickwire.TokenParams{
			GameID: gameID, ClientID: players[i].ClientID, Players: []uint16{players[i].Slot},
			ServerAddrs: addrs, TTL: l.cfg.TokenTTL, UserData: ud,
		}, now)
		if err != nil {
			l.roomNotice(r, errorf(CodeAssignFailed, "cannot mint a connect token: %v", err))
			return
		}
		a := &Assignment{
			GameID: gameID, Type: r.typ.Name, Room: r.id, Hosting: r.hosting,
			Addrs: addrs, Slot: players[i].Slot, ClientID: players[i].ClientID,
			Token: tok, Expires: tok.Expires, Role: RolePlayer, Players: players,
		}
		a.Host, a.Port = splitAddr(addrs[0])
		if s == host {
			a.Role, a.HostKey = RoleHost, keyText
		}
		as[i] = a
	}

	// Every token is minted: hand them out and close the room.
	l.closeRoom(r)
	for i, s := range r.players {
		s.assignment = as[i]
		s.room = nil
		close(s.done)
		if s.sock != nil {
			s.sock.sendJSON(wsAssigned{Type: "assigned", Assignment: as[i]})
			s.sock.closeAfterSend(websocket.StatusNormalClosure, "assigned")
			s.sock.seat = nil
			delete(l.seats, s.id)
			l.schedule(s) // no deadline left: stops the idle timer
		} else {
			// Keep the seat so its player can still fetch the assignment.
			l.touch(s)
		}
	}
	l.typeChanged(r.typ)
	l.metrics.gamesAssigned.WithLabelValues(r.typ.Name, string(r.hosting)).Inc()
	l.cfg.Logger.Info("lobby: game assigned", "game", gameID, "type", r.typ.Name, "hosting", r.hosting,
		"server", server, "addr", as[0].Addrs[0], "players", len(players))
	if hook := l.cfg.OnAssigned; hook != nil {
		ga := GameAssigned{GameID: gameID, Type: r.typ.Name, Hosting: r.hosting, Server: server,
			Addrs: as[len(as)-1].Addrs, Players: players}
		if host != nil {
			ga.Addrs = []string{netip.AddrPortFrom(host.remote, host.hostPort).String()}
		}
		l.after = append(l.after, func() { hook(ga) })
	}
}

// roomNotice sends an error to every socket in r without changing it.
func (l *Lobby) roomNotice(r *room, e *Error) {
	msg := mustJSON(wsError{Type: "error", Error: *e})
	for _, s := range r.players {
		if s.sock != nil {
			s.sock.send(msg)
		}
	}
	l.metrics.errors.WithLabelValues(e.Code).Inc()
}

// completeAddrs fills addresses without a usable host with the host name
// the player reached the lobby with.
func completeAddrs(addrs []string, reqHost string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		h, p, err := net.SplitHostPort(a)
		if err == nil && (h == "" || h == "0.0.0.0" || h == "::") {
			if reqHost == "" {
				reqHost = "127.0.0.1"
			}
			a = net.JoinHostPort(reqHost, p)
		}
		out[i] = a
	}
	return out
}

func splitAddr(a string) (string, int) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, 0
	}
	port, _ := strconv.Atoi(p)
	return h, port
}

// randomID returns a random non-zero 64-bit id (game and client ids).
func randomID() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}
