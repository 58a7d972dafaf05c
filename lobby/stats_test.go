package lobby

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickwire/tickwire/internal/browsertest"
)

// fakeGameServer stands in for the game server: it runs every game the
// lobby assigns (via Config.OnAssigned) with one connection per player and
// reports made-up but moving network numbers.
type fakeGameServer struct {
	mu      sync.Mutex
	games   []GameAssigned
	samples int
}

func (f *fakeGameServer) onAssigned(g GameAssigned) {
	f.mu.Lock()
	f.games = append(f.games, g)
	f.mu.Unlock()
}

func (f *fakeGameServer) Stats() ServerStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples++
	n := float64(f.samples)
	st := ServerStats{Tick: TickStats{Rate: 60, Ticks: uint64(f.samples * 60),
		Last: 2 * time.Millisecond, Mean: 1800 * time.Microsecond, Max: time.Duration(3+f.samples%4) * time.Millisecond}}
	for gi, g := range f.games {
		gs := GameStats{ID: g.GameID, Type: g.Type, Tick: uint64(f.samples * 60), Entities: 10 * len(g.Players)}
		for pi, p := range g.Players {
			phase := float64(gi*7+pi) + n/3
			gs.Connections = append(gs.Connections, ConnStats{
				ClientID: p.ClientID, Addr: fmt.Sprintf("127.0.0.1:%d", 50000+gi*10+pi), Players: []uint16{p.Slot},
				RTT:     time.Duration(30+20*math.Sin(phase)) * time.Millisecond,
				Jitter:  time.Duration(3+2*math.Cos(phase)) * time.Millisecond,
				Loss:    0.02 + 0.02*math.Sin(phase/2),
				SendBps: 12000 + 3000*math.Sin(phase), RecvBps: 4000 + 500*math.Cos(phase),
			})
		}
		st.Games = append(st.Games, gs)
	}
	return st
}

// startBots seats n API bots in rooms of two; all but the last `waiting`
// ready up, so (n-waiting)/2 games start and the rest wait in open rooms.
func startBots(t *testing.T, base string, n, waiting int) {
	t.Helper()
	ctx := testCtx(t)
	c := &Client{BaseURL: base}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i += 2 {
		host, err := c.Create(ctx, "demo", CreateRequest{Name: fmt.Sprintf("bots %d", i/2), Player: fmt.Sprintf("bot-%d", i), MaxPlayers: 2})
		if err != nil {
			t.Fatal(err)
		}
		guest, err := c.Join(ctx, host.Room.ID, JoinRequest{Player: fmt.Sprintf("bot-%d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		if i >= n-waiting {
			continue
		}
		for _, s := range []*Seat{host, guest} {
			wg.Go(func() {
				if err := s.Ready(ctx); err != nil {
					errs <- err
					return
				}
				if _, err := s.Assignment(ctx); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: HTTP %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

// TestStatsAndMetrics: 50 bots, 24 games started and one room waiting;
// the operator pages' /api/stats and /metrics count them.
func TestStatsAndMetrics(t *testing.T) {
	fake := &fakeGameServer{}
	l, srv := newTestLobby(t, Config{Stats: fake, OnAssigned: fake.onAssigned})
	admin := newAdminServer(t, l)
	startBots(t, srv.URL, 50, 2)

	var st statsJSON
	if err := json.Unmarshal([]byte(httpGet(t, admin.URL+"/api/stats")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Server == nil || len(st.Server.Games) != 24 || st.Server.Players != 48 || st.Server.Connections != 48 {
		t.Fatalf("server stats %+v", st.Server)
	}
	if st.Lobby.Rooms != 1 || st.Lobby.Players != 2 || st.Server.Tick.BudgetMs < 16.6 || st.Server.Tick.BudgetMs > 16.7 {
		t.Errorf("lobby stats %+v tick %+v", st.Lobby, st.Server.Tick)
	}
	c := st.Server.Games[0].Connections[0]
	if c.RTTMs < 10 || c.RTTMs > 50 || c.ClientID == 0 || len(c.Players) != 1 {
		t.Errorf("connection %+v", c)
	}

	m := httpGet(t, admin.URL+"/metrics")
	for _, want := range []string{
		`tickwire_lobby_games_assigned_total{hosting="server",type="demo"} 24`,
		`tickwire_lobby_rooms{type="demo"} 1`,
		`tickwire_lobby_players{type="demo"} 2`,
		`tickwire_lobby_rooms_created_total{type="demo"} 25`,
		`tickwire_lobby_api_seats 50`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestBrowserDashboard shows the dashboard with 50 bots (48 in 24 running
// games fed by a fake game server, 2 waiting) in a real browser, waits
// for the charts to have a few samples and saves a screenshot.
func TestBrowserDashboard(t *testing.T) {
	browser := newBrowser(t)
	fake := &fakeGameServer{}
	l, srv := newTestLobby(t, Config{Stats: fake, OnAssigned: fake.onAssigned})
	admin := newAdminServer(t, l)
	startBots(t, srv.URL, 50, 2)
	shot := 0
	p := browsertest.NewTab(t, browser, "dashboard", browsertest.ArtifactDir(t, "lobby-dashboard"), &shot)
	p.Do("open the dashboard", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(admin.URL+"/dashboard"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#games tr[data-game]').length === 24 &&
			document.getElementById('n-players').textContent === '48' &&
			document.getElementById('n-waiting').textContent === '2' &&
			document.querySelectorAll('#conns tr[data-client]').length === 48 &&
			document.querySelector('#conns tr[data-client] polyline').getAttribute('points').split(' ').length >= 4`,
			chromedp.WithPollingTimeout(10*time.Second)))
	p.Screenshot("50-bots")
	p.ViewportScreenshot("50-bots-top")
	ctx, cancel := context.WithTimeout(p.Ctx, 5*time.Second)
	defer cancel()
	tick, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('tick-text').textContent`))
	if err != nil || !strings.Contains(tick, "60 Hz") {
		t.Errorf("tick text %q, %v", tick, err)
	}
}

// TestAdminPagesArePrivate: the dashboard, /api/stats and /metrics are
// served by Admin only, and no public page or API answer names a game
// connection's address, which the operator's /api/stats does.
func TestAdminPagesArePrivate(t *testing.T) {
	fake := &fakeGameServer{}
	l, srv := newTestLobby(t, Config{Stats: fake, OnAssigned: fake.onAssigned})
	admin := newAdminServer(t, l)
	startBots(t, srv.URL, 4, 2)
	addr := fake.Stats().Games[0].Connections[0].Addr

	for _, path := range []string{"/dashboard", "/api/stats", "/metrics"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode < 400 {
			t.Errorf("public GET %s: HTTP %d, want an error", path, res.StatusCode)
		}
		httpGet(t, admin.URL+path)
	}
	if st := httpGet(t, admin.URL+"/api/stats"); !strings.Contains(st, addr) {
		t.Fatalf("operator stats lack the connection address %s", addr)
	}
	rooms, err := (&Client{BaseURL: srv.URL}).Rooms(testCtx(t), "demo")
	if err != nil || len(rooms) != 1 {
		t.Fatalf("rooms %+v, %v", rooms, err)
	}
	for _, path := range []string{"/", "/games/demo", "/api/types", "/api/games/demo", "/api/rooms/" + rooms[0].ID, "/static/dashboard.js"} {
		if page := httpGet(t, srv.URL+path); strings.Contains(page, addr) {
			t.Errorf("public GET %s shows the connection address %s", path, addr)
		}
	}
}
