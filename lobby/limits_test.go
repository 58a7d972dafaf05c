package lobby

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/tickwire/tickwire/internal/addrlimit"
)

// fakeClock is the rate limits' clock in tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(c *fakeClock) func(*Lobby) { return func(l *Lobby) { l.now = c.Now } }

// answer is an API answer: its status, Retry-After header and error.
type answer struct {
	status     int
	retryAfter string
	err        Error
	body       []byte
}

// do sends an API request with body and the header pairs kv, and decodes
// an error answer, failing unless it is an Error.
func do(t *testing.T, method, url, body string, kv ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")}
	a.body, _ = io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		if err := json.Unmarshal(a.body, &a.err); err != nil || a.err.Code == "" || a.err.Message == "" {
			t.Fatalf("%s %s: HTTP %d with body %q: not an Error", method, url, res.StatusCode, a.body)
		}
	}
	return a
}

// wantLimited checks a is a 429 with code and, for rate limits, a
// Retry-After of secs in the header and the body.
func (a answer) wantLimited(t *testing.T, what, code string, secs int) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || a.err.Code != code {
		t.Fatalf("%s: HTTP %d %+v, want 429 %q", what, a.status, a.err, code)
	}
	want := strconv.Itoa(secs)
	if secs == 0 {
		want = ""
	}
	if a.retryAfter != want || a.err.RetryAfter != secs {
		t.Errorf("%s: Retry-After %q, retryAfter %d, want %d s", what, a.retryAfter, a.err.RetryAfter, secs)
	}
}

// TestRateLimits: creates, joins and chat lines from one address spend
// their own token buckets; an empty bucket answers 429 rate_limited with
// Retry-After (over a socket: an error with retryAfter), changes nothing,
// and refills with time.
func TestRateLimits(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	every := RateLimit{Every: 10 * time.Second, Burst: 2}
	_, srv := newTestLobby(t, Config{CreateRate: every, JoinRate: every, ChatRate: every}, withClock(clk))
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	create := func() answer {
		return do(t, "POST", srv.URL+"/api/games/demo", `{"name":"g","player":"Bob"}`)
	}
	for range 2 {
		if a := create(); a.status != http.StatusCreated {
			t.Fatalf("create: HTTP %d %s", a.status, a.body)
		}
	}
	create().wantLimited(t, "third create", CodeRateLimited, 10)
	if rooms, _ := c.Rooms(ctx, "demo"); len(rooms) != 2 {
		t.Fatalf("%d rooms after a refused create, want 2", len(rooms))
	}
	clk.Advance(4 * time.Second)
	create().wantLimited(t, "create 4 s later", CodeRateLimited, 6)
	clk.Advance(6 * time.Second)
	if a := create(); a.status != http.StatusCreated {
		t.Fatalf("create after the refill: HTTP %d %s", a.status, a.body)
	}

	rooms, _ := c.Rooms(ctx, "demo")
	join := func(room, player string) answer {
		return do(t, "POST", srv.URL+"/api/rooms/"+room+"/join", `{"player":"`+player+`"}`)
	}
	alice := join(rooms[0].ID, "Alice")
	join(rooms[1].ID, "Alice")
	join(rooms[2].ID, "Alice").wantLimited(t, "third join", CodeRateLimited, 10)
	if r, _ := c.Room(ctx, rooms[2].ID); len(r.Players) != 1 {
		t.Fatalf("refused join seated a player: %+v", r)
	}

	var seat SeatInfo
	if err := json.Unmarshal(alice.body, &seat); err != nil {
		t.Fatal(err)
	}
	chat := func() answer {
		return do(t, "POST", srv.URL+"/api/rooms/"+rooms[0].ID+"/chat", `{"seat":"`+seat.Seat+`","text":"hi"}`)
	}
	chat()
	chat()
	chat().wantLimited(t, "third chat line", CodeRateLimited, 10)
	// The socket shares the address's bucket and hears why.
	w := dialWS(t, srv, "demo")
	clk.Advance(10 * time.Second)
	w.send(map[string]any{"op": "join", "room": rooms[2].ID, "player": "Carol"})
	w.expect("joined")
	w.send(map[string]any{"op": "chat", "text": "one"})
	w.expect("chat")
	w.send(map[string]any{"op": "chat", "text": "two"})
	for {
		m, err := w.next()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == "error" {
			if m.Code != CodeRateLimited || m.RetryAfter != 10 {
				t.Fatalf("socket chat over the limit: %+v", m)
			}
			break
		}
		if m.Type == "chat" {
			t.Fatalf("chat over the limit relayed: %+v", m)
		}
	}
}

