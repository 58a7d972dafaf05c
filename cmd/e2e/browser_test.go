package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/debugger"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/tickwire/tickwire/internal/browsertest"
	"github.com/tickwire/tickwire/webpage"
)

// browserServer are the flags of the servers of the browser tests: the
// WebTransport socket on loopback, a small arena.
func browserServer(dir string, more ...string) []string {
	return append([]string{"-web-client", dir, "-webtransport", "127.0.0.1:0", "-npcs", "20"}, more...)
}

// The browser client, built once for the browser tests.
var (
	webClientOnce sync.Once
	webClientDir  string
	webClientErr  error
)

// webClient builds the browser client (GOOS=js GOARCH=wasm) for the
// servers the tests start (-web-client).
func webClient(t *testing.T) string {
	t.Helper()
	webClientOnce.Do(func() {
		webClientDir, webClientErr = os.MkdirTemp("", "tickwire-web-client")
		if webClientErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			_, webClientErr = webpage.Build(ctx, "go", webClientDir)
		}
	})
	if webClientErr != nil {
		t.Fatal(webClientErr)
	}
	return webClientDir
}

// holdKey presses a key and keeps it down (a player holding "D").
func holdKey(code, key string, vk int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyDown, Code: code, Key: key, WindowsVirtualKeyCode: vk})
		return err
	})
}

// seesOther is true once the page sees the other player, whose place
// it keeps as where seesOtherMove measures from.
const seesOther = `(() => {
	const f = window.tickwirePage && window.tickwirePage.frame;
	if (!f) return false;
	const o = f.bodies.find((b) => b.kind === 'player' && b.player !== f.self);
	if (!o) return false;
	window.__first = { x: o.x, y: o.y };
	return true;
})()`

// seesOtherMove is true once the page sees the other player more than
// 2 m from where seesOther first saw it.
const seesOtherMove = `(() => {
	const f = window.tickwirePage.frame;
	const o = f.bodies.find((b) => b.kind === 'player' && b.player !== f.self);
	return !!o && Math.hypot(o.x - window.__first.x, o.y - window.__first.y) > 2;
})()`

// holdTowardMiddle holds the key that walks p's avatar toward the
// arena's middle (128 m) along x (horizontal) or y. A spawn point can be
// 1.5 m short of a wall, where walking into the wall would stop the
// avatar before the 2 m that seesOtherMove waits for; toward the middle
// it has at least 126 m, 21 s at 6 m/s.
func holdTowardMiddle(t *testing.T, p *browsertest.Tab, horizontal bool) {
	t.Helper()
	const own = `window.tickwirePage.frame && window.tickwirePage.frame.bodies.find((b) => b.own)`
	p.Do("see its avatar", chromedp.Poll[chromedp.Void](own+` !== undefined`, chromedp.WithPollingTimeout(10*time.Second)))
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ X, Y float64 }](own))
	if err != nil {
		t.Fatalf("%s: read its avatar's place: %v", p.Name, err)
	}
	code, key, vk := "KeyD", "d", int64(68) // +x
	switch {
	case horizontal && pos.X >= 128:
		code, key, vk = "KeyA", "a", 65
	case !horizontal && pos.Y < 128:
		code, key, vk = "KeyS", "s", 83 // +y
	case !horizontal:
		code, key, vk = "KeyW", "w", 87
	}
	p.Do(fmt.Sprintf("hold %s at (%.1f, %.1f)", code, pos.X, pos.Y), holdKey(code, key, vk))
}

// overlay is what the test reads of a page's network overlay.
type overlay struct {
	Shown     bool    `json:"shown"`
	Text      string  `json:"text"`
	Transport string  `json:"transport"`
	Loss      float64 `json:"loss"`
	Desyncs   int     `json:"desyncs"`
	RTT       float64 `json:"rtt"`
	Bodies    int     `json:"bodies"`
	Players   int     `json:"players"`
	Lead      float64 `json:"lead"`
	Visible   string  `json:"visible"`
}

const readOverlay = `(() => {
	const p = window.tickwirePage, f = p.frame, o = document.getElementById('overlay');
	return { shown: !o.hidden, text: o.textContent, transport: p.transport,
		loss: f ? f.net.loss : 0, desyncs: f ? f.net.desyncs : -1, rtt: f ? f.net.rttMs : 0,
		bodies: f ? f.bodies.length : 0, players: f ? f.bodies.filter((b) => b.kind === 'player').length : 0,
		lead: f ? f.net.leadTicks : 0, visible: document.visibilityState };
})()`

