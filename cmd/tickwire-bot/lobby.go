package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/lobby"
)

// lobbyRooms gets the bots' tokens through the lobby's JSON API (-lobby):
// every -room-size bots form one server-hosted room of -type, join it,
// ready up and take the tokens of the game the lobby assigns them.
type lobbyRooms struct {
	o     *options
	rooms []*lobbyRoom
}

type lobbyRoom struct {
	once   sync.Once
	tokens []*tickwire.ConnectToken // by member
	err    error
}

func newLobbyRooms(o *options) *lobbyRooms {
	n := (o.n + o.roomSize - 1) / o.roomSize
	l := &lobbyRooms{o: o, rooms: make([]*lobbyRoom, n)}
	for i := range l.rooms {
		l.rooms[i] = &lobbyRoom{}
	}
	return l
}

// token returns bot i's token, forming its room on first use.
func (l *lobbyRooms) token(ctx context.Context, i int) (*tickwire.ConnectToken, error) {
	g := i / l.o.roomSize
	r := l.rooms[g]
	r.once.Do(func() {
		size := min(l.o.roomSize, l.o.n-g*l.o.roomSize)
		r.tokens, r.err = l.form(ctx, g, size)
	})
	if r.err != nil {
		return nil, r.err
	}
	return r.tokens[i%l.o.roomSize], nil
}

// client is the lobby client of room g: with -source-ips, the rooms'
// requests come from 127.0.0.1 .. 127.0.0.N in turn, as players on many
// machines would (the lobby limits what one address may do).
func (l *lobbyRooms) client(g int) *lobby.Client {
	c := &lobby.Client{BaseURL: l.o.server}
	if l.o.sourceIPs > 1 {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+g%l.o.sourceIPs))}
		c.HTTP = &http.Client{Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: src, Timeout: 10 * time.Second}).DialContext,
		}}
	}
	return c
}

// form seats size bots in a new room, readies them once all sit, and
// waits for their assignments.
func (l *lobbyRooms) form(ctx context.Context, g, size int) ([]*tickwire.ConnectToken, error) {
	lc := l.client(g)
	name := fmt.Sprintf("bots-%d-%d", l.o.seed, g)
	first, err := lc.Create(ctx, l.o.gameType, lobby.CreateRequest{Name: name, MaxPlayers: size,
		Hosting: lobby.ServerHosted, Player: "bot-0"})
	if err != nil {
		return nil, fmt.Errorf("room %d: create: %w", g, err)
	}
	seats := []*lobby.Seat{first}
	for m := 1; m < size; m++ {
		s, err := lc.Join(ctx, first.Room.ID, lobby.JoinRequest{Player: fmt.Sprintf("bot-%d", m)})
		if err != nil {
			return nil, fmt.Errorf("room %d: join: %w", g, err)
		}
		seats = append(seats, s)
	}
	// Everyone sits: ready up (the last ready completes the room).
	for _, s := range seats {
		if err := s.Ready(ctx); err != nil {
			return nil, fmt.Errorf("room %d: ready: %w", g, err)
		}
	}
	tokens := make([]*tickwire.ConnectToken, size)
	for m, s := range seats {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		a, err := s.Assignment(actx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("room %d: assignment: %w", g, err)
		}
		tokens[m] = a.Token
	}
	return tokens, nil
}
