package lobby

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tickwire/tickwire"
)

// TestAPIServerHosted is seed 002 with Steve as host, through the JSON API:
// Bob creates, Alice joins, both ready, both get the same game id, host
// and port and their own sealed token.
func TestAPIServerHosted(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}

	types, err := c.Types(ctx)
	if err != nil || len(types) != 1 || types[0].Name != "demo" || types[0].Hosting[0] != ServerHosted {
		t.Fatalf("types %+v, %v", types, err)
	}
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "Bob's game", Player: "Bob", MaxPlayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := c.Rooms(ctx, "demo")
	if err != nil || len(rooms) != 1 || rooms[0].ID != bob.Room.ID || rooms[0].Players[0].Name != "Bob" {
		t.Fatalf("rooms %+v, %v", rooms, err)
	}
	alice, err := c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.Room(ctx, bob.Room.ID)
	if err != nil || len(r.Players) != 2 || r.Players[0].Ready || !r.Players[1].Ready {
		t.Fatalf("after Alice's ready: %+v, %v", r, err)
	}
	// Bob waits for his assignment while he readies.
	var (
		wg    sync.WaitGroup
		bobA  *Assignment
		bobEr error
	)
	wg.Go(func() { bobA, bobEr = bob.Assignment(ctx) })
	if err := bob.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if bobEr != nil {
		t.Fatal(bobEr)
	}
	aliceA, err := alice.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, testKey, testServerAddr, bobA, aliceA)
	if bobA.Slot != 1 || aliceA.Slot != 2 || bobA.Host != "127.0.0.1" || bobA.Port != 7777 ||
		bobA.Role != RolePlayer || bobA.HostKey != "" || bobA.Hosting != ServerHosted {
		t.Errorf("Bob's assignment %+v", bobA)
	}
	if len(bobA.Players) != 2 || bobA.Players[0].Name != "Bob" || bobA.Players[1].Name != "Alice" {
		t.Errorf("players %+v", bobA.Players)
	}
	// The room is gone from the list and the seat still answers.
	if rooms, _ := c.Rooms(ctx, "demo"); len(rooms) != 0 {
		t.Errorf("started room still listed: %+v", rooms)
	}
	if _, err := c.Room(ctx, bob.Room.ID); !errors.Is(err, &Error{Code: CodeUnknownRoom}) {
		t.Errorf("started room: %v", err)
	}
	again, err := bob.Assignment(ctx)
	if err != nil || again.GameID != bobA.GameID || again.Token.String() != bobA.Token.String() {
		t.Errorf("second fetch: %+v, %v", again, err)
	}
}