func (o overlay) String() string {
	return fmt.Sprintf("%s rtt %.1f ms loss %.1f%% desyncs %d bodies %d players %d lead %.1f ticks (page %s)", o.Transport, o.RTT, o.Loss*100, o.Desyncs, o.Bodies, o.Players, o.Lead, o.Visible)
}

func readPage(t *testing.T, p *browsertest.Tab) overlay {
	t.Helper()
	o, err := tryReadPage(p)
	if err != nil {
		t.Fatalf("%s: read the overlay: %v", p.Name, err)
	}
	return o
}

func tryReadPage(p *browsertest.Tab) (overlay, error) {
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[overlay](readOverlay))
}

// logPagesOnFailure logs what the pages' overlays show if the test
// fails: a page starved of CPU shows it in its lead, RTT and frames.
func logPagesOnFailure(t *testing.T, pages ...*browsertest.Tab) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range pages {
			if o, err := tryReadPage(p); err != nil {
				t.Logf("%s: read the overlay: %v", p.Name, err)
			} else {
				t.Logf("%s: %v\n%s", p.Name, o, o.Text)
			}
		}
	})
}

// TestBrowserPlay: two headless chromium tabs, each its own browser
// context, open the arena's lobby page, one creates a game and the other
// joins, both ready; the lobby opens the game in each tab; each player
// holds a direction key toward the middle and each page sees the other
// player move. The overlay is toggled and screenshots of both tabs are
// kept. The server's metrics count two connections on the transport.
// Over WebTransport (QUIC datagrams), over the forced WebSocket
// fallback, and over WebTransport through tickwire-netem at "delay 50ms
// 10ms loss 5%", where the overlay must show the loss and nothing
// desyncs.
func TestBrowserPlay(t *testing.T) {
	dir := webClient(t)
	for _, tc := range []struct {
		name, transport, netem string
	}{
		{"webtransport", "webtransport", ""},
		{"websocket", "websocket", ""},
		{"webtransport-netem", "webtransport", "delay 50ms 10ms loss 5%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, a := server(t, browserServer(dir)...)
			wt := srv.await(t, `msg="serving browsers" webtransport=(\S+)`)
			query := "?transport=" + tc.transport + "&overlay=0"
			if tc.netem != "" {
				proxy := start(t, "tickwire-netem", "-listen", "127.0.0.1:0", "-upstream", wt, "-spec", tc.netem, "-seed", "7", "-stats-interval", "0")
				query += "&wt=" + proxy.await(t, `listening on (\S+),`)
			}
			browser := browsertest.NewBrowser(t, 1100, 760)
			shots := browsertest.ArtifactDir(t, "browser-play-"+tc.name)
			n := 0
			alice := browsertest.NewTab(t, browser, "alice", shots, &n)
			bob := browsertest.NewTab(t, browser, "bob", shots, &n)
			logPagesOnFailure(t, alice, bob)
			lobby := "http://" + a.http + "/games/arena" + query
			live := chromedp.WaitVisible(`#conn[data-state="live"]`)

			alice.Do("create a game", chromedp.Navigate(lobby), live,
				chromedp.SetValue(`#player`, "Alice"),
				chromedp.SetValue(`#game-name`, "Duel"),
				chromedp.SetValue(`#max-players`, "2"),
				chromedp.Click(`#create`),
				chromedp.WaitVisible(`#players li[data-player="Alice"]`))
			// The open games' list is redrawn on every lobby update: a
			// click can land on a button the redraw just replaced, so
			// click again (at most once a second) until Bob is in.
			bob.Do("join it", chromedp.Navigate(lobby), live,
				chromedp.SetValue(`#player`, "Bob"),
				chromedp.Poll[chromedp.Void](`(() => {
					if (document.querySelector('#players li[data-player="Alice"]')) return true;
					const b = document.querySelector('#rooms li[data-name="Duel"] button.join');
					if (b && !(window.joinClickedAt > Date.now() - 1000)) { window.joinClickedAt = Date.now(); b.click(); }
					return false;
				})()`, chromedp.WithPollingTimeout(15*time.Second)))
			alice.Do("ready", chromedp.WaitVisible(`#players li[data-player="Bob"]`), chromedp.Click(`#ready`),
				chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`))
			bob.Do("ready", chromedp.WaitVisible(`#players li.ready[data-player="Alice"]`), chromedp.Click(`#ready`))

			playing := chromedp.WaitVisible(`body[data-state="playing"]`)
			alice.DoWithin(60*time.Second, "enter the game", playing)
			bob.DoWithin(60*time.Second, "enter the game", playing)
			seen := chromedp.Poll[chromedp.Void](seesOther, chromedp.WithPollingTimeout(10*time.Second))
			alice.Do("see Bob", seen)
			bob.Do("see Alice", seen)
			holdTowardMiddle(t, alice, true)
			holdTowardMiddle(t, bob, false)
			moved := chromedp.Poll[chromedp.Void](seesOtherMove, chromedp.WithPollingTimeout(40*time.Second))
			alice.DoWithin(45*time.Second, "see Bob move", moved)
			bob.DoWithin(45*time.Second, "see Alice move", moved)

			for _, p := range []*browsertest.Tab{alice, bob} {
				p.Do("fire and show the overlay", holdKey("Space", " ", 32), chromedp.KeyEvent("`"),
					chromedp.WaitVisible(`#overlay`))
			}
			// Each player's shots come back as the server judged them.
			judged := chromedp.Poll[chromedp.Void](`window.tickwirePage.frame.shots.some((s) => s.server)`, chromedp.WithPollingTimeout(20*time.Second))
			alice.DoWithin(25*time.Second, "see the server's view of a shot", judged)
			bob.DoWithin(25*time.Second, "see the server's view of a shot", judged)
			if tc.netem != "" {
				// The overlay shows the loss: 5 % of the client's packets
				// go unacknowledged.
				lossy := chromedp.Poll[chromedp.Void](`window.tickwirePage.frame.net.loss > 0`, chromedp.WithPollingTimeout(40*time.Second))
				alice.DoWithin(45*time.Second, "see the loss", lossy)
				bob.DoWithin(45*time.Second, "see the loss", lossy)
			}
			for _, p := range []*browsertest.Tab{alice, bob} {
				p.ViewportScreenshot("playing")
				o := readPage(t, p)
				t.Logf("%s: %v\n%s", p.Name, o, o.Text)
				if !o.Shown || o.Transport != tc.transport || o.Players != 2 || o.Desyncs != 0 || o.RTT <= 0 {
					t.Errorf("%s: %v (overlay shown %v)", p.Name, o, o.Shown)
				}
				if tc.netem != "" && o.Loss <= 0 {
					t.Errorf("%s: the overlay shows no loss through netem", p.Name)
				}
			}
			if got := metric(t, a.admin, `tickwire_transport_connections{transport="`+tc.transport+`"}`); got != 2 {
				t.Errorf("/metrics: %v %s connections, want 2", got, tc.transport)
			}
		})
	}
}

