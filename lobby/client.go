package lobby

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is a Go client of a lobby's JSON API, for bots, tools and tests:
// no WebSocket needed. The zero value is not usable; set BaseURL.
//
//	c := &lobby.Client{BaseURL: "http://127.0.0.1:8080"}
//	seat, err := c.Create(ctx, "demo", lobby.CreateRequest{Name: "bots", Player: "bot-1"})
//	...
//	err = seat.Ready(ctx)
//	a, err := seat.Assignment(ctx) // waits until every player is ready
//	// dial a.Addrs with a.Token
type Client struct {
	// BaseURL is where the lobby is served, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// HTTP makes the requests. Nil means http.DefaultClient.
	HTTP *http.Client
}

// Seat is a player's place in a room, got from Client.Create or
// Client.Join. Its methods are safe for concurrent use.
type Seat struct {
	ID     string // secret: authenticates this player's calls
	Player string
	Room   RoomInfo // the room as it was when the seat was taken
	// Rendezvous is where and with which ticket the player's sockets
	// learn their NAT mappings (nil: the lobby does not learn them).
	Rendezvous *RendezvousInfo
	c          *Client
}

// do sends a JSON request and decodes a JSON answer into out (nil: none).
// An error answer becomes an *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		e := &Error{}
		if json.Unmarshal(b, e) != nil || e.Code == "" {
			return fmt.Errorf("lobby: %s %s: HTTP %s", method, path, res.Status)
		}
		return e
	}
	if out == nil || res.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("lobby: %s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// Types lists the game types.
func (c *Client) Types(ctx context.Context) ([]TypeInfo, error) {
	var out []TypeInfo
	return out, c.do(ctx, http.MethodGet, "/api/types", nil, &out)
}

// Rooms lists the open rooms of a game type, oldest first.
func (c *Client) Rooms(ctx context.Context, gameType string) ([]RoomInfo, error) {
	var out []RoomInfo
	return out, c.do(ctx, http.MethodGet, "/api/games/"+url.PathEscape(gameType), nil, &out)
}

// Room returns an open room's state.
func (c *Client) Room(ctx context.Context, roomID string) (RoomInfo, error) {
	var out RoomInfo
	return out, c.do(ctx, http.MethodGet, "/api/rooms/"+url.PathEscape(roomID), nil, &out)
}

func (c *Client) seat(si SeatInfo) *Seat {
	return &Seat{ID: si.Seat, Player: si.Player, Room: si.Room, Rendezvous: si.Rendezvous, c: c}
}

// Create opens a room of gameType and seats its creator in it.
func (c *Client) Create(ctx context.Context, gameType string, req CreateRequest) (*Seat, error) {
	var si SeatInfo
	if err := c.do(ctx, http.MethodPost, "/api/games/"+url.PathEscape(gameType), req, &si); err != nil {
		return nil, err
	}
	return c.seat(si), nil
}

// Join seats a player in an open room.
func (c *Client) Join(ctx context.Context, roomID string, req JoinRequest) (*Seat, error) {
	var si SeatInfo
	if err := c.do(ctx, http.MethodPost, "/api/rooms/"+url.PathEscape(roomID)+"/join", req, &si); err != nil {
		return nil, err
	}
	return c.seat(si), nil
}

func (s *Seat) path(op string) string { return "/api/rooms/" + url.PathEscape(s.Room.ID) + "/" + op }

// Ready marks the player ready. The room starts when all its players are.
func (s *Seat) Ready(ctx context.Context) error { return s.SetReady(ctx, ReadyRequest{Ready: true}) }

// SetReady sets the player's ready state (and, for a peer-hosted room,
// offers to host on req.HostPort). req.Seat is filled in.
func (s *Seat) SetReady(ctx context.Context, req ReadyRequest) error {
	req.Seat = s.ID
	return s.c.do(ctx, http.MethodPost, s.path("ready"), req, nil)
}

// Chat says text to the room.
func (s *Seat) Chat(ctx context.Context, text string) error {
	return s.c.do(ctx, http.MethodPost, s.path("chat"), seatRequest{Seat: s.ID, Text: text}, nil)
}

// Leave gives the seat up.
func (s *Seat) Leave(ctx context.Context) error {
	return s.c.do(ctx, http.MethodPost, s.path("leave"), seatRequest{Seat: s.ID}, nil)
}

// Poll waits up to wait (at most 60 s) for the room to start and returns
// what the lobby answers: the assignment, or the room's current state.
// Calling it keeps the seat alive.
func (s *Seat) Poll(ctx context.Context, wait time.Duration) (AssignmentStatus, error) {
	var st AssignmentStatus
	q := url.Values{"seat": {s.ID}, "wait": {wait.String()}}
	err := s.c.do(ctx, http.MethodGet, s.path("assignment")+"?"+q.Encode(), nil, &st)
	return st, err
}

// Assignment long-polls until the room starts and returns this player's
// assignment, or until ctx ends.
func (s *Seat) Assignment(ctx context.Context) (*Assignment, error) {
	for {
		st, err := s.Poll(ctx, defaultPollWait)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if st.Assignment != nil {
			return st.Assignment, nil
		}
	}
}
