package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/lobby"
)

// fleetServer is one entry of the fleet on a lobby's /api/stats.
type fleetServer struct {
	Name     string   `json:"name"`
	Addrs    []string `json:"addrs"`
	Healthy  bool     `json:"healthy"`
	Why      string   `json:"why"`
	Players  int      `json:"players"`
	Reserved int      `json:"reserved"`
	TickP99  float64  `json:"tickP99Ms"`
	Budget   float64  `json:"tickBudgetMs"`
}

// lobbyView is what a lobby's operator page shows of the fleet.
type lobbyView struct {
	Fleet   []fleetServer `json:"fleet"`
	Lobbies []struct {
		Healthy bool `json:"healthy"`
	} `json:"lobbies"`
}

func viewOf(t *testing.T, admin string) lobbyView {
	t.Helper()
	v, err := fetchView(admin)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fetchView(admin string) (lobbyView, error) {
	var v lobbyView
	resp, err := http.Get("http://" + admin + "/api/stats")
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// overloaded names the servers seen over their tick budget.
func overloaded(worst map[string]fleetServer) []string {
	var over []string
	for name, s := range worst {
		if s.Budget > 0 && s.TickP99 > s.Budget {
			over = append(over, fmt.Sprintf("%s (p99 %.1f of %.1f ms)", name, s.TickP99, s.Budget))
		}
	}
	return over
}

// watchOverload polls the lobby's view until stop is closed and returns,
// by server, the worst tick p99 it saw against the budget: a server
// whose p99 exceeds its budget is chosen last, whatever its load.
func watchOverload(admin string, stop <-chan struct{}) <-chan map[string]fleetServer {
	out := make(chan map[string]fleetServer, 1)
	go func() {
		worst := map[string]fleetServer{}
		for {
			if v, err := fetchView(admin); err == nil {
				for _, s := range v.Fleet {
					if s.TickP99 > worst[s.Name].TickP99 {
						worst[s.Name] = s
					}
				}
			}
			select {
			case <-stop:
				out <- worst
				return
			case <-time.After(50 * time.Millisecond): // polling the operator page
			}
		}
	}()
	return out
}

// servers are the view's fleet by name.
func (v lobbyView) servers() map[string]fleetServer {
	out := map[string]fleetServer{}
	for _, s := range v.Fleet {
		out[s.Name] = s
	}
	return out
}

// lobbies counts the live lobbies of the view.
func (v lobbyView) lobbies() int {
	n := 0
	for _, l := range v.Lobbies {
		if l.Healthy {
			n++
		}
	}
	return n
}

// awaitFleet polls a lobby's view of the fleet until cond holds, and
// returns how long that took.
func awaitFleet(t *testing.T, admin, what string, limit time.Duration, cond func(map[string]fleetServer) bool) time.Duration {
	t.Helper()
	return awaitView(t, admin, what, limit, func(v lobbyView) bool { return cond(v.servers()) })
}

func awaitView(t *testing.T, admin, what string, limit time.Duration, cond func(lobbyView) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		f := viewOf(t, admin)
		if cond(f) {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("after %v the lobby still does not show %s: %+v", limit, what, f)
		}
		time.Sleep(20 * time.Millisecond) // polling the lobby's operator page
	}
}

// TestFleet is issue 21's run with real processes on loopback: one lobby
// embedding NATS, three game servers joining it, 60 bots through the
// lobby spread over the servers by load; one server SIGKILLed and no
// longer chosen within 3 s; a second lobby on the same NATS sees the same
// fleet and assigns there too.
func TestFleet(t *testing.T) {
	dir := t.TempDir()
	// The roles' tokens: game servers and lobbies join with their own.
	serverToken, lobbyToken := filepath.Join(dir, "server.token"), filepath.Join(dir, "lobby.token")
	if err := os.WriteFile(serverToken, []byte("e2e-fleet-server-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lobbyToken, []byte("e2e-fleet-lobby-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	lb := start(t, "tickwire-server", "-listen", "", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-nats-listen", "127.0.0.1:0", "-nats-server-token-file", serverToken, "-nats-lobby-token-file", lobbyToken)
	natsURL := lb.await(t, `msg="fleet: embedded NATS" url=(\S+)`)
	lobbyHTTP := lb.await(t, `msg="serving HTTP" addr=(\S+)`)
	lobbyAdmin := lb.await(t, `msg="serving admin" addr=(\S+)`)

	servers := map[string]*proc{}
	udp := map[string]string{} // name -> UDP address
	for i := 1; i <= 3; i++ {
		name := "s" + strconv.Itoa(i)
		p := start(t, "tickwire-server", "-listen", "127.0.0.1:0", "-http", "", "-admin", "", "-name", name,
			"-nats", natsURL, "-nats-token-file", serverToken, "-key-file", filepath.Join(dir, name+".key"),
			// 20 Hz: the test is about placement, and a 50 ms budget
			// keeps a machine busy with other tests from making the
			// servers' tick p99 exceed it (an overloaded server is
			// chosen last, whatever its load).
			"-npcs", "20", "-max-players", "64", "-tick", "20")
		servers[name] = p
		udp[name] = p.await(t, `msg="serving game traffic" udp=(\S+)`)
	}
	awaitFleet(t, lobbyAdmin, "three healthy servers", 15*time.Second, func(f map[string]fleetServer) bool {
		return f["s1"].Healthy && f["s2"].Healthy && f["s3"].Healthy
	})

	// 60 bots in rooms of 4: 15 games over three equal servers.
	stop := make(chan struct{})
	overload := watchOverload(lobbyAdmin, stop)
	sum, code := bots(t, "-server", "http://"+lobbyHTTP, "-lobby", "-room-size", "4", "-source-ips", "8",
		"-n", "60", "-duration", "3s", "-seed", "1")
	close(stop)
	ticks := <-overload
	for name, s := range ticks {
		t.Logf("%s: worst tick p99 the lobby saw %.1f ms of %.1f", name, s.TickP99, s.Budget)
	}
	if code != 0 || sum.Connected != 60 || sum.Desyncs != 0 {
		t.Fatalf("bots through the lobby: exit %d, %d of 60 connected, %d desyncs", code, sum.Connected, sum.Desyncs)
	}
	t.Logf("60 bots by server: s1 %d, s2 %d, s3 %d", sum.Servers[udp["s1"]], sum.Servers[udp["s2"]], sum.Servers[udp["s3"]])
	if over := overloaded(ticks); len(over) > 0 {
		// A server whose tick p99 exceeded its budget is rightly chosen
		// last: on a machine starved by other work the spread then says
		// nothing of the load policy (fleet's own tests check it with
		// steady loads).
		t.Logf("spread by load not asserted: the lobby saw %v over their tick budget", over)
	} else {
		for name, addr := range udp {
			// Least loaded first gives 20 each; concurrent rooms may
			// tip a game or two, never most of them.
			if n := sum.Servers[addr]; n < 12 || n > 28 {
				t.Errorf("%s got %d of the 60 bots, want 12..28 (spread by load): %v", name, n, sum.Servers)
			}
		}
	}

	// SIGKILL s1: the lobby must stop choosing it within 3 s.
	servers["s1"].cmd.Process.Kill()
	took := awaitFleet(t, lobbyAdmin, "s1 unhealthy", 10*time.Second, func(f map[string]fleetServer) bool { return !f["s1"].Healthy })
	t.Logf("s1 killed: marked unhealthy after %v (%s)", took.Round(time.Millisecond), viewOf(t, lobbyAdmin).servers()["s1"].Why)
	if took > 3*time.Second {
		t.Errorf("the lobby took %v to stop choosing a killed server, want at most 3 s", took)
	}
	sum, code = bots(t, "-server", "http://"+lobbyHTTP, "-lobby", "-room-size", "4", "-source-ips", "8",
		"-n", "12", "-duration", "1s", "-seed", "2")
	if code != 0 || sum.Connected != 12 || sum.Servers[udp["s1"]] != 0 || sum.Servers[udp["s2"]]+sum.Servers[udp["s3"]] != 12 {
		t.Fatalf("bots after s1 died: exit %d, %d connected, by server %v", code, sum.Connected, sum.Servers)
	}

	// A second lobby on the same NATS sees the same fleet and uses it.
	lb2 := start(t, "tickwire-server", "-listen", "", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-nats", natsURL, "-nats-token-file", lobbyToken)
	lobby2HTTP := lb2.await(t, `msg="serving HTTP" addr=(\S+)`)
	lobby2Admin := lb2.await(t, `msg="serving admin" addr=(\S+)`)
	awaitFleet(t, lobby2Admin, "s2 and s3 healthy", 15*time.Second, func(f map[string]fleetServer) bool {
		return f["s2"].Healthy && f["s3"].Healthy && !f["s1"].Healthy &&
			fmt.Sprint(f["s2"].Addrs) == fmt.Sprint([]string{udp["s2"]})
	})
	sum, code = bots(t, "-server", "http://"+lobby2HTTP, "-lobby", "-room-size", "2", "-n", "4", "-duration", "1s", "-seed", "3")
	if code != 0 || sum.Connected != 4 || sum.Servers[udp["s1"]] != 0 {
		t.Fatalf("bots through the second lobby: exit %d, %d connected, by server %v", code, sum.Connected, sum.Servers)
	}

	// A room lives in the lobby that made it: a player who knows only
	// the first lobby joins a room of the second through it.
	awaitView(t, lobbyAdmin, "the second lobby", 15*time.Second, func(v lobbyView) bool { return v.lobbies() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, err := (&lobby.Client{BaseURL: "http://" + lobby2HTTP}).Create(ctx, "arena",
		lobby.CreateRequest{Name: "two lobbies", Player: "host", MaxPlayers: 2, Hosting: lobby.ServerHosted})
	if err != nil {
		t.Fatal(err)
	}
	guest, err := (&lobby.Client{BaseURL: "http://" + lobbyHTTP}).Join(ctx, host.Room.ID, lobby.JoinRequest{Player: "guest"})
	if err != nil {
		t.Fatalf("joining lobby 2's room %s through lobby 1: %v", host.Room.ID, err)
	}
	var games [2]uint64
	var wg sync.WaitGroup
	for i, s := range []*lobby.Seat{host, guest} {
		wg.Go(func() {
			if err := s.Ready(ctx); err != nil {
				t.Error(err)
				return
			}
			if a, err := s.Assignment(ctx); err != nil {
				t.Error(err)
			} else {
				games[i] = a.GameID
			}
		})
	}
	wg.Wait()
	if games[0] == 0 || games[0] != games[1] {
		t.Fatalf("the two lobbies' players got games %v, want one", games)
	}
}
