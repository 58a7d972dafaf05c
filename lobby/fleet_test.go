package lobby

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/fleet/embedded"
)

// testFleet is an embedded NATS with game servers announcing themselves.
type testFleet struct {
	t    *testing.T
	e    *embedded.Server
	keys map[string]tickwire.Key // by server name
	m    map[string]*fleet.Member
}

func newTestFleet(t *testing.T) *testFleet {
	e, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &testFleet{t: t, e: e, keys: map[string]tickwire.Key{}, m: map[string]*fleet.Member{}}
}

func (f *testFleet) conn() *nats.Conn {
	nc, err := f.e.Connect(f.t.Name())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.Close)
	return nc
}

// server joins a game server named name, at UDP address name, to the fleet.
func (f *testFleet) server(name string, capacity int, types ...string) {
	key, _ := tickwire.GenerateKey()
	m, err := fleet.Join(f.conn(), fleet.MemberConfig{Name: name, Types: types, Addrs: []string{name}, Capacity: capacity,
		Key: key, Logger: slog.New(slog.DiscardHandler), Load: func() fleet.Load { return fleet.Load{} }})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	f.keys[name], f.m[name] = key, m
}

func (f *testFleet) directory(servers int) *fleet.Directory {
	d, err := fleet.NewDirectory(f.conn(), fleet.DirectoryConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { d.Close() })
	await(f.t, "the directory to see the servers", func() bool { return len(d.Servers()) >= servers })
	return d
}

