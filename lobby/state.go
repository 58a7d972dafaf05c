package lobby

import (
	"crypto/rand"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/internal/addrlimit"
)

// This file holds the rooms and seats and every change to them. All of it
// runs with Lobby.mu held; a change ends with the notices it caused queued
// on the sockets concerned (never blocking) and, for a completed room, the
// assignment made.

// gameType is a GameType with its open rooms and the sockets watching its
// lobby page.
type gameType struct {
	GameType
	servers  []*GameServer // the servers that run it
	next     int           // round-robin index into servers
	fleet    bool          // no servers: the fleet hosts its games
	rooms    []*room       // open rooms, oldest first
	quick    []*quickGame  // running games "Play now" started (quick.go)
	watchers map[*socket]struct{}
}

func (t *gameType) hosting() []Hosting {
	if len(t.servers) > 0 || t.fleet {
		return []Hosting{ServerHosted, PeerHosted}
	}
	return []Hosting{PeerHosted}
}

type room struct {
	id         string
	name       string
	typ        *gameType
	hosting    Hosting
	maxPlayers int
	created    time.Time
	owner      addrlimit.Key // the creator's client address (MaxRoomsPerAddr)
	players    []*seat       // join order
	chat       []ChatLine
	// allocating is set while the fleet is asked for a server.
	allocating bool
	// quick marks a room "Play now" created: its game takes later "Play
	// now" players while it has room.
	quick bool
}

const chatHistory = 20

// seat is one player's place in a room. A seat joined over a WebSocket
// lives as long as its socket; one joined through the JSON API lives while
// its player calls the API at least every SeatTimeout. Either goes when
// its player has not acted for IdleTimeout.
type seat struct {
	id       string
	name     string
	room     *room // nil once assigned or gone
	ready    bool
	hostPort uint16
	remote   netip.Addr // the player's IP as the lobby sees it
	reqHost  string     // the host name the player reached the lobby with
	sock     *socket    // nil for API seats

	// ticket authenticates the seat's mapping requests (nil: none);
	// mapped holds what the reflector learned of its host and client
	// sockets (nat.go).
	ticket *[ticketSize]byte
	mapped [2]mapping

	done       chan struct{} // closed when the seat leaves its room
	assignment *Assignment   // set when the room was assigned
	polls      int           // long-polls waiting on done
	acted      time.Time     // the player's last create, join, ready, unready or chat
	deadline   time.Time     // API seats: when the seat expires unless its player calls
	expiry     *time.Timer   // runs expire at the next deadline (schedule)
}

// origin is who makes a request: where from and over which socket.
type origin struct {
	remote netip.Addr
	host   string
	sock   *socket
}

func (l *Lobby) originOf(r *http.Request, sock *socket) origin {
	o := origin{sock: sock, remote: l.ClientAddr(r)}
	o.host = r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		o.host = h
	}
	return o
}

func (l *Lobby) roomInfo(r *room) RoomInfo {
	ri := RoomInfo{
		ID: r.id, Type: r.typ.Name, Name: r.name, Hosting: r.hosting,
		MinPlayers: r.typ.MinPlayers, MaxPlayers: r.maxPlayers,
		Players: make([]PlayerInfo, len(r.players)), Created: r.created,
	}
	for i, s := range r.players {
		ri.Players[i] = PlayerInfo{Name: s.name, Ready: s.ready, CanHost: r.hosting == PeerHosted && s.hostPort != 0}
	}
	return ri
}

func (l *Lobby) typeInfo(t *gameType) TypeInfo {
	ti := TypeInfo{
		Name: t.Name, Title: t.Title, Description: t.Description,
		MinPlayers: t.MinPlayers, MaxPlayers: t.MaxPlayers,
		Hosting: t.hosting(), Rooms: len(t.rooms),
	}
	for _, r := range t.rooms {
		ti.Players += len(r.players)
	}
	return ti
}

func (l *Lobby) roomList(t *gameType) []RoomInfo {
	list := make([]RoomInfo, len(t.rooms))
	for i, r := range t.rooms {
		list[i] = l.roomInfo(r)
	}
	return list
}

// cleanName trims s and checks it is a usable name.
func (l *Lobby) cleanName(what, s string) (string, *Error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errorf(CodeBadName, "%s is empty", what)
	}
	if !utf8.ValidString(s) {
		return "", errorf(CodeBadName, "%s is not UTF-8", what)
	}
	if n := utf8.RuneCountInString(s); n > l.cfg.MaxNameLen {
		return "", errorf(CodeBadName, "%s has %d characters, at most %d allowed", what, n, l.cfg.MaxNameLen)
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return "", errorf(CodeBadName, "%s has an unprintable character %U", what, c)
		}
	}
	return s, nil
}

