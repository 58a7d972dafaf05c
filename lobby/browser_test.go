package lobby

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tickwire/tickwire"
)

// lookChromium finds Debian's chromium; without it the browser tests skip,
// or fail when TICKWIRE_REQUIRE_TOOLS is set (as test.sh sets it).
func lookChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TICKWIRE_REQUIRE_TOOLS") != "" {
		t.Fatal("chromium not found and TICKWIRE_REQUIRE_TOOLS is set (apt-get install chromium)")
	}
	t.Skip("chromium not installed; ./test.sh installs it")
	return ""
}

// artifactDir is where screenshots go: $TICKWIRE_ARTIFACTS/name, or a new
// temporary directory that outlives the test so the files can be looked at.
func artifactDir(t *testing.T, name string) string {
	t.Helper()
	var dir string
	var err error
	if base := os.Getenv("TICKWIRE_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, name)
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "tickwire-"+name+"-")
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// newBrowser starts a headless chromium with a fresh profile and returns
// a context on it that has already run (so children open tabs in it).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := lookChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(430, 932), // a phone
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// browserPlayer is one browser context (its own cookies and storage) with
// one tab.
type browserPlayer struct {
	t    *testing.T
	name string
	ctx  context.Context // has run once; actions use deadline-bound children
	dir  string
	shot *int
}

func newBrowserPlayer(t *testing.T, browser context.Context, name, dir string, shot *int) *browserPlayer {
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab for %s: %v", name, err)
	}
	return &browserPlayer{t: t, name: name, ctx: ctx, dir: dir, shot: shot}
}

// do runs steps with a deadline, failing the test with what was being done.
func (p *browserPlayer) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	start := time.Now()
	defer func() { p.t.Logf("%s: %s took %v", p.name, what, time.Since(start)) }()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.screenshot("failed-" + what)
		p.t.Fatalf("%s: %s: %v", p.name, what, err)
	}
}

// screenshot saves the whole page as NN-name-what.png.
func (p *browserPlayer) screenshot(what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Errorf("%s: screenshot %s: %v", p.name, what, err)
		return
	}
	p.save(what, png)
}

// viewportScreenshot saves what the window shows as NN-name-what.png.
func (p *browserPlayer) viewportScreenshot(what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Errorf("%s: screenshot %s: %v", p.name, what, err)
		return
	}
	p.save(what, png)
}

func (p *browserPlayer) save(what string, png []byte) {
	p.t.Helper()
	*p.shot++
	path := filepath.Join(p.dir, fmt.Sprintf("%02d-%s-%s.png", *p.shot, p.name, what))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Error(err)
		return
	}
	p.t.Logf("screenshot: %s", path)
}

// shownAssignment is what the page shows once the game is assigned.
type shownAssignment struct {
	GameID string `json:"gameId"`
	Host   string `json:"host"`
	Port   string `json:"port"`
	Slot   string `json:"slot"`
	Role   string `json:"role"`
	Token  string `json:"token"`
}

func (p *browserPlayer) assignment() shownAssignment {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
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
		p.t.Fatalf("%s: read the assignment: %v", p.name, err)
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
	dir := artifactDir(t, "lobby-browser")
	shot := 0
	bob := newBrowserPlayer(t, browser, "bob", dir, &shot)
	alice := newBrowserPlayer(t, browser, "alice", dir, &shot)
	live := chromedp.WaitVisible(`#conn[data-state="live"]`)

	bob.do("open the menu", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`li[data-type="demo"]`))
	bob.screenshot("menu")
	bob.do("open the demo lobby", chromedp.Click(`li[data-type="demo"] a.button`), chromedp.WaitVisible(`#create-form`), live)
	bob.do("create a game",
		chromedp.SetValue(`#player`, "Bob"),
		chromedp.SetValue(`#game-name`, "Bob's game"),
		chromedp.SetValue(`#max-players`, "2"),
		chromedp.Click(`#create`),
		chromedp.WaitVisible(`#room #players li[data-player="Bob"]`))
	bob.screenshot("created")

	alice.do("open the menu", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`li[data-type="demo"]`))
	alice.screenshot("menu")
	alice.do("open the demo lobby", chromedp.Click(`li[data-type="demo"] a.button`), live,
		chromedp.WaitVisible(`#rooms li[data-name="Bob's game"] button.join`),
		chromedp.SetValue(`#player`, "Alice"))
	alice.screenshot("lobby")
	alice.do("join Bob's game",
		chromedp.Click(`#rooms li[data-name="Bob's game"] button.join`),
		chromedp.WaitVisible(`#players li[data-player="Alice"]`),
		chromedp.WaitVisible(`#players li[data-player="Bob"]`))
	alice.screenshot("joined")
	bob.do("see Alice join", chromedp.WaitVisible(`#players li[data-player="Alice"]`))

	alice.do("ready", chromedp.Click(`#ready`), chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`))
	bob.do("see Alice ready", chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`))
	bob.screenshot("sees-alice-ready")

	bob.do("ready", chromedp.Click(`#ready`))
	closed := chromedp.Poll[chromedp.Void](`document.body.dataset.closeCode === "1000"`, chromedp.WithPollingTimeout(10*time.Second))
	bob.do("receive the game", chromedp.WaitVisible(`#assigned`), closed)
	alice.do("receive the game", chromedp.WaitVisible(`#assigned`), closed)
	bob.screenshot("assigned")
	alice.screenshot("assigned")

	b, a := bob.assignment(), alice.assignment()
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
