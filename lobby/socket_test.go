package lobby

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestSocketFlow is seed 002 over WebSockets, message by message: Bob
// creates, Alice sees the game and joins, each ready reaches the other at
// once, both get the same game and the sockets close normally.
func TestSocketFlow(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	bob := dialWS(t, srv, "demo")
	alice := dialWS(t, srv, "demo")

	bob.send(map[string]any{"op": "create", "name": "Bob's game", "player": "Bob", "maxPlayers": 2})
	joined := bob.expect("joined")
	room := joined.room(t)
	if joined.Player != "Bob" || joined.Seat == "" || room.Name != "Bob's game" || room.Hosting != ServerHosted || len(room.Players) != 1 {
		t.Fatalf("joined %+v room %+v", joined, room)
	}
	// Alice, watching the demo lobby, sees the new game.
	for {
		m := alice.expect("rooms")
		if len(m.Rooms) == 1 && m.Rooms[0].ID == room.ID {
			break
		}
	}
	alice.send(map[string]any{"op": "join", "room": room.ID, "player": "Alice"})
	if r := alice.expect("joined").room(t); len(r.Players) != 2 {
		t.Fatalf("Alice joined %+v", r)
	}
	bob.expectRoom(func(r RoomInfo) bool { return len(r.Players) == 2 && r.Players[1].Name == "Alice" })

	alice.send(map[string]any{"op": "chat", "text": "gl hf"})
	if m := bob.expect("chat"); m.From != "Alice" || m.Text != "gl hf" {
		t.Errorf("Bob got chat %+v", m)
	}

	alice.send(map[string]any{"op": "ready", "room": room.ID})
	m := bob.expect("room")
	if r := m.room(t); !r.Players[1].Ready || r.Players[0].Ready || m.Event != "Alice is ready" {
		t.Fatalf("Bob saw %q %+v", m.Event, r)
	}
	bob.send(map[string]any{"op": "ready"})

	var as []*Assignment
	for _, w := range []*wsClient{bob, alice} {
		a := w.expect("assigned").Assignment
		as = append(as, a)
		if code := w.expectClose(); code != websocket.StatusNormalClosure {
			t.Errorf("socket closed with %v, want 1000", code)
		}
	}
	checkAssignments(t, testKey, testServerAddr, as...)
	if as[0].Slot != 1 || as[1].Slot != 2 {
		t.Errorf("slots %d %d", as[0].Slot, as[1].Slot)
	}
}