func (l *Lobby) checkOpen() *Error {
	if l.closed {
		return errorf(CodeClosed, "the lobby is shutting down")
	}
	return nil
}

func (l *Lobby) checkFree(o origin) *Error {
	if o.sock != nil && o.sock.seat != nil {
		return errorf(CodeAlreadyJoined, "you are already in game %q: leave it first", o.sock.seat.room.name)
	}
	return nil
}

// create opens a room and seats its creator.
func (l *Lobby) create(typeName string, req CreateRequest, o origin) (*seat, *Error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	t := l.types[typeName]
	if t == nil {
		return nil, errorf(CodeUnknownType, "there is no game type %q", typeName)
	}
	if err := l.checkFree(o); err != nil {
		return nil, err
	}
	name, err := l.cleanName("the game's name", req.Name)
	if err != nil {
		return nil, err
	}
	player, err := l.cleanName("your name", req.Player)
	if err != nil {
		return nil, err
	}
	hosting := req.Hosting
	if hosting == "" {
		hosting = t.hosting()[0]
	}
	switch hosting {
	case ServerHosted:
		if len(t.servers) == 0 && !t.fleet {
			return nil, errorf(CodeNoServer, "no game server runs %s: create a peer-hosted game", t.Title)
		}
	case PeerHosted:
	default:
		return nil, errorf(CodeBadRequest, "hosting must be %q or %q, not %q", ServerHosted, PeerHosted, hosting)
	}
	max := req.MaxPlayers
	if max == 0 {
		max = t.MaxPlayers
	}
	if max < t.MinPlayers || max > t.MaxPlayers {
		return nil, errorf(CodeBadRequest, "max players must be %d to %d, not %d", t.MinPlayers, t.MaxPlayers, max)
	}
	owner := addrlimit.KeyOf(o.remote)
	var victim *room
	if len(t.rooms) >= l.cfg.MaxRoomsPerType {
		if victim = l.displaceable(t, owner); victim == nil {
			return nil, errorf(CodeTooManyRooms, "%s already has %d open games: join one", t.Title, len(t.rooms))
		}
	}
	if err := hold(&l.roomsByAddr, owner, l.cfg.MaxRoomsPerAddr, "games"); err != nil {
		return nil, err
	}
	if err := l.take(l.createRate, owner, "games created"); err != nil {
		l.roomsByAddr.Release(owner)
		return nil, err
	}
	// The address's token is spent either way: many addresses together
	// ask the lobby's bucket no faster than their own rates allow.
	if err := l.takeGlobal(l.globalCreate, "games are being created on this lobby"); err != nil {
		l.roomsByAddr.Release(owner)
		return nil, err
	}
	if victim != nil {
		l.displace(victim)
	}
	r := &room{
		id: l.roomID(), name: name, typ: t, hosting: hosting,
		maxPlayers: max, created: time.Now().UTC().Truncate(time.Second), owner: owner,
	}
	for l.rooms[r.id] != nil {
		r.id = l.roomID()
	}
	l.rooms[r.id] = r
	t.rooms = append(t.rooms, r)
	s := l.seat(r, player, req.HostPort, o)
	l.metrics.roomsCreated.WithLabelValues(t.Name).Inc()
	l.roomChanged(r, player+" created the game", s)
	return s, nil
}

// displaceable is the room a create from owner may take the place of in
// t, which is full: the oldest room, not being allocated, of the address
// that created the most of t's rooms, if that address holds more of
// them than owner does. So an address with few rooms always gets one,
// and filling a type takes MaxRoomsPerType addresses, each keeping a
// live seat in its room. Nil when none may go.
func (l *Lobby) displaceable(t *gameType, owner addrlimit.Key) *room {
	count := map[addrlimit.Key]int{}
	for _, r := range t.rooms {
		count[r.owner]++
	}
	var victim *room
	for _, r := range t.rooms { // oldest first
		if r.allocating || count[r.owner] <= count[owner]+1 {
			continue
		}
		if victim == nil || count[r.owner] > count[victim.owner] {
			victim = r
		}
	}
	return victim
}

// displace closes r to make room for another: its players are told and
// go back to the type's list.
func (l *Lobby) displace(r *room) {
	l.metrics.roomsDisplaced.WithLabelValues(r.typ.Name).Inc()
	for _, s := range slices.Clone(r.players) {
		l.remove(s, "was displaced")
	}
}

