package lobby

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/browsertest"
)

// newBrowser starts a headless chromium the size of a phone.
func newBrowser(t *testing.T) context.Context { return browsertest.NewBrowser(t, 430, 932) }

// shownAssignment is what the page shows once the game is assigned.
type shownAssignment struct {
	GameID string `json:"gameId"`
	Host   string `json:"host"`
	Port   string `json:"port"`
	Slot   string `json:"slot"`
	Role   string `json:"role"`
	Token  string `json:"token"`
}

func assignment(p *browsertest.Tab) shownAssignment {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	a, err := chromedp.Run(ctx, chromedp.Evaluate[shownAssignment](`({
		gameId: document.getElementById('game-id').textContent,
		host: document.getElementById('host').textContent,
		port: document.getElementById('port').textContent,
		slot: document.getElementById('slot').textContent,
		role: document.getElementById('role').textContent,
		token: document.getElementById('token').value,
	})`))
	if err != nil {
		p.T.Fatalf("%s: read the assignment: %v", p.Name, err)
	}
	return a
}

// TestBrowserFlow is seed 002 in a real browser: Bob and Alice, each in
// their own browser context, open the menu; Bob creates a game, Alice
// joins it, both ready, and both pages show the same game id, host and
// port, with tokens for distinct slots. Each step is a screenshot.
func TestBrowserFlow(t *testing.T) {
	browser := newBrowser(t)
	_, srv := newTestLobby(t, Config{Servers: []GameServer{{Addrs: []string{":7777"}, Key: testKey}}})
	dir := browsertest.ArtifactDir(t, "lobby-browser")
	shot := 0
	bob := browsertest.NewTab(t, browser, "bob", dir, &shot)
	alice := browsertest.NewTab(t, browser, "alice", dir, &shot)
	live := chromedp.WaitVisible(`#conn[data-state="live"]`)

	bob.Do("open the menu", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`li[data-type="demo"]`))
	bob.Screenshot("menu")
	bob.Do("open the demo lobby", chromedp.Click(`li[data-type="demo"] a.button`), chromedp.WaitVisible(`#create-form`), live)
	bob.Do("create a game",
		chromedp.SetValue(`#player`, "Bob"),
		chromedp.SetValue(`#game-name`, "Bob's game"),
		chromedp.SetValue(`#max-players`, "2"),
		chromedp.Click(`#create`),
		chromedp.WaitVisible(`#room #players li[data-player="Bob"]`))
	bob.Screenshot("created")

	alice.Do("open the menu", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`li[data-type="demo"]`))
	alice.Screenshot("menu")
	alice.Do("open the demo lobby", chromedp.Click(`li[data-type="demo"] a.button`), live,
		chromedp.WaitVisible(`#rooms li[data-name="Bob's game"] button.join`),
		chromedp.SetValue(`#player`, "Alice"))
	alice.Screenshot("lobby")
	alice.Do("join Bob's game",
		chromedp.Click(`#rooms li[data-name="Bob's game"] button.join`),
		chromedp.WaitVisible(`#players li[data-player="Alice"]`),
		chromedp.WaitVisible(`#players li[data-player="Bob"]`))
	alice.Screenshot("joined")
	bob.Do("see Alice join", chromedp.WaitVisible(`#players li[data-player="Alice"]`))

	alice.Do("ready", chromedp.Click(`#ready`), chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`))
	bob.Do("see Alice ready", chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`))
	bob.Screenshot("sees-alice-ready")

	bob.Do("ready", chromedp.Click(`#ready`))
	closed := chromedp.Poll[chromedp.Void](`document.body.dataset.closeCode === "1000"`, chromedp.WithPollingTimeout(10*time.Second))
	bob.Do("receive the game", chromedp.WaitVisible(`#assigned`), closed)
	alice.Do("receive the game", chromedp.WaitVisible(`#assigned`), closed)
	bob.Screenshot("assigned")
	alice.Screenshot("assigned")

	b, a := assignment(bob), assignment(alice)
	t.Logf("bob: game %s at %s:%s slot %s; alice: game %s at %s:%s slot %s", b.GameID, b.Host, b.Port, b.Slot, a.GameID, a.Host, a.Port, a.Slot)
	if b.GameID == "" || b.GameID != a.GameID || b.Host != a.Host || b.Port != a.Port {
		t.Fatalf("different games: bob %+v, alice %+v", b, a)
	}
	if b.Host != "127.0.0.1" || b.Port != "7777" || b.Slot != "1" || a.Slot != "2" || b.Role != RolePlayer {
		t.Errorf("bob %+v alice %+v", b, a)
	}
	gameID, err := strconv.ParseUint(b.GameID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []shownAssignment{b, a} {
		tok, err := tickwire.ParseConnectToken(s.Token)
		if err != nil {
			t.Fatalf("page %d shows a bad token: %v", i, err)
		}
		priv := openToken(t, testKey, tok)
		if tok.GameID != gameID || tok.ServerAddrs[0] != "127.0.0.1:7777" || strconv.Itoa(int(priv.Players[0])) != s.Slot {
			t.Errorf("page %d: token for game %d at %v slot %d, page shows %s at %s:%s slot %s",
				i, tok.GameID, tok.ServerAddrs, priv.Players[0], s.GameID, s.Host, s.Port, s.Slot)
		}
	}
}