// TestBrowserPlayNow: "Play now in the browser" on the menu seats the
// player in a game and opens it, with one click; a second player (its
// own browser context) who clicks it on the otherwise empty server lands
// in the first one's game, and each sees the other.
func TestBrowserPlayNow(t *testing.T) {
	dir := webClient(t)
	_, a := server(t, browserServer(dir)...)
	browser := browsertest.NewBrowser(t, 1100, 760)
	n := 0
	shots := browsertest.ArtifactDir(t, "browser-play-now")
	carol := browsertest.NewTab(t, browser, "carol", shots, &n)
	dan := browsertest.NewTab(t, browser, "dan", shots, &n)
	logPagesOnFailure(t, carol, dan)
	for _, p := range []*browsertest.Tab{carol, dan} {
		p.Do("open the menu", chromedp.Navigate("http://"+a.http+"/"), chromedp.WaitVisible(`li[data-type="arena"] a.quick`))
		p.DoWithin(60*time.Second, "play now", chromedp.Click(`li[data-type="arena"] a.quick`),
			chromedp.WaitVisible(`body[data-state="playing"]`))
		p.Do("see the arena", chromedp.Poll[chromedp.Void](`window.tickwirePage.frame && window.tickwirePage.frame.bodies.some((b) => b.own)`,
			chromedp.WithPollingTimeout(10*time.Second)))
	}
	seen := chromedp.Poll[chromedp.Void](seesOther, chromedp.WithPollingTimeout(10*time.Second))
	carol.Do("see Dan", seen)
	dan.Do("see Carol", seen)
	// Each page names both players as the lobby does, not P1 and P2.
	named := chromedp.Poll[chromedp.Void](`(() => {
		const p = window.tickwirePage, n = Object.values(p.names);
		return n.length === 2 && n.every((s) => s.startsWith('player-')) && document.getElementById('status').textContent === 'playing as ' + p.names[p.session.slot];
	})()`, chromedp.WithPollingTimeout(10*time.Second))
	carol.Do("name both players", named)
	dan.Do("name both players", named)
	for _, p := range []*browsertest.Tab{carol, dan} {
		p.ViewportScreenshot("playing")
	}
	if got := metric(t, a.admin, `tickwire_games`); got != 1 {
		t.Errorf("/metrics: %v games, want 1", got)
	}
}

