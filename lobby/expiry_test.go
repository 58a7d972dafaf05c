package lobby

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// TestSeatExpiry: an API seat lives while its player calls the API (a
// long-poll counts the whole time) and goes SeatTimeout after the last
// call; an unclaimed assignment is forgotten the same way. Virtual time.
func TestSeatExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New(Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.mu.Lock()
		bob, e1 := l.create("demo", CreateRequest{Name: "g", Player: "Bob", Hosting: PeerHosted}, origin{})
		alice, e2 := l.join(bob.room.id, JoinRequest{Player: "Alice"}, origin{})
		l.unlock()
		if e1 != nil || e2 != nil {
			t.Fatal(e1, e2)
		}
		roomID := bob.room.id
		has := func(s *seat) bool {
			l.mu.Lock()
			defer l.unlock()
			return l.seats[s.id] == s
		}

		// Bob long-polls for 60 s; Alice calls nothing.
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(context.Background(), "GET", "/api/rooms/"+roomID+"/assignment?seat="+bob.id+"&wait=60s", nil)
		done := make(chan struct{})
		go func() { l.ServeHTTP(rec, req); close(done) }()
		synctest.Wait()

		time.Sleep(DefaultSeatTimeout + time.Second)
		synctest.Wait()
		if has(alice) || !has(bob) {
			t.Fatalf("after %v: alice seated %v (want false), bob %v (want true)", DefaultSeatTimeout+time.Second, has(alice), has(bob))
		}
		<-done // the poll ends at 60 s with "waiting"
		if rec.Code != http.StatusOK {
			t.Fatalf("poll: HTTP %d %s", rec.Code, rec.Body)
		}
		time.Sleep(DefaultSeatTimeout - 2*time.Second)
		synctest.Wait()
		if !has(bob) {
			t.Fatal("Bob's seat went before SeatTimeout after his poll ended")
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if has(bob) {
			t.Fatal("Bob's seat outlived SeatTimeout")
		}
		l.mu.Lock()
		n := len(l.rooms)
		l.unlock()
		if n != 0 {
			t.Fatalf("%d rooms left after every seat expired", n)
		}

		// An assignment waits SeatTimeout for its player.
		l.mu.Lock()
		s, _ := l.create("demo", CreateRequest{Name: "g", Player: "Solo", Hosting: PeerHosted, HostPort: 9},
			origin{remote: netip.MustParseAddr("192.0.2.1")})
		l.types["demo"].MinPlayers = 1
		l.setReady(s, "", true, 0)
		got := s.assignment != nil
		l.unlock()
		if !got {
			t.Fatal("solo room did not start")
		}
		time.Sleep(DefaultSeatTimeout - time.Second)
		synctest.Wait()
		if !has(s) {
			t.Fatal("assignment forgotten early")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if has(s) {
			t.Fatal("assignment kept past SeatTimeout")
		}
	})
}

// TestClose: Close ends sockets with 1001, answers waiting long-polls and
// refuses new requests.
func TestClose(t *testing.T) {
	l, srv := newTestLobby(t, Config{})
	ctx := testCtx(t)
	c := &Client{BaseURL: srv.URL}
	w := dialWS(t, srv, "demo")
	bob, err := c.Create(ctx, "demo", CreateRequest{Name: "g", Player: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan error, 1)
	go func() { _, err := bob.Assignment(ctx); polled <- err }()
	l.Close()
	if code := w.expectClose(); code != websocket.StatusGoingAway {
		t.Errorf("socket closed with %v, want 1001", code)
	}
	if err := <-polled; err == nil || !isCode(err, CodeClosed) {
		t.Errorf("long-poll ended with %v, want %q", err, CodeClosed)
	}
	if _, err := c.Create(ctx, "demo", CreateRequest{Name: "h", Player: "Alice"}); !isCode(err, CodeClosed) {
		t.Errorf("create after Close: %v", err)
	}
}

func isCode(err error, code string) bool {
	e, ok := err.(*Error)
	return ok && e.Code == code
}
