package lobby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tickwire/tickwire/internal/addrlimit"
)

// The WebSocket protocol (GET /games/{type}/ws): JSON text messages.
//
// Client to lobby, one object per message, "op" says what:
//
//	{"op":"create","name":"Bob's game","maxPlayers":4,"hosting":"server","player":"Bob"}
//	{"op":"join","room":"k3xq7p2m4a","player":"Alice"}
//	{"op":"ready","room":"k3xq7p2m4a"}            room is optional; if given it must be yours
//	{"op":"ready","hostPort":7777}                 peer-hosted: offer to host on UDP port 7777
//	{"op":"unready"}
//	{"op":"chat","text":"gl hf"}
//	{"op":"leave"}
//	{"op":"quick","player":"Carol"}                "Play now": a running game with room, else a new one (quick.go)
//
// Lobby to client, "type" says what:
//
//	{"type":"rooms","gameType":"demo","rooms":[RoomInfo...]}     while not in a room, on every change
//	{"type":"joined","seat":"...","player":"Bob","room":RoomInfo,"chat":[...]}
//	{"type":"room","event":"Alice is ready","room":RoomInfo}     every change in your room
//	{"type":"chat","room":"...","from":"Bob","text":"gl hf","at":"..."}
//	{"type":"left","room":"..."}
//	{"type":"error","code":"room_full","error":"..."}           your last message changed nothing
//	{"type":"assigned","assignment":Assignment}                  then a close with status 1000 "assigned"

type wsRequest struct {
	Op         string  `json:"op"`
	Room       string  `json:"room"`
	Name       string  `json:"name"`
	MaxPlayers int     `json:"maxPlayers"`
	Hosting    Hosting `json:"hosting"`
	Player     string  `json:"player"`
	HostPort   uint16  `json:"hostPort"`
	Text       string  `json:"text"`
}

type wsRooms struct {
	Type     string     `json:"type"`
	GameType string     `json:"gameType"`
	Rooms    []RoomInfo `json:"rooms"`
}

type wsJoined struct {
	Type   string     `json:"type"`
	Seat   string     `json:"seat"`
	Player string     `json:"player"`
	Room   RoomInfo   `json:"room"`
	Chat   []ChatLine `json:"chat"`
}

type wsRoom struct {
	Type  string   `json:"type"`
	Event string   `json:"event,omitempty"`
	Room  RoomInfo `json:"room"`
}

type wsChat struct {
	Type string `json:"type"`
	Room string `json:"room"`
	ChatLine
}

type wsLeft struct {
	Type string `json:"type"`
	Room string `json:"room"`
}

type wsError struct {
	Type string `json:"type"`
	Error
}