// join seats a player in an open room.
func (l *Lobby) join(roomID string, req JoinRequest, o origin) (*seat, *Error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	r := l.rooms[roomID]
	if r == nil {
		return nil, errorf(CodeUnknownRoom, "there is no open game %q (it may have started)", roomID)
	}
	if o.sock != nil && o.sock.typ != r.typ {
		return nil, errorf(CodeUnknownRoom, "game %q is not a %s game", roomID, o.sock.typ.Title)
	}
	if err := l.checkFree(o); err != nil {
		return nil, err
	}
	player, err := l.cleanName("your name", req.Player)
	if err != nil {
		return nil, err
	}
	if len(r.players) >= r.maxPlayers {
		return nil, errorf(CodeRoomFull, "game %q is full (%d players)", r.name, r.maxPlayers)
	}
	for _, p := range r.players {
		if strings.EqualFold(p.name, player) {
			return nil, errorf(CodeNameTaken, "someone in %q is already called %q", r.name, p.name)
		}
	}
	if err := l.take(l.joinRate, addrlimit.KeyOf(o.remote), "joins"); err != nil {
		return nil, err
	}
	s := l.seat(r, player, req.HostPort, o)
	l.roomChanged(r, player+" joined", s)
	return s, nil
}

func (l *Lobby) seat(r *room, name string, hostPort uint16, o origin) *seat {
	s := &seat{
		id: rand.Text(), name: name, room: r, hostPort: hostPort,
		remote: o.remote, reqHost: o.host, sock: o.sock,
		done: make(chan struct{}), acted: time.Now(),
	}
	r.players = append(r.players, s)
	l.seats[s.id] = s
	l.issueTicket(s)
	if o.sock != nil {
		o.sock.seat = s
		delete(r.typ.watchers, o.sock)
		o.sock.sendJSON(wsJoined{Type: "joined", Seat: s.id, Player: name, Room: l.roomInfo(r), Chat: r.chat})
	} else {
		s.deadline = time.Now().Add(l.cfg.SeatTimeout)
	}
	l.schedule(s)
	return s
}

// seatIn checks that s is seated in room roomID ("" means its own room).
func seatIn(s *seat, roomID string) *Error {
	if s == nil || s.room == nil {
		if roomID == "" {
			return errorf(CodeNotJoined, "you have not joined a game")
		}
		return errorf(CodeNotJoined, "you have not joined game %q", roomID)
	}
	if roomID != "" && s.room.id != roomID {
		return errorf(CodeNotJoined, "you have not joined game %q (you are in %q)", roomID, s.room.id)
	}
	return nil
}

// setReady marks s ready or not, and starts the room once all are.
func (l *Lobby) setReady(s *seat, roomID string, ready bool, hostPort uint16) *Error {
	if err := seatIn(s, roomID); err != nil {
		return err
	}
	l.act(s)
	r := s.room
	if s.ready == ready && (hostPort == 0 || hostPort == s.hostPort) {
		return nil
	}
	s.ready = ready
	if hostPort != 0 {
		s.hostPort = hostPort
	}
	if ready {
		l.roomChanged(r, s.name+" is ready", nil)
	} else {
		l.roomChanged(r, s.name+" is not ready", nil)
	}
	l.maybeAssign(r)
	return nil
}

func (l *Lobby) chat(s *seat, roomID, text string) *Error {
	if err := seatIn(s, roomID); err != nil {
		return err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return errorf(CodeBadRequest, "empty chat message")
	}
	if !utf8.ValidString(text) {
		return errorf(CodeBadRequest, "chat message is not UTF-8")
	}
	if n := utf8.RuneCountInString(text); n > l.cfg.MaxChatLen {
		return errorf(CodeBadRequest, "chat message has %d characters, at most %d allowed", n, l.cfg.MaxChatLen)
	}
	if err := l.take(l.chatRate, addrlimit.KeyOf(s.remote), "chat messages"); err != nil {
		return err
	}
	l.act(s)
	r := s.room
	line := ChatLine{From: s.name, Text: text, At: time.Now().UTC()}
	if len(r.chat) == chatHistory {
		r.chat = append(r.chat[:0], r.chat[1:]...)
	}
	r.chat = append(r.chat, line)
	msg := mustJSON(wsChat{Type: "chat", Room: r.id, ChatLine: line})
	for _, p := range r.players {
		if p.sock != nil {
			p.sock.send(msg)
		}
	}
	l.metrics.chats.Inc()
	return nil
}

// leave takes s out of its room at the player's request.
func (l *Lobby) leave(s *seat, roomID string) *Error {
	if err := seatIn(s, roomID); err != nil {
		return err
	}
	l.remove(s, "left")
	return nil
}