// TestSocketBadInput: each kind of bad message is answered with an error
// on the socket, leaves every room as it was and keeps the socket open.
func TestSocketBadInput(t *testing.T) {
	_, srv := newTestLobby(t, Config{MaxMessageBytes: 512, Types: []GameType{{Name: "demo"}, {Name: "other"}}})
	c := &Client{BaseURL: srv.URL}
	ctx := testCtx(t)
	full, err := c.Create(ctx, "demo", CreateRequest{Name: "Full", Player: "Bob", MaxPlayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, full.Room.ID, JoinRequest{Player: "Alice"}); err != nil {
		t.Fatal(err)
	}
	open, err := c.Create(ctx, "demo", CreateRequest{Name: "Open", Player: "Carol"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.Create(ctx, "other", CreateRequest{Name: "Elsewhere", Player: "Dan"})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() []RoomInfo {
		var all []RoomInfo
		for _, typ := range []string{"demo", "other"} {
			rs, err := c.Rooms(ctx, typ)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, rs...)
		}
		return all
	}

	eve := dialWS(t, srv, "demo")
	// Eve sits in a room of her own to test in-room mistakes too.
	inRoom := dialWS(t, srv, "demo")
	inRoom.send(map[string]any{"op": "create", "name": "Mine", "player": "Frank"})
	mine := inRoom.expect("joined").room(t)
	before := snapshot()

	cases := []struct {
		name string
		w    *wsClient
		msg  any
		code string
	}{
		{"unknown room", eve, map[string]any{"op": "join", "room": "nope", "player": "Eve"}, CodeUnknownRoom},
		{"room of another type", eve, map[string]any{"op": "join", "room": other.Room.ID, "player": "Eve"}, CodeUnknownRoom},
		{"full game", eve, map[string]any{"op": "join", "room": full.Room.ID, "player": "Eve"}, CodeRoomFull},
		{"duplicate name", eve, map[string]any{"op": "join", "room": open.Room.ID, "player": "CAROL"}, CodeNameTaken},
		{"bad name", eve, map[string]any{"op": "join", "room": open.Room.ID, "player": strings.Repeat("é", 25)}, CodeBadName},
		{"oversized message", eve, map[string]any{"op": "join", "room": open.Room.ID, "player": "Eve", "pad": strings.Repeat("x", 600)}, CodeMessageTooLarge},
		{"malformed JSON", eve, `{"op":"join",`, CodeBadJSON},
		{"not an object", eve, `[1,2]`, CodeBadJSON},
		{"binary message", eve, []byte{0xff}, CodeBadRequest},
		{"no op", eve, `{}`, CodeBadRequest},
		{"unknown op", eve, `{"op":"dance"}`, CodeBadRequest},
		{"ready without joining", eve, map[string]any{"op": "ready"}, CodeNotJoined},
		{"ready in a game not joined", eve, map[string]any{"op": "ready", "room": open.Room.ID}, CodeNotJoined},
		{"chat without joining", eve, map[string]any{"op": "chat", "text": "hi"}, CodeNotJoined},
		{"leave without joining", eve, map[string]any{"op": "leave"}, CodeNotJoined},
		{"create with unknown hosting", eve, map[string]any{"op": "create", "name": "x", "player": "Eve", "hosting": "moon"}, CodeBadRequest},
		{"create without a name", eve, map[string]any{"op": "create", "player": "Eve"}, CodeBadName},
		{"ready in another game", inRoom, map[string]any{"op": "ready", "room": open.Room.ID}, CodeNotJoined},
		{"join while in a game", inRoom, map[string]any{"op": "join", "room": open.Room.ID, "player": "Frank"}, CodeAlreadyJoined},
		{"create while in a game", inRoom, map[string]any{"op": "create", "name": "Two", "player": "Frank"}, CodeAlreadyJoined},
		{"chat too long", inRoom, map[string]any{"op": "chat", "text": strings.Repeat("y", 281)}, CodeBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if m, ok := tc.msg.([]byte); ok {
				if err := tc.w.c.Write(testCtx(t), websocket.MessageBinary, m); err != nil {
					t.Fatal(err)
				}
			} else {
				tc.w.send(tc.msg)
			}
			m, err := tc.w.next()
			for err == nil && m.Type == "rooms" { // the list Eve watches
				m, err = tc.w.next()
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Type != "error" || m.Code != tc.code || m.Error == "" {
				t.Errorf("got %+v, want an error %q", m, tc.code)
			}
			if after := snapshot(); !reflect.DeepEqual(after, before) {
				t.Errorf("rooms changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	// Both sockets still work.
	inRoom.send(map[string]any{"op": "chat", "room": mine.ID, "text": "still here"})
	if m := inRoom.expect("chat"); m.Text != "still here" {
		t.Errorf("chat %+v", m)
	}
	eve.send(map[string]any{"op": "join", "room": open.Room.ID, "player": "Eve"})
	if r := eve.expect("joined").room(t); len(r.Players) != 2 {
		t.Errorf("Eve joined %+v", r)
	}
}

// TestSocketHugeMessage: a message over 64 × MaxMessageBytes closes the
// socket with 1009, which takes its player out of the room.
func TestSocketHugeMessage(t *testing.T) {
	_, srv := newTestLobby(t, Config{MaxMessageBytes: 64})
	c := &Client{BaseURL: srv.URL}
	w := dialWS(t, srv, "demo")
	w.send(map[string]any{"op": "create", "name": "g", "player": "Bob"})
	room := w.expect("joined").room(t)
	w.c.Write(testCtx(t), websocket.MessageText, []byte(strings.Repeat(" ", 64*64+10)))
	if code := w.expectClose(); code != websocket.StatusMessageTooBig {
		t.Errorf("closed with %v, want 1009", code)
	}
	waitNoRoom(t, c, room.ID)
}

// waitNoRoom long-polls the room list until room id is gone.
func waitNoRoom(t *testing.T, c *Client, id string) {
	t.Helper()
	w := dialWSURL(t, c.BaseURL, "demo")
	rooms := w.rooms
	for {
		found := false
		for _, r := range rooms {
			found = found || r.ID == id
		}
		if !found {
			return
		}
		rooms = w.expect("rooms").Rooms
	}
}

// TestSocketDropLeaves: a dropped socket takes its player out of the room
// and the others hear of it at once; the last one out closes the room.
func TestSocketDropLeaves(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	bob := dialWS(t, srv, "demo")
	alice := dialWS(t, srv, "demo")
	bob.send(map[string]any{"op": "create", "name": "g", "player": "Bob"})
	room := bob.expect("joined").room(t)
	alice.send(map[string]any{"op": "join", "room": room.ID, "player": "Alice"})
	alice.expect("joined")
	bob.expectRoom(func(r RoomInfo) bool { return len(r.Players) == 2 })

	alice.c.CloseNow() // no close handshake: a dropped connection
	m := bob.expect("room")
	if r := m.room(t); len(r.Players) != 1 || r.Players[0].Name != "Bob" || m.Event != "Alice disconnected" {
		t.Errorf("after the drop Bob saw %q %+v", m.Event, r)
	}
	bob.c.Close(websocket.StatusNormalClosure, "")
	waitNoRoom(t, &Client{BaseURL: srv.URL}, room.ID)
}

// TestSocketLeave: leaving over the socket returns to the room list.
func TestSocketLeave(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	bob := dialWS(t, srv, "demo")
	bob.send(map[string]any{"op": "create", "name": "g", "player": "Bob"})
	bob.expect("joined")
	bob.send(map[string]any{"op": "leave"})
	bob.expect("left")
	if m := bob.expect("rooms"); len(m.Rooms) != 0 {
		t.Errorf("rooms after leaving the only room: %+v", m.Rooms)
	}
	bob.send(map[string]any{"op": "create", "name": "again", "player": "Bob"})
	bob.expect("joined")
}

// TestSocketUnknownType: the socket of an unknown type is refused.
func TestSocketUnknownType(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/games/nope/ws"
	_, res, err := websocket.Dial(testCtx(t), u, nil)
	if err == nil || res == nil || res.StatusCode != 404 {
		t.Fatalf("dial unknown type: %v %v", res, err)
	}
	var e Error
	json.NewDecoder(res.Body).Decode(&e)
	if e.Code != CodeUnknownType {
		t.Errorf("error %+v", e)
	}
}

// TestSocketMixedWithAPI: a bot on the API and a browser on a socket play
// together; the socket sees the bot's ready.
func TestSocketMixedWithAPI(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	ctx := testCtx(t)
	bob := dialWS(t, srv, "demo")
	bob.send(map[string]any{"op": "create", "name": "g", "player": "Bob"})
	room := bob.expect("joined").room(t)
	bot, err := (&Client{BaseURL: srv.URL}).Join(ctx, room.ID, JoinRequest{Player: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bot.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	bob.expectRoom(func(r RoomInfo) bool { return len(r.Players) == 2 && r.Players[1].Ready })
	bob.send(map[string]any{"op": "ready"})
	ba := bob.expect("assigned").Assignment
	aa, err := bot.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, testKey, testServerAddr, ba, aa)
}
