package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/fleet/embedded"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a settable clock for the Directory's and Members' health.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testFleet is an embedded NATS server with connections to it: game
// servers and lobbies with their roles' permissions, and connections
// that may do anything (to play a forger).
type testFleet struct {
	t      *testing.T
	e      *embedded.Server
	clk    *clock
	tokens map[Role]string
}

// testAnyToken is the token of connections that may do anything.
const testAnyToken = "any-any-any-any-any-any"

// testAuthorize is the embedded server's check in the fleet's tests:
// the roles' (Authorizer), and testAnyToken for everything.
func testAuthorize(tokens map[Role]string) func(token, id string) (embedded.Permissions, bool) {
	auth := Authorizer("", tokens)
	return func(token, id string) (embedded.Permissions, bool) {
		if token == testAnyToken {
			return embedded.Permissions{Publish: []string{">"}, Subscribe: []string{">"}, Responses: true}, true
		}
		p, ok := auth(token, id)
		return embedded.Permissions(p), ok
	}
}

var testTokens = map[Role]string{RoleServer: "server-token-0123456789", RoleLobby: "lobby-token-0123456789"}

func newTestFleet(t *testing.T) *testFleet {
	e, err := embedded.Start(embedded.Config{Authorize: testAuthorize(testTokens)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &testFleet{t: t, e: e, clk: &clock{t: time.Unix(1e9, 0)}, tokens: testTokens}
}

// conn is a connection that may do anything.
func (f *testFleet) conn() *nats.Conn {
	c, err := NewCredentials(RoleLobby, testAnyToken)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.connect(c)
}

// as is a connection with the credentials of role.
func (f *testFleet) as(role Role) (*nats.Conn, *Credentials) {
	c, err := NewCredentials(role, f.tokens[role])
	if err != nil {
		f.t.Fatal(err)
	}
	return f.connect(c), c
}

func (f *testFleet) connect(c *Credentials) *nats.Conn {
	nc, err := f.e.Connect(f.t.Name(), c.Options()...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.Close)
	return nc
}

// server is a Member with a settable load.
type server struct {
	*Member
	nc   *nats.Conn
	key  tickwire.Key
	load atomic.Int64 // connected players
}

func (f *testFleet) server(name string, capacity int, types ...string) *server {
	key, _ := tickwire.GenerateKey()
	nc, c := f.as(RoleServer)
	s := &server{nc: nc, key: key}
	m, err := Join(s.nc, MemberConfig{ID: c.ID(), Name: name, Types: types, Addrs: []string{"127.0.0.1:" + name}, Capacity: capacity,
		Key: key, Interval: 50 * time.Millisecond, Logger: quiet, Now: f.clk.now,
		Load: func() Load {
			return Load{Players: int(s.load.Load()), TickP99: 3 * time.Millisecond, TickBudget: 16 * time.Millisecond}
		}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	s.Member = m
	return s
}

func (f *testFleet) directory() *Directory {
	nc, c := f.as(RoleLobby)
	d, err := NewDirectory(nc, DirectoryConfig{ID: c.ID(), Logger: quiet, Now: f.clk.now, RequestTimeout: 5 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { d.Close() })
	return d
}

// waitFor polls cond until it holds; the fleet's messages are delivered
// on NATS's goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func healthy(d *Directory) map[string]bool {
	out := map[string]bool{}
	for _, s := range d.Servers() {
		out[s.Name] = s.Healthy
	}
	return out
}

func TestAllocateSpreadsByLoad(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	a, b, c := f.server("a", 20, "arena"), f.server("b", 20, "arena"), f.server("c", 40, "arena", "swarm")
	b.load.Store(6) // b is busier from the start
	keys := map[string]tickwire.Key{"a": a.key, "b": b.key, "c": c.key}
	waitFor(t, "three servers", func() bool { return len(d.Servers()) == 3 })
	waitFor(t, "b's load", func() bool {
		for _, s := range d.Servers() {
			if s.Name == "b" && s.Players == 6 {
				return true
			}
		}
		return false
	})

	games := map[string]int{}
	for i := range 12 {
		al, err := d.Allocate(context.Background(), "arena", uint64(i+1), 2, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if al.Key != keys[al.Server] || al.Addrs[0] != "127.0.0.1:"+al.Server {
			t.Fatalf("allocation on %s carries the key or address of another server: %+v", al.Server, al.Addrs)
		}
		games[al.Server]++
	}
	// Least loaded first, counting the seats each grant reserved: 24
	// seats over a (0/20), b (6/20) and c (0/40) end at a 8, b 2, c 14.
	if games["a"] != 4 || games["b"] != 1 || games["c"] != 7 {
		t.Fatalf("games per server %v, want a 4, b 1, c 7 (least loaded first)", games)
	}
	for _, s := range d.Servers() {
		if s.Name == "c" && s.Reserved != 14 {
			t.Fatalf("c announces %d reserved seats, want 14", s.Reserved)
		}
	}

	// Only c runs swarm; a type nobody runs fails with ErrNoServer.
	if al, err := d.Allocate(context.Background(), "swarm", 100, 1, time.Minute); err != nil || al.Server != "c" {
		t.Fatalf("swarm on %v, %v; want c", al, err)
	}
	if _, err := d.Allocate(context.Background(), "chess", 101, 1, time.Minute); !errors.Is(err, ErrNoServer) {
		t.Fatalf("chess: %v, want ErrNoServer", err)
	}
}

func TestAllocateRespectsCapacityAndArrivals(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	s := f.server("only", 4, "arena")
	waitFor(t, "the server", func() bool { return len(d.Servers()) == 1 })
	if _, err := d.Allocate(context.Background(), "arena", 1, 3, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Allocate(context.Background(), "arena", 2, 2, 10*time.Second); !errors.Is(err, ErrNoServer) {
		t.Fatalf("5 seats on a 4-player server: %v, want ErrNoServer", err)
	}
	// The players of game 1 connect: their seats move from reserved to
	// players, and the server is as full as before.
	s.Arrived(1, 3)
	s.load.Store(3)
	if st := s.Status(); st.Reserved != 0 || st.Players != 3 {
		t.Fatalf("after arrival: %d reserved, %d players; want 0, 3", st.Reserved, st.Players)
	}
	// A reservation nobody uses lapses after its hold (and some slack).
	if _, err := d.Allocate(context.Background(), "arena", 3, 1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Reserved != 1 {
		t.Fatalf("%d reserved, want 1", st.Reserved)
	}
	f.clk.add(10*time.Second + holdSlack + time.Millisecond)
	if st := s.Status(); st.Reserved != 0 {
		t.Fatalf("%d reserved after the hold lapsed, want 0", st.Reserved)
	}
}

func TestSilentServerNotChosen(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	a, b := f.server("a", 10, "arena"), f.server("b", 10, "arena")
	b.load.Store(5)
	waitFor(t, "b's load", func() bool {
		for _, s := range d.Servers() {
			if s.Name == "b" && s.Players == 5 {
				return len(d.Servers()) == 2
			}
		}
		return false
	})

	// a dies without a word (as under SIGKILL): its connection drops.
	clients := f.e.Clients()
	a.nc.Close()
	waitFor(t, "NATS to drop a's connection", func() bool { return f.e.Clients() < clients })
	// The next allocation that picks a gets no answer (nobody listens on
	// its subject any more) and lands on b; a is marked down.
	al, err := d.Allocate(context.Background(), "arena", 1, 1, 10*time.Second)
	if err != nil || al.Server != "b" {
		t.Fatalf("allocation after a died: %v, %v; want b", al, err)
	}
	if h := healthy(d); h["a"] || !h["b"] {
		t.Fatalf("health %v, want a down, b up", h)
	}
	if st := d.Stats(); st.Failed != 1 || st.Allocated != 1 {
		t.Fatalf("stats %+v, want 1 failed request and 1 allocation", st)
	}

	// Heartbeats that stop mark a server unhealthy after StaleAfter
	// intervals, even before anyone asks it.
	c := f.server("c", 10, "arena")
	waitFor(t, "c", func() bool { return healthy(d)["c"] })
	c.nc.Close()
	f.clk.add(time.Duration(2.5*float64(50*time.Millisecond)) + time.Millisecond)
	for _, s := range d.Servers() {
		if s.Name == "c" && (s.Healthy || s.Why == "") {
			t.Fatalf("c silent for 2.5 intervals: %+v", s)
		}
	}
}

func TestLeavingAndDraining(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	a, b := f.server("a", 10, "arena"), f.server("b", 10, "arena")
	waitFor(t, "two servers", func() bool { return len(d.Servers()) == 2 })
	a.Drain()
	waitFor(t, "a draining", func() bool { return !healthy(d)["a"] })
	for i := range 3 {
		if al, err := d.Allocate(context.Background(), "arena", uint64(i+1), 1, 10*time.Second); err != nil || al.Server != "b" {
			t.Fatalf("allocation while a drains: %v, %v", al, err)
		}
	}
	b.Close()
	waitFor(t, "b gone", func() bool { _, ok := healthy(d)["b"]; return !ok })
}

func TestBadMessages(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	s := f.server("a", 10, "arena")
	waitFor(t, "a", func() bool { return len(d.Servers()) == 1 })
	nc := f.conn()
	bad := map[string][]byte{
		DefaultPrefix + ".servers.x":    []byte("{not json"),
		DefaultPrefix + ".servers.y":    []byte(`{"id":"z","types":["arena"],"addrs":["a:1"],"capacity":5,"intervalMs":100}`), // subject names another id
		DefaultPrefix + ".servers.n":    []byte(`{"id":"n","types":[],"addrs":["a:1"],"capacity":5,"intervalMs":100}`),
		DefaultPrefix + ".servers.neg":  []byte(`{"id":"neg","types":["arena"],"addrs":["a:1"],"capacity":-5,"intervalMs":100}`),
		DefaultPrefix + ".servers.slow": []byte(`{"id":"slow","types":["arena"],"addrs":["a:1"],"capacity":5,"intervalMs":0}`),
	}
	for subj, b := range bad {
		if err := nc.Publish(subj, b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the bad announcements counted", func() bool { return d.Stats().BadAnnouncements == uint64(len(bad)) })
	if n := len(d.Servers()); n != 1 {
		t.Fatalf("%d servers listed, want 1", n)
	}

	// Requests that make no sense reserve nothing.
	for _, req := range []string{"{", `{"gameId":"0","type":"arena","seats":1,"holdMs":5000}`,
		`{"gameId":"7","type":"arena","seats":0,"holdMs":5000}`, `{"gameId":"7","type":"arena","seats":1,"holdMs":1}`,
		`{"gameId":"7","type":"arena","seats":1,"holdMs":99999999999}`} {
		msg, err := nc.Request(DefaultPrefix+".alloc."+s.ID()+".forger", []byte(req), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var g Grant
		if err := decode(msg.Data, &g); err != nil || g.Error == "" || g.SealedKey != nil {
			t.Fatalf("request %s answered %s", req, msg.Data)
		}
	}
	if st := s.Stats(); st.BadRequests != 5 || st.Granted != 0 {
		t.Fatalf("member stats %+v, want 5 bad requests", st)
	}
	if st := s.Status(); st.Reserved != 0 {
		t.Fatalf("%d seats reserved by bad requests", st.Reserved)
	}
}

// TestOverTCP: a member in another process (Dial, over TCP with the
// token) is seen by a directory connected in process.
func TestOverTCP(t *testing.T) {
	e, err := embedded.Start(embedded.Config{Listen: "127.0.0.1:0", Authorize: testAuthorize(testTokens)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sc, err := NewCredentials(RoleServer, testTokens[RoleServer])
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Dial(e.URL(), sc, "member")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	lc, err := NewCredentials(RoleLobby, testTokens[RoleLobby])
	if err != nil {
		t.Fatal(err)
	}
	local, err := e.Connect("lobby", lc.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	d, err := NewDirectory(local, DirectoryConfig{ID: lc.ID(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key, _ := tickwire.GenerateKey()
	m, err := Join(nc, MemberConfig{ID: sc.ID(), Key: key, Types: []string{"arena"}, Addrs: []string{"127.0.0.1:7777"}, Capacity: 8,
		Logger: quiet, Load: func() Load { return Load{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	waitFor(t, "the member over TCP", func() bool { return healthy(d)["127.0.0.1:7777"] })
	a, err := d.Allocate(t.Context(), "arena", 9, 2, 30*time.Second)
	if err != nil || a.Key != key {
		t.Fatalf("allocation over TCP: %+v, %v", a, err)
	}
	wrong := &Credentials{Role: RoleServer, Token: "wrong-token-wrong-token", kp: sc.kp, id: sc.id}
	if nc, err := nats.Connect(e.URL(), wrong.Options()...); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong token")
	}
}

func TestMemberConfigErrors(t *testing.T) {
	f := newTestFleet(t)
	nc := f.conn()
	load := func() Load { return Load{} }
	for _, cfg := range []MemberConfig{
		{Types: []string{"arena"}, Addrs: []string{"a:1"}, Capacity: 1},                           // no Load
		{Types: []string{"arena"}, Addrs: []string{"a:1"}, Load: load},                            // no capacity
		{Addrs: []string{"a:1"}, Capacity: 1, Load: load},                                         // no type
		{Types: []string{"arena"}, Capacity: 1, Load: load},                                       // no address
		{Types: []string{"arena"}, Addrs: []string{"a:1"}, Capacity: 1, Load: load, Interval: -1}, // bad interval
	} {
		if m, err := Join(nc, cfg); err == nil {
			m.Close()
			t.Errorf("Join(%+v) succeeded", cfg)
		}
	}
}

func ExampleDirectory_Allocate() {
	e, _ := embedded.Start(embedded.Config{})
	defer e.Close()
	lobbyConn, _ := e.Connect("lobby")
	defer lobbyConn.Close()
	serverConn, _ := e.Connect("server")
	defer serverConn.Close()

	key, _ := tickwire.GenerateKey()
	m, _ := Join(serverConn, MemberConfig{Name: "eu-1", Types: []string{"arena"}, Addrs: []string{"203.0.113.7:7777"},
		Capacity: 256, Key: key, Logger: quiet, Load: func() Load { return Load{} }})
	defer m.Close()
	d, _ := NewDirectory(lobbyConn, DirectoryConfig{Logger: quiet})
	defer d.Close()
	for len(d.Servers()) == 0 {
		time.Sleep(time.Millisecond)
	}
	a, err := d.Allocate(context.Background(), "arena", 42, 4, 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Server, a.Addrs, a.Key == key)
	// Output: eu-1 [203.0.113.7:7777] true
}

// TestLobbyAnnouncements: a lobby that announced itself is known to the
// others by its tag, not to itself, and gone from them once it closed.
func TestLobbyAnnouncements(t *testing.T) {
	f := newTestFleet(t)
	a, b := f.directory(), f.directory()
	tag, err := a.Announce("http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	if a.Tag() != tag || len(tag) != TagLen {
		t.Fatalf("tag %q, Tag() %q", tag, a.Tag())
	}
	if _, err := a.Announce("http://127.0.0.1:8080"); err == nil {
		t.Fatal("announced twice")
	}
	waitFor(t, "b to hear a", func() bool { u, ok := b.LobbyURL(tag); return ok && u == "http://127.0.0.1:8080" })
	waitFor(t, "a to hear itself", func() bool { return len(a.Lobbies()) == 1 })
	if _, ok := a.LobbyURL(tag); ok || !a.Lobbies()[0].Self {
		t.Fatal("a lobby sends its own rooms elsewhere")
	}
	if _, err := b.Announce("ftp://x"); err == nil {
		t.Fatal("an ftp URL announced")
	}
	a.Close()
	waitFor(t, "a gone from b", func() bool { return len(b.Lobbies()) == 0 })
	if _, ok := b.LobbyURL(tag); ok {
		t.Fatal("a closed lobby still gets redirects")
	}
}

// Rooms that fill at the same moment allocate at once: each choice must
// count the seats the others are still asking for, or every one of them
// lands on the server that was least loaded before any was granted.
func TestAllocateConcurrentSpreads(t *testing.T) {
	f := newTestFleet(t)
	d := f.directory()
	f.server("a", 40, "arena")
	f.server("b", 40, "arena")
	f.server("c", 40, "arena")
	waitFor(t, "three servers", func() bool { return len(d.Servers()) == 3 })

	var mu sync.Mutex
	games := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 15 {
		wg.Go(func() {
			<-start
			al, err := d.Allocate(context.Background(), "arena", uint64(i+1), 2, 30*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			games[al.Server]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	// 5 each when every choice sees the others; a server's announcement
	// arriving between its grant and the grant's answer may count one
	// game twice for a moment, tipping one game at most.
	for _, name := range []string{"a", "b", "c"} {
		if n := games[name]; n < 4 || n > 6 {
			t.Errorf("%s got %d of 15 games allocated at once, want 4..6: %v", name, n, games)
		}
	}
}