// TestServerAddrCompletion: a server address without a host gets the host
// name each player reached the lobby with.
func TestServerAddrCompletion(t *testing.T) {
	_, srv := newTestLobby(t, Config{Servers: []GameServer{{Addrs: []string{":7777", "[::]:7778", "game.example:7779"}, Key: testKey}},
		Types: []GameType{{Name: "solo", MinPlayers: 1}}})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	s, err := c.Create(ctx, "solo", CreateRequest{Name: "g", Player: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := s.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:7777", "127.0.0.1:7778", "game.example:7779"}
	if !reflect.DeepEqual(a.Addrs, want) || a.Host != "127.0.0.1" || a.Port != 7777 {
		t.Errorf("addrs %v host %s port %d, want %v", a.Addrs, a.Host, a.Port, want)
	}
	checkAssignments(t, testKey, "game.example:7779", a)
}

// TestRoundRobin: games of a type alternate between its servers, and a
// type only goes to servers that run it.
func TestRoundRobin(t *testing.T) {
	k2 := tickwire.Key{9}
	_, srv := newTestLobby(t, Config{
		Types: []GameType{{Name: "a", MinPlayers: 1}, {Name: "b", MinPlayers: 1}},
		Servers: []GameServer{
			{Addrs: []string{"127.0.0.1:1001"}, Key: testKey, Types: []string{"a"}},
			{Addrs: []string{"127.0.0.1:1002"}, Key: k2},
		},
	})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	start := func(typ string) *Assignment {
		s, err := c.Create(ctx, typ, CreateRequest{Name: "g", Player: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		a, err := s.Assignment(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var got []string
	for range 4 {
		got = append(got, start("a").Addrs[0])
	}
	if want := []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1001", "127.0.0.1:1002"}; !reflect.DeepEqual(got, want) {
		t.Errorf("type a went to %v, want %v", got, want)
	}
	for range 2 {
		a := start("b")
		checkAssignments(t, k2, "127.0.0.1:1002", a)
	}
}

// TestPeerHosted is seed 002 with Bob as host: Bob's process listens on a
// UDP port, the lobby makes a key for the game, gives it to Bob, and
// Alice's token points at Bob's address.
func TestPeerHosted(t *testing.T) {
	var assigned []GameAssigned
	_, srv := newTestLobby(t, Config{OnAssigned: func(g GameAssigned) { assigned = append(assigned, g) }})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "Bob hosts", Player: "Bob", Hosting: PeerHosted})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// Everyone ready, nobody can host: the room waits.
	if err := bob.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := bob.Poll(ctx, 0)
	if err != nil || st.Status != "waiting" || st.Room.Players[0].CanHost {
		t.Fatalf("without a host: %+v, %v", st, err)
	}
	// Bob offers port 40000 (readying again with it).
	if err := bob.SetReady(ctx, ReadyRequest{Ready: true, HostPort: 40000}); err != nil {
		t.Fatal(err)
	}
	ba, err := bob.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	aa, err := alice.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ba.Role != RoleHost || aa.Role != RolePlayer || aa.HostKey != "" || ba.Hosting != PeerHosted {
		t.Fatalf("roles: Bob %s key %q, Alice %s key %q", ba.Role, ba.HostKey, aa.Role, aa.HostKey)
	}
	key, err := tickwire.ParseKey(ba.HostKey)
	if err != nil {
		t.Fatal(err)
	}
	if key == testKey {
		t.Fatal("peer-hosted game reuses the server's key")
	}
	checkAssignments(t, key, "127.0.0.1:40000", ba, aa)
	if !ba.Players[0].Host || aa.Players[1].Host {
		t.Errorf("players %+v", aa.Players)
	}
	if len(assigned) != 1 || assigned[0].GameID != ba.GameID || assigned[0].Hosting != PeerHosted ||
		assigned[0].Addrs[0] != "127.0.0.1:40000" || len(assigned[0].Players) != 2 || assigned[0].Players[1].ClientID != aa.ClientID {
		t.Errorf("OnAssigned got %+v", assigned)
	}
}

// TestPeerHostedCandidates: every player of a peer-hosted game who
// offered a UDP port is named with its host address in every player's
// assignment (the candidates of host migration); the others are not.
func TestPeerHostedCandidates(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	ctx := testCtx(t)
	bob, alice, carol := threeSeats(t, srv.URL)
	for _, s := range []*Seat{bob, alice, carol} {
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := carol.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:40000", "127.0.0.1:40001", ""}
	for i, p := range ca.Players {
		if p.HostAddr != want[i] {
			t.Fatalf("player %s: host address %q, want %q", p.Name, p.HostAddr, want[i])
		}
	}
	if !ca.Players[0].Host || ca.Players[1].Host {
		t.Fatalf("players %+v", ca.Players)
	}
}

// threeSeats seats Bob (who creates a peer-hosted room for three and
// offers UDP port 40000), Alice (port 40001) and Carol (no port) in the
// lobby at base.
func threeSeats(t *testing.T, base string) (bob, alice, carol *Seat) {
	t.Helper()
	ctx := testCtx(t)
	c := &Client{BaseURL: base}
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "three", Player: "Bob", MaxPlayers: 3, Hosting: PeerHosted, HostPort: 40000})
	if err != nil {
		t.Fatal(err)
	}
	if alice, err = c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice", HostPort: 40001}); err != nil {
		t.Fatal(err)
	}
	if carol, err = c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Carol"}); err != nil {
		t.Fatal(err)
	}
	return bob, alice, carol
}

// apiCall posts body to path and returns the status and error code.
func apiCall(t *testing.T, srv string, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e Error
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	if res.StatusCode >= 300 {
		if err := jsonUnmarshal(buf.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("%s %s: HTTP %d with body %q: not an Error", method, path, res.StatusCode, buf.String())
		}
	}
	return res.StatusCode, e.Code
}

