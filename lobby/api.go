package lobby

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The JSON API mirrors the pages for bots and tools; the package doc
// lists the endpoints and a complete bot flow.

const (
	defaultPollWait = 25 * time.Second
	maxPollWait     = 60 * time.Second
)

func (l *Lobby) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(mustJSON(v))
	w.Write([]byte("\n"))
}

func (l *Lobby) writeError(w http.ResponseWriter, e *Error) {
	l.metrics.errors.WithLabelValues(e.Code).Inc()
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	l.writeJSON(w, httpStatus(e.Code), e)
}

// readBody decodes one JSON object of at most MaxMessageBytes into v,
// whatever the Content-Type (curl -d sends a form type); cross-site
// browser requests are refused before this by CrossOriginProtection. An
// oversized body is not read further, and its connection is closed.
func (l *Lobby) readBody(w http.ResponseWriter, r *http.Request, v any) *Error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(l.cfg.MaxMessageBytes)))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errorf(CodeMessageTooLarge, "request body too large: at most %d bytes", l.cfg.MaxMessageBytes)
	}
	if err != nil {
		return errorf(CodeBadRequest, "reading the body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil || dec.More() {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return errorf(CodeBadJSON, "malformed JSON body: field %q must be a %s", ute.Field, ute.Type)
		}
		return errorf(CodeBadJSON, "malformed JSON body: want one JSON object")
	}
	return nil
}

func (l *Lobby) apiTypes(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	list := make([]TypeInfo, len(l.order))
	for i, t := range l.order {
		list[i] = l.typeInfo(t)
	}
	l.unlock()
	l.writeJSON(w, http.StatusOK, list)
}

func (l *Lobby) apiRooms(w http.ResponseWriter, r *http.Request) {
	t := l.types[r.PathValue("type")]
	if t == nil {
		l.writeError(w, errorf(CodeUnknownType, "there is no game type %q", r.PathValue("type")))
		return
	}
	l.mu.Lock()
	list := l.roomList(t)
	l.unlock()
	l.writeJSON(w, http.StatusOK, list)
}

func (l *Lobby) apiRoom(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	rm := l.rooms[r.PathValue("room")]
	var ri RoomInfo
	if rm != nil {
		ri = l.roomInfo(rm)
	}
	l.unlock()
	if rm == nil {
		l.writeError(w, errorf(CodeUnknownRoom, "there is no open game %q", r.PathValue("room")))
		return
	}
	l.writeJSON(w, http.StatusOK, ri)
}

// seatReply answers a create or join; l.mu is held.
func (l *Lobby) seatReply(w http.ResponseWriter, status int, s *seat) {
	si := SeatInfo{Seat: s.id, Player: s.name, Room: l.roomInfo(s.room)}
	if s.ticket != nil {
		si.Rendezvous = &RendezvousInfo{Addr: completeAddrs([]string{l.cfg.Rendezvous}, s.reqHost)[0], Ticket: s.ticket[:]}
	}
	l.writeJSON(w, status, si)
}

func (l *Lobby) apiCreate(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if e := l.readBody(w, r, &req); e != nil {
		l.writeError(w, e)
		return
	}
	l.mu.Lock()
	defer l.unlock()
	s, e := l.create(r.PathValue("type"), req, l.originOf(r, nil))
	if e != nil {
		l.writeError(w, e)
		return
	}
	l.seatReply(w, http.StatusCreated, s)
}

func (l *Lobby) apiJoin(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if e := l.readBody(w, r, &req); e != nil {
		l.writeError(w, e)
		return
	}
	l.mu.Lock()
	defer l.unlock()
	s, e := l.join(r.PathValue("room"), req, l.originOf(r, nil))
	if e != nil {
		l.writeError(w, e)
		return
	}
	l.seatReply(w, http.StatusOK, s)
}

// apiSeat finds the seat of an API request; l.mu is held.
func (l *Lobby) apiSeat(id string) (*seat, *Error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	s := l.seats[id]
	if s == nil || s.sock != nil {
		return nil, errorf(CodeUnknownSeat, "unknown seat: it left, timed out or was never given")
	}
	l.touch(s)
	return s, nil
}