// remove takes s out of its room (left, disconnected, timed out); the
// room closes when it empties.
func (l *Lobby) remove(s *seat, why string) {
	r := s.room
	if r == nil {
		return
	}
	s.room = nil
	close(s.done)
	delete(l.seats, s.id)
	l.dropTicket(s)
	if s.expiry != nil {
		s.expiry.Stop()
	}
	r.players = slices.DeleteFunc(r.players, func(p *seat) bool { return p == s })
	l.metrics.playersLeft.WithLabelValues(why).Inc()
	if len(r.players) == 0 {
		l.closeRoom(r)
		l.typeChanged(r.typ)
	} else {
		l.roomChanged(r, s.name+" "+why, nil)
		l.maybeAssign(r)
	}
	if sock := s.sock; sock != nil && sock.seat == s {
		// Back to watching the type's lobby.
		sock.seat = nil
		sock.sendJSON(wsLeft{Type: "left", Room: r.id})
		r.typ.watchers[sock] = struct{}{}
		sock.sendJSON(wsRooms{Type: "rooms", GameType: r.typ.Name, Rooms: l.roomList(r.typ)})
	}
}

func (l *Lobby) closeRoom(r *room) {
	delete(l.rooms, r.id)
	r.typ.rooms = slices.DeleteFunc(r.typ.rooms, func(x *room) bool { return x == r })
	l.roomsByAddr.Release(r.owner)
}

// expire removes a seat whose player went idle or (an API seat) stopped
// calling, or forgets an assignment nobody picked up.
func (l *Lobby) expire(s *seat) {
	l.mu.Lock()
	defer l.unlock()
	if l.seats[s.id] != s {
		return // gone already
	}
	now := time.Now()
	switch {
	case s.room != nil && l.cfg.IdleTimeout > 0 && !now.Before(s.acted.Add(l.cfg.IdleTimeout)):
		l.remove(s, "went idle")
	case s.sock == nil && s.polls == 0 && !now.Before(s.deadline):
		if s.assignment != nil {
			delete(l.seats, s.id)
			l.dropTicket(s)
		} else {
			l.remove(s, "timed out")
		}
	default:
		l.schedule(s) // a deadline moved
	}
}

// schedule sets s's timer to its next deadline: going idle while seated
// and, for an API seat not long-polling, SeatTimeout after its last call.
func (l *Lobby) schedule(s *seat) {
	var next time.Time
	if s.room != nil && l.cfg.IdleTimeout > 0 {
		next = s.acted.Add(l.cfg.IdleTimeout)
	}
	if s.sock == nil && s.polls == 0 && (next.IsZero() || s.deadline.Before(next)) {
		next = s.deadline
	}
	switch {
	case next.IsZero():
		if s.expiry != nil {
			s.expiry.Stop()
		}
	case s.expiry == nil:
		s.expiry = time.AfterFunc(time.Until(next), func() { l.expire(s) })
	default:
		s.expiry.Reset(time.Until(next))
	}
}

// touch records that an API player is present.
func (l *Lobby) touch(s *seat) {
	if s.sock != nil {
		return
	}
	s.deadline = time.Now().Add(l.cfg.SeatTimeout)
	l.schedule(s)
}

// act records that a player did something: it is not idle.
func (l *Lobby) act(s *seat) {
	s.acted = time.Now()
	l.schedule(s)
}

// roomChanged tells the room's sockets (but not except's, which already
// knows) and the type's watchers.
func (l *Lobby) roomChanged(r *room, event string, except *seat) {
	msg := mustJSON(wsRoom{Type: "room", Event: event, Room: l.roomInfo(r)})
	for _, p := range r.players {
		if p.sock != nil && p != except {
			p.sock.send(msg)
		}
	}
	l.typeChanged(r.typ)
}

// typeChanged sends a type's room list to the sockets watching it.
func (l *Lobby) typeChanged(t *gameType) {
	if len(t.watchers) == 0 {
		return
	}
	msg := mustJSON(wsRooms{Type: "rooms", GameType: t.Name, Rooms: l.roomList(t)})
	for w := range t.watchers {
		w.send(msg)
	}
}

// roomID returns a new room id. In a fleet with several lobbies it
// starts with this lobby's tag (fleet.Directory.Announce), so that the
// other lobbies send the room's players here.
func (l *Lobby) roomID() string {
	id := strings.ToLower(rand.Text()[:10])
	if l.cfg.Fleet != nil {
		if tag := l.cfg.Fleet.Tag(); tag != "" {
			id = tag + id[len(tag):]
		}
	}
	return id
}

// roomElsewhere returns the URL of the lobby that holds room id, when
// another lobby of the fleet does.
func (l *Lobby) roomElsewhere(id string) (string, bool) {
	if l.cfg.Fleet == nil || len(id) < fleet.TagLen {
		return "", false
	}
	l.mu.Lock()
	_, here := l.rooms[id]
	l.unlock()
	if here {
		return "", false
	}
	return l.cfg.Fleet.LobbyURL(id[:fleet.TagLen])
}

// elsewhere sends requests for another lobby's room there (307 keeps
// the method and body); h serves the rest.
func (l *Lobby) elsewhere(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if u, ok := l.roomElsewhere(r.PathValue("room")); ok {
			l.metrics.redirects.Inc()
			http.Redirect(w, r, u+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		h(w, r)
	}
}
