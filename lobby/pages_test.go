package lobby

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestPages: the menu lists the types, a type's page lists its open rooms
// (rendered on the server, names escaped), an unknown type is a 404 page
// that says so, the static files are served, and the dashboard is on the
// operator pages.
func TestPages(t *testing.T) {
	l, srv := newTestLobby(t, Config{Types: []GameType{
		{Name: "demo", Title: "Demo Arena", Description: "Shoot things."},
		{Name: "race", Title: "Racing"},
	}})
	ctx := testCtx(t)
	if _, err := (&Client{BaseURL: srv.URL}).Create(ctx, "demo", CreateRequest{Name: "<b>Bob</b>'s game", Player: "Bob"}); err != nil {
		t.Fatal(err)
	}
	get := func(path string, want int) string {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("GET %s: HTTP %d, want %d", path, res.StatusCode, want)
		}
		return string(b)
	}
	contains := func(page, what string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q", what, w)
			}
		}
	}
	contains(get("/", 200), "menu", `href="/games/demo"`, "Demo Arena", "Shoot things.", `href="/games/race"`, "1 open game", "1 waiting")
	demo := get("/games/demo", 200)
	contains(demo, "demo page", `id="create-form"`, `&lt;b&gt;Bob&lt;/b&gt;&#39;s game`, `data-type="demo"`, `/static/lobby.js`)
	if strings.Contains(demo, "<b>Bob</b>") {
		t.Error("room name not escaped")
	}
	contains(get("/games/nope", 404), "unknown type page", `data-code="unknown_type"`, "There is no game type")
	contains(get("/static/lobby.js", 200), "lobby.js", "new WebSocket")
	contains(get("/static/style.css", 200), "style.css", "max-width")
	get("/nothing", 404)
	if d := httpGet(t, newAdminServer(t, l).URL+"/"); !strings.Contains(d, `/static/dashboard.js`) {
		t.Error("the operator pages' / does not lead to the dashboard")
	}
}

// TestSocketOrigin: a page on another site may not open a lobby socket.
func TestSocketOrigin(t *testing.T) {
	_, srv := newTestLobby(t, Config{})
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/games/demo/ws"
	_, res, err := websocket.Dial(testCtx(t), u, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: %v, %v", res, err)
	}
}

// TestServerTimeouts: long-polls and sockets outlive an http.Server's
// ReadTimeout and WriteTimeout (net/http clears the deadlines of a
// hijacked connection; the long-poll extends its own).
func TestServerTimeouts(t *testing.T) {
	l, err := New(Config{Servers: []GameServer{{Addrs: []string{testServerAddr}, Key: testKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := httptest.NewUnstartedServer(l)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx := testCtx(t)
	bob := dialWS(t, srv, "demo")
	bob.send(map[string]any{"op": "create", "name": "g", "player": "Bob"})
	room := bob.expect("joined").room(t)
	alice, err := (&Client{BaseURL: srv.URL}).Join(ctx, room.ID, JoinRequest{Player: "Alice"})
	if err != nil {
		t.Fatal(err)
	}
	// A poll that waits past the timeouts still answers.
	start := time.Now()
	st, err := alice.Poll(ctx, 400*time.Millisecond)
	if err != nil || st.Status != "waiting" || time.Since(start) < 400*time.Millisecond {
		t.Fatalf("poll: %+v, %v after %v", st, err, time.Since(start))
	}
	// The socket, idle past both timeouts, still carries messages.
	bob.send(map[string]any{"op": "chat", "text": "still here"})
	if m := bob.expect("chat"); m.Text != "still here" {
		t.Fatalf("chat %+v", m)
	}
}

// TestPlayPages: with a play page, the menu offers "Play now" and the
// demo, and the type page tells its script where to play; without, none
// of that shows.
func TestPlayPages(t *testing.T) {
	_, srv := newTestLobby(t, Config{PlayURL: "/play", DemoURL: "/play?demo=1"})
	menu := httpGet(t, srv.URL+"/")
	for _, want := range []string{`href="/games/demo?quick=1"`, `id="watch" href="/play?demo=1"`} {
		if !strings.Contains(menu, want) {
			t.Errorf("menu lacks %q", want)
		}
	}
	if page := httpGet(t, srv.URL+"/games/demo"); !strings.Contains(page, `data-play="/play"`) {
		t.Error("the type page does not name the play page")
	}
	_, plain := newTestLobby(t, Config{})
	if menu := httpGet(t, plain.URL+"/"); strings.Contains(menu, "quick=1") || strings.Contains(menu, `id="watch"`) {
		t.Error("a lobby without a play page offers play")
	}
}