// await polls cond until it holds: the fleet's messages arrive on NATS's
// goroutines.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestFleetAssignment plays rooms through a lobby whose games go to a
// fleet of two servers: each game lands on the less loaded one, its
// tokens open with that server's key and name its address, and the
// dashboard shows the fleet with the seats reserved.
func TestFleetAssignment(t *testing.T) {
	f := newTestFleet(t)
	f.server("127.0.0.1:7001", 8, "arena")
	f.server("127.0.0.1:7002", 8, "arena")
	d := f.directory(2)
	l, srv := newTestLobby(t, Config{Servers: []GameServer{}, Fleet: d,
		Types: []GameType{{Name: "arena", MinPlayers: 2, MaxPlayers: 2}}})
	c := &Client{BaseURL: srv.URL}
	ctx := testCtx(t)

	perServer := map[string]int{}
	for g := range 4 {
		a, err := c.Create(ctx, "arena", CreateRequest{Name: "g", Player: "a", Hosting: ServerHosted})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Join(ctx, a.Room.ID, JoinRequest{Player: "b"})
		if err != nil {
			t.Fatal(err)
		}
		as := make([]*Assignment, 2)
		var wg sync.WaitGroup
		for i, s := range []*Seat{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Ready(ctx); err != nil {
					t.Error(err)
					return
				}
				a, err := s.Assignment(ctx)
				if err != nil {
					t.Error(err)
				}
				as[i] = a
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		server := as[0].Addrs[0]
		key, ok := f.keys[server]
		if !ok {
			t.Fatalf("game %d assigned to %v, not a fleet server", g, as[0].Addrs)
		}
		checkAssignments(t, key, server, as...)
		perServer[server]++
	}
	if perServer["127.0.0.1:7001"] != 2 || perServer["127.0.0.1:7002"] != 2 {
		t.Fatalf("games per server %v, want 2 each (least loaded first)", perServer)
	}

	admin := newAdminServer(t, l)
	resp, err := http.Get(admin.URL + "/api/stats")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st statsJSON
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Fleet) != 2 {
		t.Fatalf("dashboard fleet %s", body)
	}
	for _, s := range st.Fleet {
		if !s.Healthy || s.Reserved != 4 || s.Capacity != 8 {
			t.Fatalf("dashboard shows %+v, want healthy with 4 of 8 seats reserved", s)
		}
	}
	resp, err = http.Get(admin.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(m)
	for _, want := range []string{`tickwire_lobby_fleet_servers{health="healthy"} 2`, `tickwire_lobby_fleet_seats{kind="reserved"} 8`,
		"tickwire_lobby_fleet_allocations_total 4", "tickwire_lobby_fleet_requests_failed_total 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err = http.Get(admin.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `id="fleet-body"`) {
		t.Fatal("the dashboard page has no fleet table")
	}
}

// TestFleetFull tells the room's players when no server has room, and
// assigns the game once one has.
func TestFleetFull(t *testing.T) {
	f := newTestFleet(t)
	f.server("127.0.0.1:7001", 1, "arena") // one seat: a 2-player game does not fit
	d := f.directory(1)
	_, srv := newTestLobby(t, Config{Servers: []GameServer{}, Fleet: d,
		Types: []GameType{{Name: "arena", MinPlayers: 2, MaxPlayers: 2}}})
	bob, alice := dialWS(t, srv, "arena"), dialWS(t, srv, "arena")
	bob.send(map[string]any{"op": "create", "name": "g", "player": "Bob", "hosting": "server"})
	room := bob.expect("joined").room(t)
	alice.send(map[string]any{"op": "join", "room": room.ID, "player": "Alice"})
	alice.expect("joined")
	bob.send(map[string]any{"op": "ready"})
	alice.send(map[string]any{"op": "ready"})
	if m := bob.expect("error"); m.Code != CodeAssignFailed || strings.Contains(m.Error, "7001") {
		t.Fatalf("error %+v: want %s without the server's address", m, CodeAssignFailed)
	}

	// A bigger server joins; readying again assigns the game there.
	f.server("127.0.0.1:7003", 16, "arena")
	await(t, "the new server", func() bool { return len(d.Servers()) == 2 })
	bob.send(map[string]any{"op": "unready"})
	bob.send(map[string]any{"op": "ready"})
	if a := bob.expect("assigned").Assignment; a == nil || a.Addrs[0] != "127.0.0.1:7003" {
		t.Fatalf("assigned %+v, want the new server", a)
	}
}

// TestFleetTwoLobbies serves one room through two lobbies of a fleet: the
// room lives in the lobby that created it, and the other sends every API
// call for it there.
func TestFleetTwoLobbies(t *testing.T) {
	f := newTestFleet(t)
	f.server("127.0.0.1:7001", 8, "arena")
	cfg := func(d *fleet.Directory) Config {
		return Config{Servers: []GameServer{}, Fleet: d, Types: []GameType{{Name: "arena", MinPlayers: 2, MaxPlayers: 2}}}
	}
	da, db := f.directory(1), f.directory(1)
	_, srvA := newTestLobby(t, cfg(da))
	lb, srvB := newTestLobby(t, cfg(db))
	tagA, err := da.Announce(srvA.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Announce(srvB.URL); err != nil {
		t.Fatal(err)
	}
	await(t, "lobby B to hear of lobby A", func() bool { u, ok := db.LobbyURL(tagA); return ok && u == srvA.URL })

	ctx := testCtx(t)
	a, err := (&Client{BaseURL: srvA.URL}).Create(ctx, "arena", CreateRequest{Name: "g", Player: "a", Hosting: ServerHosted})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Room.ID, tagA) {
		t.Fatalf("room %s of lobby A does not start with its tag %s", a.Room.ID, tagA)
	}
	// b only knows lobby B; every call of b's is sent on to A.
	b, err := (&Client{BaseURL: srvB.URL}).Join(ctx, a.Room.ID, JoinRequest{Player: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	as := make([]*Assignment, 2)
	for i, s := range []*Seat{a, b} {
		wg.Go(func() {
			if err := s.Ready(ctx); err != nil {
				t.Error(err)
				return
			}
			as[i], _ = s.Assignment(ctx)
		})
	}
	wg.Wait()
	if as[0] == nil || as[1] == nil || as[0].GameID != as[1].GameID {
		t.Fatalf("assignments %+v %+v: want one game", as[0], as[1])
	}
	checkAssignments(t, f.keys["127.0.0.1:7001"], "127.0.0.1:7001", as...)
	if got := redirects(t, lb); got != 3 {
		t.Fatalf("lobby B redirected %v requests, want 3: join, ready and the assignment", got)
	}
	// A room id of nobody's tag is just unknown.
	resp, err := http.Get(srvB.URL + "/api/rooms/zzzzabcdef")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown room: %d, want 404", resp.StatusCode)
	}
}

// redirects reads the lobby's redirect counter.
func redirects(t *testing.T, l *Lobby) float64 {
	t.Helper()
	mfs, err := l.gatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tickwire_lobby_room_redirects_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no redirect counter")
	return 0
}