type wsAssigned struct {
	Type       string      `json:"type"`
	Assignment *Assignment `json:"assignment"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("lobby: marshal " + err.Error()) // only our own types are marshalled
	}
	return b
}

// socketQueue is how many messages may wait for a slow socket before the
// lobby drops it.
const socketQueue = 256

// socket is one WebSocket: a watcher of a game type's lobby, then a
// player's connection to its room. The handler goroutine reads; one writer
// goroutine writes what the lobby queues with send.
type socket struct {
	l    *Lobby
	c    *websocket.Conn
	typ  *gameType
	seat *seat // guarded by l.mu

	out    chan outMsg
	ctx    context.Context
	cancel context.CancelFunc
	closed bool // a close is queued; guarded by l.mu (or set before the socket is shared)
	once   sync.Once
}

type outMsg struct {
	data   []byte
	close  bool
	code   websocket.StatusCode
	reason string
}

// send queues data without blocking; a socket that cannot keep up is
// dropped.
func (s *socket) send(data []byte) {
	if s.closed {
		return
	}
	select {
	case s.out <- outMsg{data: data}:
	default:
		s.closed = true
		s.l.metrics.errors.WithLabelValues("slow_socket").Inc()
		s.kill()
	}
}

func (s *socket) sendJSON(v any) { s.send(mustJSON(v)) }

// closeAfterSend queues a close handshake after the queued messages.
func (s *socket) closeAfterSend(code websocket.StatusCode, reason string) {
	if s.closed {
		return
	}
	select {
	case s.out <- outMsg{close: true, code: code, reason: reason}:
		s.closed = true
	default:
		s.closed = true
		s.kill()
	}
}

// kill drops the connection at once.
func (s *socket) kill() {
	s.once.Do(func() {
		s.cancel()
		if s.c != nil {
			go s.c.CloseNow()
		}
	})
}

func (s *socket) writeLoop() {
	ping := time.NewTicker(s.l.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case m := <-s.out:
			if m.close {
				s.c.Close(m.code, m.reason)
				s.kill()
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			err := s.c.Write(ctx, websocket.MessageText, m.data)
			cancel()
			if err != nil {
				s.kill()
				return
			}
		case <-ping.C:
			go func() {
				ctx, cancel := context.WithTimeout(s.ctx, s.l.cfg.PingInterval)
				defer cancel()
				if err := s.c.Ping(ctx); err != nil {
					s.kill()
				}
			}()
		}
	}
}

// serveSocket runs one WebSocket on t's lobby page.
func (l *Lobby) serveSocket(w http.ResponseWriter, r *http.Request, t *gameType) {
	l.mu.Lock()
	if err := l.checkOpen(); err != nil {
		l.unlock()
		l.writeError(w, err)
		return
	}
	if n := l.nsockets; n >= l.cfg.MaxSockets {
		l.unlock() // n, not l.nsockets, after it: another socket may close
		l.writeError(w, errorf(CodeBusy, "the lobby has %d players connected, try again later", n))
		return
	}
	o := l.originOf(r, nil)
	key := addrlimit.KeyOf(o.remote)
	if err := hold(&l.socketsByAddr, key, l.cfg.MaxSocketsPerAddr, "lobby connections"); err != nil {
		l.unlock()
		l.writeError(w, err)
		return
	}
	l.nsockets++
	l.unlock()
	release := func() {
		l.nsockets--
		l.socketsByAddr.Release(key)
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: l.cfg.OriginPatterns})
	if err != nil {
		l.mu.Lock()
		release()
		l.unlock()
		return // Accept wrote the response
	}
	c.SetReadLimit(int64(l.cfg.MaxMessageBytes) * 64)
	s := &socket{l: l, c: c, typ: t, out: make(chan outMsg, socketQueue)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	l.metrics.socketsOpened.Inc()

	l.mu.Lock()
	l.sockets[s] = struct{}{}
	t.watchers[s] = struct{}{}
	s.sendJSON(wsRooms{Type: "rooms", GameType: t.Name, Rooms: l.roomList(t)})
	if l.closed {
		s.closeAfterSend(websocket.StatusGoingAway, "lobby shutting down")
	}
	l.unlock()
	go s.writeLoop()

	defer func() {
		l.mu.Lock()
		if s.seat != nil {
			l.remove(s.seat, "disconnected")
		}
		delete(t.watchers, s)
		delete(l.sockets, s)
		s.closed = true
		release()
		l.unlock()
		s.kill()
	}()

	o.sock = s
	buf := make([]byte, l.cfg.MaxMessageBytes+1)
	for {
		typ, rd, err := c.Reader(s.ctx)
		if err != nil {
			return
		}
		n, err := io.ReadFull(rd, buf)
		switch {
		case err == nil: // more than MaxMessageBytes
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return // over the hard limit: the library closed with 1009
			}
			l.socketError(s, errorf(CodeMessageTooLarge, "message too large: at most %d bytes", l.cfg.MaxMessageBytes))
			continue
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		default:
			return
		}
		l.handleMessage(s, o, typ, buf[:n])
	}
}

// handleMessage decodes and runs one client message of at most
// MaxMessageBytes.
func (l *Lobby) handleMessage(s *socket, o origin, typ websocket.MessageType, data []byte) {
	var e *Error
	var req wsRequest
	if typ != websocket.MessageText {
		e = errorf(CodeBadRequest, "send JSON text messages")
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&req); err != nil || dec.More() {
			e = errorf(CodeBadJSON, "malformed JSON message: want one object with an \"op\"")
		}
	}
	var live *ServerStats
	if e == nil && req.Op == "quick" && l.cfg.Stats != nil {
		st := l.cfg.Stats.Stats() // off the lock: it asks the game server's loop
		live = &st
	}
	l.mu.Lock()
	defer l.unlock()
	switch {
	case e == nil && req.Op == "quick":
		e = l.quick(s, req.Player, o, live)
	case e == nil:
		e = l.handleOp(s, &req, o)
	}
	if e != nil {
		s.sendJSON(wsError{Type: "error", Error: *e})
		l.metrics.errors.WithLabelValues(e.Code).Inc()
	}
}

func (l *Lobby) socketError(s *socket, e *Error) {
	l.mu.Lock()
	s.sendJSON(wsError{Type: "error", Error: *e})
	l.metrics.errors.WithLabelValues(e.Code).Inc()
	l.unlock()
}

// handleOp runs one client message; l.mu is held.
func (l *Lobby) handleOp(s *socket, req *wsRequest, o origin) *Error {
	if s.closed {
		return nil // assigned or shutting down: the close is on its way
	}
	switch req.Op {
	case "create":
		_, err := l.create(s.typ.Name, CreateRequest{Name: req.Name, MaxPlayers: req.MaxPlayers,
			Hosting: req.Hosting, Player: req.Player, HostPort: req.HostPort}, o)
		return err
	case "join":
		_, err := l.join(req.Room, JoinRequest{Player: req.Player, HostPort: req.HostPort}, o)
		return err
	case "ready", "unready":
		return l.setReady(s.seat, req.Room, req.Op == "ready", req.HostPort)
	case "chat":
		return l.chat(s.seat, req.Room, req.Text)
	case "leave":
		return l.leave(s.seat, req.Room)
	case "":
		return errorf(CodeBadRequest, "message has no \"op\"")
	default:
		return errorf(CodeBadRequest, "unknown op %q", req.Op)
	}
}