// roomOrAssigned answers a seat call: the room's state, or the
// assignment if the room already started.
func (l *Lobby) roomOrAssigned(w http.ResponseWriter, s *seat) {
	if s.assignment != nil {
		l.writeJSON(w, http.StatusOK, AssignmentStatus{Status: "assigned", Assignment: s.assignment})
		return
	}
	ri := l.roomInfo(s.room)
	l.writeJSON(w, http.StatusOK, AssignmentStatus{Status: "waiting", Room: &ri})
}

type seatRequest struct {
	Seat string `json:"seat"`
	Text string `json:"text"`
}

func (l *Lobby) apiReady(w http.ResponseWriter, r *http.Request) {
	var req ReadyRequest
	if e := l.readBody(w, r, &req); e != nil {
		l.writeError(w, e)
		return
	}
	l.mu.Lock()
	defer l.unlock()
	s, e := l.apiSeat(req.Seat)
	if e == nil {
		if s.assignment != nil {
			l.roomOrAssigned(w, s) // a repeated ready after the start
			return
		}
		e = l.setReady(s, r.PathValue("room"), req.Ready, req.HostPort)
	}
	if e != nil {
		l.writeError(w, e)
		return
	}
	l.roomOrAssigned(w, s)
}

func (l *Lobby) apiChat(w http.ResponseWriter, r *http.Request) {
	var req seatRequest
	if e := l.readBody(w, r, &req); e != nil {
		l.writeError(w, e)
		return
	}
	l.mu.Lock()
	defer l.unlock()
	s, e := l.apiSeat(req.Seat)
	if e == nil {
		e = l.chat(s, r.PathValue("room"), req.Text)
	}
	if e != nil {
		l.writeError(w, e)
		return
	}
	l.roomOrAssigned(w, s)
}

func (l *Lobby) apiLeave(w http.ResponseWriter, r *http.Request) {
	var req seatRequest
	if e := l.readBody(w, r, &req); e != nil {
		l.writeError(w, e)
		return
	}
	l.mu.Lock()
	defer l.unlock()
	s, e := l.apiSeat(req.Seat)
	if e == nil {
		e = l.leave(s, r.PathValue("room"))
	}
	if e != nil {
		l.writeError(w, e)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apiAssignment long-polls for a seat's assignment:
// GET /api/rooms/{room}/assignment?seat=S&wait=25s.
func (l *Lobby) apiAssignment(w http.ResponseWriter, r *http.Request) {
	wait := defaultPollWait
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			l.writeError(w, errorf(CodeBadRequest, "wait must be a duration like 25s, not %q", v))
			return
		}
		wait = min(d, maxPollWait)
	}
	roomID := r.PathValue("room")
	l.mu.Lock()
	s, e := l.apiSeat(r.URL.Query().Get("seat"))
	if e == nil && s.assignment == nil {
		e = seatIn(s, roomID)
	}
	if e == nil && s.assignment != nil && s.assignment.Room != roomID {
		e = errorf(CodeNotJoined, "you have not joined game %q", roomID)
	}
	if e != nil {
		l.unlock()
		l.writeError(w, e)
		return
	}
	if s.assignment == nil && wait > 0 {
		s.polls++
		l.unlock()
		// Outlast the server's WriteTimeout, if it has a shorter one.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 10*time.Second))
		t := time.NewTimer(wait)
		select {
		case <-s.done:
		case <-t.C:
		case <-r.Context().Done():
		case <-l.done:
		}
		t.Stop()
		l.mu.Lock()
		s.polls--
		if s.polls == 0 {
			l.touch(s)
		}
		if s.room == nil && s.assignment == nil {
			l.unlock()
			if l.isClosed() {
				l.writeError(w, errorf(CodeClosed, "the lobby is shutting down"))
				return
			}
			l.writeError(w, errorf(CodeUnknownSeat, "your seat is gone: you left, timed out or went idle"))
			return
		}
	}
	defer l.unlock()
	l.roomOrAssigned(w, s)
}

func (l *Lobby) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}
