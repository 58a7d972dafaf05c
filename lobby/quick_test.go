package lobby

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// quickPlay runs "Play now" for player on a new socket and returns its
// assignment (the socket closes normally after it).
func quickPlay(t *testing.T, w *wsClient, player string) *Assignment {
	t.Helper()
	w.send(map[string]any{"op": "quick", "player": player})
	a := w.expect("assigned").Assignment
	if code := w.expectClose(); code != websocket.StatusNormalClosure {
		t.Errorf("%s: socket closed with %v, want 1000", player, code)
	}
	return a
}

// TestQuickPlay: "Play now" puts the second and third players in the
// first one's game, in the next slots, with tokens for that game; once
// it is full, the next player gets a new game. A room created from the
// form is not joined.
func TestQuickPlay(t *testing.T) {
	_, srv := newTestLobby(t, Config{Types: []GameType{{Name: "demo", MinPlayers: 1, MaxPlayers: 3}}})
	waiting := dialWS(t, srv, "demo")
	waiting.send(map[string]any{"op": "create", "name": "Wait for me", "player": "Wendy", "maxPlayers": 3})
	waiting.expect("joined")

	var as []*Assignment
	for _, p := range []string{"Carol", "Dan", "Erin", "Fay"} {
		as = append(as, quickPlay(t, dialWS(t, srv, "demo"), p))
	}
	checkAssignments(t, testKey, testServerAddr, as[:3]...)
	for i, a := range as[:3] {
		if a.GameID != as[0].GameID || a.Slot != uint16(i+1) || a.Type != "demo" || a.Role != RolePlayer {
			t.Errorf("player %d: game %d slot %d type %q role %q; want game %d slot %d", i, a.GameID, a.Slot, a.Type, a.Role, as[0].GameID, i+1)
		}
	}
	if as[3].GameID == as[0].GameID || as[3].Slot != 1 {
		t.Errorf("the fourth player got game %d slot %d, in a full game %d", as[3].GameID, as[3].Slot, as[0].GameID)
	}
	// The game's page learns its players' names.
	var got struct{ Players []playerName }
	if err := jsonUnmarshal([]byte(httpGet(t, fmt.Sprintf("%s/api/play/%d/players", srv.URL, as[0].GameID))), &got); err != nil {
		t.Fatal(err)
	}
	if want := []playerName{{1, "Carol"}, {2, "Dan"}, {3, "Erin"}}; !slices.Equal(got.Players, want) {
		t.Errorf("names %+v, want %+v", got.Players, want)
	}
	waiting.send(map[string]any{"op": "chat", "text": "still here"})
	if m := waiting.expect("chat"); m.Text != "still here" {
		t.Errorf("the form's room: %+v", m)
	}
}

// TestQuickPlayStats: with the game server's stats, a game's players are
// those connected plus the tokens still on their way: a game whose
// slots are all connected is full, and one whose players left has room
// again.
func TestQuickPlayStats(t *testing.T) {
	var mu sync.Mutex
	var games []GameStats
	stats := StatsFunc(func() ServerStats {
		mu.Lock()
		defer mu.Unlock()
		return ServerStats{Games: games}
	})
	_, srv := newTestLobby(t, Config{Types: []GameType{{Name: "demo", MinPlayers: 1, MaxPlayers: 2}}, Stats: stats})
	first := quickPlay(t, dialWS(t, srv, "demo"), "Carol")
	second := quickPlay(t, dialWS(t, srv, "demo"), "Dan")
	if second.GameID != first.GameID || second.Slot != 2 {
		t.Fatalf("Dan: game %d slot %d, want %d slot 2", second.GameID, second.Slot, first.GameID)
	}
	// Both connected: full.
	mu.Lock()
	games = []GameStats{{ID: first.GameID, Connections: []ConnStats{{Players: []uint16{1}}, {Players: []uint16{2}}}}}
	mu.Unlock()
	if a := quickPlay(t, dialWS(t, srv, "demo"), "Erin"); a.GameID == first.GameID {
		t.Errorf("Erin joined a full game %d", a.GameID)
	}
}