// TestAPIBadInput: each kind of bad request gets its error code and
// status and leaves every room as it was.
func TestAPIBadInput(t *testing.T) {
	_, srv := newTestLobby(t, Config{MaxRoomsPerType: 2, MaxMessageBytes: 512,
		Types: []GameType{{Name: "demo", MaxPlayers: 3}, {Name: "other"}}})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "Full", Player: "Bob", MaxPlayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice"}); err != nil {
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
	snapshot := func() map[string][]RoomInfo {
		m := map[string][]RoomInfo{}
		for _, typ := range []string{"demo", "other"} {
			rs, err := c.Rooms(ctx, typ)
			if err != nil {
				t.Fatal(err)
			}
			m[typ] = rs
		}
		return m
	}
	before := snapshot()

	full, openID := bob.Room.ID, open.Room.ID
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown type", "POST", "/api/games/nope", `{"name":"x","player":"Eve"}`, 404, CodeUnknownType},
		{"unknown type list", "GET", "/api/games/nope", ``, 404, CodeUnknownType},
		{"unknown room", "POST", "/api/rooms/zzzz/join", `{"player":"Eve"}`, 404, CodeUnknownRoom},
		{"full game", "POST", "/api/rooms/" + full + "/join", `{"player":"Eve"}`, 409, CodeRoomFull},
		{"duplicate name", "POST", "/api/rooms/" + openID + "/join", `{"player":"carol"}`, 409, CodeNameTaken},
		{"empty name", "POST", "/api/rooms/" + openID + "/join", `{"player":"  "}`, 400, CodeBadName},
		{"long name", "POST", "/api/rooms/" + openID + "/join", `{"player":"` + strings.Repeat("x", 25) + `"}`, 400, CodeBadName},
		{"control char name", "POST", "/api/rooms/" + openID + "/join", `{"player":"a\u0007b"}`, 400, CodeBadName},
		{"oversized body", "POST", "/api/rooms/" + openID + "/join", `{"player":"Eve","pad":"` + strings.Repeat("x", 600) + `"}`, 413, CodeMessageTooLarge},
		{"malformed JSON", "POST", "/api/rooms/" + openID + "/join", `{"player":`, 400, CodeBadJSON},
		{"two objects", "POST", "/api/rooms/" + openID + "/join", `{"player":"Eve"}{}`, 400, CodeBadJSON},
		{"wrong field type", "POST", "/api/games/demo", `{"name":"x","player":"Eve","maxPlayers":"many"}`, 400, CodeBadJSON},
		{"too many rooms", "POST", "/api/games/demo", `{"name":"third","player":"Eve"}`, 409, CodeTooManyRooms},
		{"max players out of range", "POST", "/api/games/other", `{"name":"x","player":"Eve","maxPlayers":99}`, 400, CodeBadRequest},
		{"bad hosting", "POST", "/api/games/other", `{"name":"x","player":"Eve","hosting":"moon"}`, 400, CodeBadRequest},
		{"ready in a game not joined", "POST", "/api/rooms/" + openID + "/ready", `{"seat":"` + bob.ID + `","ready":true}`, 409, CodeNotJoined},
		{"ready in another type's game", "POST", "/api/rooms/" + other.Room.ID + "/ready", `{"seat":"` + open.ID + `","ready":true}`, 409, CodeNotJoined},
		{"chat in a game not joined", "POST", "/api/rooms/" + full + "/chat", `{"seat":"` + open.ID + `","text":"hi"}`, 409, CodeNotJoined},
		{"leave a game not joined", "POST", "/api/rooms/" + full + "/leave", `{"seat":"` + open.ID + `"}`, 409, CodeNotJoined},
		{"unknown seat", "POST", "/api/rooms/" + openID + "/ready", `{"seat":"forged","ready":true}`, 410, CodeUnknownSeat},
		{"poll a game not joined", "GET", "/api/rooms/" + full + "/assignment?seat=" + open.ID + "&wait=0s", ``, 409, CodeNotJoined},
		{"bad wait", "GET", "/api/rooms/" + openID + "/assignment?seat=" + open.ID + "&wait=soon", ``, 400, CodeBadRequest},
		{"empty chat", "POST", "/api/rooms/" + openID + "/chat", `{"seat":"` + open.ID + `","text":" "}`, 400, CodeBadRequest},
		{"no such endpoint", "GET", "/api/nothing", ``, 400, CodeBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, code := apiCall(t, srv.URL, tc.method, tc.path, tc.body)
			if status != tc.status || code != tc.code {
				t.Errorf("got HTTP %d %q, want %d %q", status, code, tc.status, tc.code)
			}
			if after := snapshot(); !reflect.DeepEqual(after, before) {
				t.Errorf("rooms changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	// A browser on another site may not drive the API.
	req, _ := http.NewRequest("POST", srv.URL+"/api/rooms/"+openID+"/join", strings.NewReader(`{"player":"Mallory"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e Error
	json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || e.Code != CodeCrossOrigin {
		t.Errorf("cross-site POST: HTTP %d %+v, want 403 %q", res.StatusCode, e, CodeCrossOrigin)
	}
	if after := snapshot(); !reflect.DeepEqual(after, before) {
		t.Errorf("rooms changed by a cross-site POST")
	}
}

// TestLeaveAndLastLeaverClosesRoom: leaving frees the name and the place;
// the last player out closes the room; leaving completes a room whose
// other players are all ready.
func TestLeave(t *testing.T) {
	_, srv := newTestLobby(t, Config{Types: []GameType{{Name: "demo", MinPlayers: 1}}})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "g", Player: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := alice.Ready(ctx); !errors.Is(err, &Error{Code: CodeUnknownSeat}) {
		t.Errorf("ready after leave: %v", err)
	}
	alice, err = c.Join(ctx, bob.Room.ID, JoinRequest{Player: "Alice"})
	if err != nil {
		t.Fatalf("rejoin with the same name: %v", err)
	}
	if err := bob.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// Alice, the only one not ready, leaves: Bob's room starts.
	if err := alice.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := bob.Assignment(ctx)
	if err != nil || len(a.Players) != 1 {
		t.Fatalf("assignment after the last unready player left: %+v, %v", a, err)
	}
	// The last player out closes the room.
	s, err := c.Create(ctx, "demo", CreateRequest{Name: "h", Player: "Carol"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if rooms, _ := c.Rooms(ctx, "demo"); len(rooms) != 0 {
		t.Errorf("empty room still listed: %+v", rooms)
	}
}