// TestBrowserRejoin: a tab whose page stops running for 4 s (its
// scripts paused from the debugger, as a busy main thread or a throttled
// background tab stops it) is dropped by a server with a 2-s session
// timeout; when it runs again it comes back into its own slot by itself,
// over the same page's transport, with the game as it stands: the page
// says it is coming back, then plays on as the same player.
func TestBrowserRejoin(t *testing.T) {
	dir := webClient(t)
	srv, a := server(t, browserServer(dir, "-session-timeout", "2s")...)
	browser := browsertest.NewBrowser(t, 1100, 760)
	n := 0
	shots := browsertest.ArtifactDir(t, "browser-rejoin")
	erin := browsertest.NewTab(t, browser, "erin", shots, &n)
	logPagesOnFailure(t, erin)
	erin.Do("open the menu", chromedp.Navigate("http://"+a.http+"/"), chromedp.WaitVisible(`li[data-type="arena"] a.quick`))
	erin.DoWithin(60*time.Second, "play now", chromedp.Click(`li[data-type="arena"] a.quick`),
		chromedp.WaitVisible(`body[data-state="playing"]`))
	slot := evalInt(t, erin, `window.tickwirePage.session.slot`)
	erin.Do("pause the page", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, debugger.Enable, debugger.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, debugger.Pause, cdp.Empty{})
		return err
	}))
	srv.awaitCount(t, `msg="players await their rejoin"`, 0, 20*time.Second)
	time.Sleep(2 * time.Second) // the page stays paused past the server's drop (real time)
	erin.Do("run the page again", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, debugger.Resume, debugger.ResumeParams{})
		return err
	}))
	srv.awaitCount(t, `msg="players rejoined"`, 0, 30*time.Second)
	erin.DoWithin(30*time.Second, "play on", chromedp.Poll[chromedp.Void](
		`document.body.dataset.state === 'playing' && window.tickwirePage.frame && !window.tickwirePage.frame.rejoining && window.tickwirePage.frame.bodies.some((b) => b.own)`,
		chromedp.WithPollingTimeout(25*time.Second)))
	if after := evalInt(t, erin, `window.tickwirePage.frame.self`); after != slot {
		t.Errorf("back as slot %d, was %d", after, slot)
	}
	if n := srv.count(`msg="player left"`); n != 0 {
		t.Errorf("the server logged %d leaves: the paused player left instead of rejoining", n)
	}
	erin.ViewportScreenshot("back")
}

// evalInt evaluates expr, a number, in p.
func evalInt(t *testing.T, p *browsertest.Tab, expr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %s: %v", p.Name, expr, err)
	}
	return n
}

// TestBrowserDemo: with -demo, the menu's "Watch" opens a spectator view
// of a game the server's bots play: the page shows them moving, with no
// avatar of its own.
func TestBrowserDemo(t *testing.T) {
	dir := webClient(t)
	_, a := server(t, browserServer(dir, "-demo", "3")...)
	browser := browsertest.NewBrowser(t, 1100, 760)
	n := 0
	dave := browsertest.NewTab(t, browser, "dave", browsertest.ArtifactDir(t, "browser-demo"), &n)
	dave.DoWithin(60*time.Second, "watch the demo", chromedp.Navigate("http://"+a.http+"/"), chromedp.Click(`#watch`),
		chromedp.WaitVisible(`body[data-state="playing"]`))
	dave.DoWithin(30*time.Second, "see three bots and a bot move", chromedp.Poll[chromedp.Void](`(() => {
		const f = window.tickwirePage.frame;
		if (!f || f.bodies.some((b) => b.own)) return false;
		const bots = f.bodies.filter((b) => b.kind === 'player');
		if (bots.length !== 3) return false;
		if (!window.__first) { window.__first = bots[0]; return false; }
		const b = bots.find((b) => b.player === window.__first.player);
		return b && Math.hypot(b.x - window.__first.x, b.y - window.__first.y) > 2;
	})()`, chromedp.WithPollingTimeout(25*time.Second)))
	dave.Do("show the overlay", chromedp.KeyEvent("`"), chromedp.WaitVisible(`#overlay`))
	dave.ViewportScreenshot("watching")
}

