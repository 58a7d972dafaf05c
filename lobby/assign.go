package lobby

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/tickwire/tickwire"
)

// complete reports whether r has enough players and all are ready.
func complete(r *room) bool {
	if len(r.players) < r.typ.MinPlayers {
		return false
	}
	for _, s := range r.players {
		if !s.ready {
			return false
		}
	}
	return true
}

// placement is where a game runs and how its players reach it.
type placement struct {
	key     tickwire.Key
	server  string                 // the game server's name (server-hosted)
	addrs   []string               // the game server's addresses (server-hosted)
	addrsOf func(s *seat) []string // the addresses in s's token
	host    *seat                  // the hosting player (peer-hosted)
	keyText string                 // the key handed to the host (peer-hosted)
}

// allocTimeout bounds asking the fleet for a server.
const allocTimeout = 10 * time.Second

// maybeAssign starts r when it has enough players and all are ready: it
// picks where the game runs, mints one connect token per player, hands
// each player its Assignment and closes the room. With a fleet, the
// server is asked for first, off the lock (allocate).
func (l *Lobby) maybeAssign(r *room) {
	if r.allocating || !complete(r) {
		return
	}
	var p placement
	switch {
	case r.hosting == ServerHosted && r.typ.fleet:
		l.allocate(r)
		return
	case r.hosting == ServerHosted:
		gs := r.typ.servers[r.typ.next%len(r.typ.servers)]
		r.typ.next++
		p = placement{key: gs.Key, server: gs.Name, addrs: gs.Addrs,
			addrsOf: func(s *seat) []string { return completeAddrs(gs.Addrs, s.reqHost) }}
	case r.hosting == PeerHosted:
		var host *seat
		for _, s := range r.players {
			if s.hostPort != 0 && hostAddrOf(s).IsValid() {
				host = s
				break
			}
		}
		if host == nil {
			l.roomNotice(r, errorf(CodeAssignFailed,
				"everyone is ready, but nobody can host: a player whose program runs a game server must be ready with its UDP port"))
			return
		}
		key, err := tickwire.GenerateKey()
		if err != nil {
			l.roomNotice(r, errorf(CodeAssignFailed, "cannot make a game key: %v", err))
			return
		}
		hostAddr := hostAddrOf(host).String()
		p = placement{key: key, host: host, keyText: key.String(), addrsOf: func(s *seat) []string {
			if s != host {
				return candidates(host, s, hostSocket, tickwire.MaxTokenAddrs)
			}
			own := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), host.hostPort).String()
			if own == hostAddr {
				return []string{hostAddr}
			}
			return []string{own, hostAddr}
		}}
	}
	l.assign(r, randomID(), p)
}

// allocate asks the fleet for a server with room for r's players, and
// assigns r there if it is still complete with the same players when the
// answer comes. Otherwise the seats reserved are released on the server
// at once, and r, if it is still there, is looked at again.
func (l *Lobby) allocate(r *room) {
	r.allocating = true
	players := slices.Clone(r.players)
	gameID := randomID()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), allocTimeout)
		a, err := l.cfg.Fleet.Allocate(ctx, r.typ.Name, gameID, len(players), cmp.Or(l.cfg.TokenTTL, tickwire.DefaultTokenTTL))
		cancel()
		l.mu.Lock()
		defer l.unlock()
		r.allocating = false
		if l.closed || l.rooms[r.id] != r {
			if err == nil {
				l.cfg.Fleet.Release(a) // the room is gone
			}
			return
		}
		if err != nil {
			l.cfg.Logger.Warn("lobby: no game server for a game", "type", r.typ.Name, "room", r.id, "players", len(players), "err", err)
			// The fleet's names and addresses are the operator's business.
			l.roomNotice(r, errorf(CodeAssignFailed, "no game server has room for this game now: ready again to retry"))
			return
		}
		if !slices.Equal(players, r.players) || !complete(r) {
			l.cfg.Fleet.Release(a)
			l.maybeAssign(r)
			return
		}
		l.assign(r, gameID, placement{key: a.Key, server: a.Server, addrs: a.Addrs,
			addrsOf: func(s *seat) []string { return completeAddrs(a.Addrs, s.reqHost) }})
	}()
}

// assign mints r's tokens for game gameID at p, hands each player its
// Assignment and closes the room.
func (l *Lobby) assign(r *room, gameID uint64, p placement) {
	now := time.Now()
	ud := userDataForType(r.typ.Name)
	host := p.host
	players := make([]AssignedPlayer, len(r.players))
	for i, s := range r.players {
		players[i] = AssignedPlayer{Name: s.name, Slot: uint16(i + 1), ClientID: randomID(), Host: s == host}
		if a := hostAddrOf(s); r.hosting == PeerHosted && s.hostPort != 0 && a.IsValid() {
			players[i].HostAddr = a.String()
		}
	}
	// Each player's view of the others: in a peer-hosted game, where
	// their client sockets are reached and its sides of the relay
	// allocations it may need (natViews).
	views := make([][]AssignedPlayer, len(r.players))
	for i := range views {
		views[i] = players
	}
	if host != nil {
		views = l.natViews(r, players)
	}
	as := make([]*Assignment, len(r.players))
	for i, s := range r.players {
		addrs := p.addrsOf(s)
		tok, err := tickwire.MintToken(p.key, tickwire.TokenParams{
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
			Token: tok, Expires: tok.Expires, Role: RolePlayer, Players: views[i],
		}
		a.Host, a.Port = splitAddr(addrs[0])
		if s == host {
			a.Role, a.HostKey = RoleHost, p.keyText
		} else if host != nil {
			a.Relay = views[i][slices.Index(r.players, host)].HostRelay
		}
		as[i] = a
	}

	// Every token is minted: hand them out and close the room.
	l.closeRoom(r)
	if r.hosting == ServerHosted {
		names := make([]playerName, len(players))
		for i, p := range players {
			names[i] = playerName{Slot: p.Slot, Name: p.Name}
		}
		l.keepNames(gameID, names...)
	}
	if r.quick && r.hosting == ServerHosted {
		l.keepQuick(r, gameID, p, len(r.players))
	}
	for i, s := range r.players {
		s.assignment = as[i]
		s.room = nil
		close(s.done)
		if s.sock != nil {
			s.sock.sendJSON(wsAssigned{Type: "assigned", Assignment: as[i]})
			s.sock.closeAfterSend(websocket.StatusNormalClosure, "assigned")
			s.sock.seat = nil
			delete(l.seats, s.id)
			l.dropTicket(s)
			l.schedule(s) // no deadline left: stops the idle timer
		} else {
			// Keep the seat so its player can still fetch the assignment.
			l.touch(s)
		}
	}
	l.typeChanged(r.typ)
	l.metrics.gamesAssigned.WithLabelValues(r.typ.Name, string(r.hosting)).Inc()
	l.cfg.Logger.Info("lobby: game assigned", "game", gameID, "type", r.typ.Name, "hosting", r.hosting,
		"server", p.server, "addr", as[0].Addrs[0], "players", len(players))
	if hook := l.cfg.OnAssigned; hook != nil {
		ga := GameAssigned{GameID: gameID, Type: r.typ.Name, Hosting: r.hosting, Server: p.server,
			Addrs: as[len(as)-1].Addrs, Players: players}
		if host != nil {
			ga.Addrs = []string{hostAddrOf(host).String()}
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