// TestAddressCaps: one address may hold MaxRoomsPerAddr open rooms and
// MaxSocketsPerAddr sockets; more are answered 429 address_limit and
// change nothing, a closed room frees its place, and the lobby-wide
// socket cap is 503 busy. Players are told apart by X-Forwarded-For from
// a trusted proxy (loopback).
func TestAddressCaps(t *testing.T) {
	_, srv := newTestLobby(t, Config{MaxRoomsPerAddr: 2, MaxSocketsPerAddr: 2, MaxSockets: 3,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Types:          []GameType{{Name: "demo"}, {Name: "other"}}})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	create := func(typ, name, from string) answer {
		return do(t, "POST", srv.URL+"/api/games/"+typ, `{"name":"`+name+`","player":"Bob"}`, "X-Forwarded-For", from)
	}
	first := create("demo", "a", "192.0.2.1")
	create("other", "b", "192.0.2.1")
	create("demo", "c", "192.0.2.1").wantLimited(t, "third room", CodeAddrLimit, 0)
	if a := create("demo", "c", "192.0.2.2"); a.status != http.StatusCreated {
		t.Fatalf("another address's room: HTTP %d %s", a.status, a.body)
	}
	if rooms, _ := c.Rooms(ctx, "demo"); len(rooms) != 2 {
		t.Fatalf("%d demo rooms, want 2", len(rooms))
	}
	var bob SeatInfo
	json.Unmarshal(first.body, &bob)
	if a := do(t, "POST", srv.URL+"/api/rooms/"+bob.Room.ID+"/leave", `{"seat":"`+bob.Seat+`"}`); a.status != http.StatusNoContent {
		t.Fatalf("leave: HTTP %d %s", a.status, a.body)
	}
	if a := create("demo", "c", "192.0.2.1"); a.status != http.StatusCreated {
		t.Fatalf("create after a room closed: HTTP %d %s", a.status, a.body)
	}

	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/games/demo/ws"
	dial := func(from string) (*http.Response, error) {
		conn, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {from}}})
		if err == nil {
			t.Cleanup(func() { conn.CloseNow() })
		}
		return res, err
	}
	refused := func(what string, res *http.Response, err error, status int, code string) {
		t.Helper()
		if err == nil || res == nil || res.StatusCode != status {
			t.Fatalf("%s: %v, %v; want HTTP %d", what, res, err, status)
		}
		var e Error
		if json.NewDecoder(res.Body).Decode(&e); e.Code != code || e.Message == "" {
			t.Errorf("%s: error %+v, want %q", what, e, code)
		}
	}
	for range 2 {
		if _, err := dial("192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	res, err := dial("192.0.2.1")
	refused("third socket of one address", res, err, http.StatusTooManyRequests, CodeAddrLimit)
	if _, err := dial("192.0.2.2"); err != nil {
		t.Fatalf("another address's socket: %v", err)
	}
	res, err = dial("192.0.2.3")
	refused("fourth socket", res, err, http.StatusServiceUnavailable, CodeBusy)
}

// TestTrustedProxies: behind a trusted proxy, each forwarded client has
// its own limits; a forged X-Forwarded-For from an untrusted peer
// changes nothing.
func TestTrustedProxies(t *testing.T) {
	once := RateLimit{Every: time.Hour, Burst: 1}
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		second  int // status of the second client's create
	}{
		{"trusted", loopback, http.StatusCreated},
		{"untrusted", nil, http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newTestLobby(t, Config{CreateRate: once, TrustedProxies: tc.trusted})
			create := func(xff string) int {
				return do(t, "POST", srv.URL+"/api/games/demo", `{"name":"g","player":"Bob"}`, "X-Forwarded-For", xff).status
			}
			if s := create("192.0.2.1"); s != http.StatusCreated {
				t.Fatalf("first client: HTTP %d", s)
			}
			if s := create("192.0.2.1"); s != http.StatusTooManyRequests {
				t.Fatalf("first client again: HTTP %d", s)
			}
			if s := create("192.0.2.2"); s != tc.second {
				t.Fatalf("second client: HTTP %d, want %d", s, tc.second)
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	l, err := New(Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		peer, xff, want string
	}{
		{"192.0.2.1:5", "", "192.0.2.1"},
		{"192.0.2.1:5", "198.51.100.1", "192.0.2.1"},                          // not a proxy: its header is ignored
		{"[::ffff:192.0.2.1]:5", "", "192.0.2.1"},                             // v4-mapped
		{"10.0.0.2:5", "198.51.100.1", "198.51.100.1"},                        // one proxy
		{"10.0.0.2:5", "203.0.113.9, 198.51.100.1, 10.0.0.3", "198.51.100.1"}, // the client forged the first hop
		{"10.0.0.2:5", "garbage, 10.0.0.3", "10.0.0.3"},                       // all trusted up to a bad hop: the last good one
		{"10.0.0.2:5", "", "10.0.0.2"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := l.ClientAddr(r).String(); got != tc.want {
			t.Errorf("peer %s X-Forwarded-For %q: %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
	for addr, key := range map[string]string{
		"192.0.2.1":            "192.0.2.1/32",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
	} {
		if got := addrlimit.KeyOf(netip.MustParseAddr(addr)).String(); got != key {
			t.Errorf("addrlimit.KeyOf(%s) = %s, want %s", addr, got, key)
		}
	}
}

// TestIdleSeats: a player that only long-polls, or only keeps its socket
// open, leaves its room IdleTimeout after it last acted, and the room
// closes with it; acting (chat) restarts the wait. Virtual time.
func TestIdleSeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 5 * time.Minute
		l, err := New(Config{IdleTimeout: idle, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		sock := &socket{l: l, typ: l.types["demo"], out: make(chan outMsg, socketQueue)}
		l.mu.Lock()
		bob, e1 := l.create("demo", CreateRequest{Name: "g", Player: "Bob"}, origin{})
		alice, e2 := l.join(bob.room.id, JoinRequest{Player: "Alice"}, origin{sock: sock})
		carol, e3 := l.join(bob.room.id, JoinRequest{Player: "Carol"}, origin{})
		l.unlock()
		if e1 != nil || e2 != nil || e3 != nil {
			t.Fatal(e1, e2, e3)
		}
		roomID := bob.room.id
		seated := func(s *seat) bool {
			l.mu.Lock()
			defer l.unlock()
			return l.seats[s.id] == s && s.room != nil
		}
		// Bob and Carol long-poll back to back, as Client.Assignment does.
		polled := make(chan int, 2)
		for _, s := range []*seat{bob, carol} {
			go func() {
				for {
					rec := httptest.NewRecorder()
					l.ServeHTTP(rec, httptest.NewRequest("GET", "/api/rooms/"+roomID+"/assignment?seat="+s.id+"&wait=60s", nil))
					if rec.Code != http.StatusOK {
						polled <- rec.Code
						return
					}
				}
			}()
		}
		time.Sleep(4 * time.Minute)
		l.mu.Lock()
		l.chat(carol, "", "still here")
		l.unlock()
		time.Sleep(idle - 4*time.Minute - time.Second)
		synctest.Wait()
		if !seated(bob) || !seated(alice) || !seated(carol) {
			t.Fatalf("a player left before %v idle", idle)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if seated(bob) || seated(alice) || !seated(carol) {
			t.Fatalf("after %v: Bob seated %v, Alice %v (want both gone), Carol %v (acted 4 min in)",
				idle+time.Second, seated(bob), seated(alice), seated(carol))
		}
		if code := <-polled; code != http.StatusGone {
			t.Errorf("Bob's long-poll ended with HTTP %d, want 410", code)
		}
		if m := lastMsg(sock); !strings.Contains(string(m), `"rooms"`) {
			t.Errorf("Alice's socket last heard %s, want the room list", m)
		}
		time.Sleep(4 * time.Minute)
		synctest.Wait()
		l.mu.Lock()
		rooms := len(l.rooms)
		l.unlock()
		if seated(carol) || rooms != 0 {
			t.Fatalf("Carol seated %v, %d rooms after everyone went idle", seated(carol), rooms)
		}
		<-polled
	})
}

// lastMsg drains a test socket's queue and returns the last message.
func lastMsg(s *socket) []byte {
	var last []byte
	for {
		select {
		case m := <-s.out:
			last = m.data
		default:
			return last
		}
	}
}

// TestAddrSweep: the lobby's buckets forget the addresses whose buckets
// have refilled (addrlimit.Buckets has the details), but not what an
// address holds: one that created MaxRoomsPerAddr rooms stays refused.
func TestAddrSweep(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	l, err := New(Config{MaxRoomsPerAddr: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.now = clk.Now
	l.mu.Lock()
	defer l.unlock()
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }
	if _, e := l.create("demo", CreateRequest{Name: "g", Player: "Bob"}, origin{remote: addr(0)}); e != nil {
		t.Fatal(e)
	}
	const many = 1 << 12
	for i := range many {
		if e := l.take(l.joinRate, addrlimit.KeyOf(addr(i)), "joins"); e != nil {
			t.Fatal(e)
		}
	}
	clk.Advance(time.Minute)
	for i := many; i < 4*many && l.joinRate.Len() > 1; i++ { // up to a sweep
		l.take(l.joinRate, addrlimit.KeyOf(addr(i)), "joins")
	}
	if n := l.joinRate.Len(); n != 1 {
		t.Errorf("%d addresses' join buckets after a sweep, want the newest", n)
	}
	if _, e := l.create("demo", CreateRequest{Name: "h", Player: "Bob"}, origin{remote: addr(0)}); e == nil || e.Code != CodeAddrLimit {
		t.Errorf("a second room from the address holding one: %v, want %q", e, CodeAddrLimit)
	}
}