// TestBrowserInstalledFirstVisit is a new user's first visit: the server
// installed with go install into an empty directory, started from
// another empty directory with no browser client built (an empty cache),
// and a browser that opens /play at once, while the server builds the
// client. The page waits out the build, shows it, and plays as soon as
// the client is there: an avatar of its own within 5 s of the server's
// "built" line, and no script error on the way.
func TestBrowserInstalledFirstVisit(t *testing.T) {
	browsertest.LookChromium(t)
	gobin, run, cache := t.TempDir(), t.TempDir(), t.TempDir()
	goCache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	install := exec.Command("go", "install", "./cmd/tickwire-server")
	install.Dir = filepath.Join("..", "..")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/tickwire-server: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(gobin, "tickwire-server"), "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0",
		"-admin", "127.0.0.1:0", "-dev-join", "-webtransport", "127.0.0.1:0", "-npcs", "20", "-session-timeout", "5s")
	cmd.Dir = run
	// An empty cache for the client, the usual one for the go command's
	// build (a cold build of the whole client is minutes on a busy
	// machine, and the same code path).
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "HOME="+cache, "GOCACHE="+strings.TrimSpace(string(goCache)))
	srv := startCmd(t, cmd)
	addr := srv.await(t, `msg="serving HTTP" addr=(\S+)`)
	built := srv.seen(`msg="browser client: built"`)

	tok := joinToken(t, addr)
	browser := browsertest.NewBrowser(t, 1100, 760)
	n := 0
	erin := browsertest.NewTab(t, browser, "erin", browsertest.ArtifactDir(t, "browser-first-visit"), &n)
	logPagesOnFailure(t, erin)
	erin.Do("open /play", chromedp.Navigate("http://"+addr+"/play#token="+tok))
	erin.DoWithin(5*time.Minute, "wait out the build", chromedp.Poll[chromedp.Void](`(window.tickwirePage.building || 0) > 0 && document.body.dataset.state !== 'building' || document.body.dataset.state === 'error'`,
		chromedp.WithPollingTimeout(5*time.Minute)))
	var builtAt time.Time
	select {
	case builtAt = <-built:
	case <-time.After(5 * time.Minute):
	}
	if builtAt.IsZero() {
		t.Fatalf("the server never logged the build")
	}
	erin.Do("play", chromedp.Poll[chromedp.Void](`document.body.dataset.state === 'playing' && window.tickwirePage.frame && window.tickwirePage.frame.bodies.some((b) => b.own) || document.body.dataset.state === 'error'`,
		chromedp.WithPollingTimeout(10*time.Second)))
	playing := time.Now()
	erin.ViewportScreenshot("playing")
	st, err := chromedp.Run(erin.Ctx, chromedp.Evaluate[struct {
		State, Error string
		Building     int
	}](`({state: document.body.dataset.state, error: window.tickwirePage.error, building: window.tickwirePage.building || 0})`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page: %+v; playing %v after the build", st, playing.Sub(builtAt))
	if st.State != "playing" || st.Error != "" {
		t.Fatalf("page ended in %q: %s", st.State, st.Error)
	}
	if st.Building == 0 {
		t.Error("the page never waited for the build: the test did not see a first visit")
	}
	if d := playing.Sub(builtAt); d > 5*time.Second {
		t.Errorf("playing %v after the client was built, want at most 5 s", d)
	}
	if ex := erin.Exceptions(); len(ex) > 0 {
		t.Errorf("script errors: %q", ex)
	}
}

// joinToken asks the server at addr (-dev-join) for a connect token.
func joinToken(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/api/join", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != 200 || j.Token == "" {
		t.Fatalf("POST /api/join: %d %v", resp.StatusCode, err)
	}
	return j.Token
}
