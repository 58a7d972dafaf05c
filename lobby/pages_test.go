package lobby

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestPages: the menu lists the types, a type's page lists its open rooms
// (rendered on the server, names escaped), an unknown type is a 404 page
// that says so, and the static files are served.
func TestPages(t *testing.T) {
	_, srv := newTestLobby(t, Config{Types: []GameType{
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
	contains(get("/dashboard", 200), "dashboard", `/static/dashboard.js`)
	contains(get("/static/lobby.js", 200), "lobby.js", "new WebSocket")
	contains(get("/static/style.css", 200), "style.css", "max-width")
	get("/nothing", 404)
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
