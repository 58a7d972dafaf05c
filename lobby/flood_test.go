package lobby

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// serve runs one API request through l from address from (host:port),
// in the caller's goroutine, and returns the status and body.
func serve(ctx context.Context, l *Lobby, method, target, body, from string) (int, []byte) {
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	req.RemoteAddr = from
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	l.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

// TestRoomFlood: 64 addresses create rooms as fast as the lobby lets
// them (virtual time), each keeping a live seat in every room it holds
// (a long-poll), retrying every 100 ms whatever the answer, their
// starts spread over 10 s so that their tokens come at different times. After
// 30 s of this the type is full (the global rate alone would let them
// fill it in 8 s), and for the next 10 s a real player creates a room
// every 2 s and a friend joins it. With the default limits every one of
// the real player's creates and joins succeeds within 2 s; the type was
// full (creates were refused with 409 and rooms displaced), and the
// lobby created no more rooms than its global rate allows.
func TestRoomFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New(Config{
			Servers: []GameServer{{Addrs: []string{testServerAddr}, Key: testKey}},
			Types:   []GameType{{Name: "demo", MinPlayers: 2, MaxPlayers: 4}},
			Logger:  slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		const warmup = 30 * time.Second
		end := start.Add(warmup + 10*time.Second)

		var created, refusedFull, refusedRate, displaced atomic.Int64
		var wg sync.WaitGroup
		for i := range 64 {
			from := "10.0." + itoa(i/256) + "." + itoa(i%256) + ":4000"
			wg.Go(func() {
				// Spread over the per-address refill interval, so that
				// the addresses do not all spend their tokens at once.
				time.Sleep(time.Duration(i) * 10 * time.Second / 64)
				for time.Now().Before(end) {
					code, body := serve(ctx, l, "POST", "/api/games/demo", `{"name":"spam","player":"bot"}`, from)
					switch code {
					case http.StatusCreated:
						created.Add(1)
						var si SeatInfo
						json.Unmarshal(body, &si)
						wg.Go(func() { // a live seat: long-poll until the room goes
							for ctx.Err() == nil {
								code, _ := serve(ctx, l, "GET", "/api/rooms/"+si.Room.ID+"/assignment?wait=60s&seat="+si.Seat, "", from)
								if code != http.StatusOK {
									if ctx.Err() == nil {
										displaced.Add(1) // the seat went while its player was there
									}
									return
								}
							}
						})
						continue // at once: as fast as the lobby lets it
					case http.StatusConflict:
						refusedFull.Add(1)
					case http.StatusTooManyRequests:
						refusedRate.Add(1)
					default:
						t.Errorf("attacker create: HTTP %d %s", code, body)
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
		}

		// The real player and a friend, from their own addresses.
		var worst time.Duration
		// A failure ends the rounds (not the test at once), so that the
		// flood still stops and every goroutine of the bubble ends.
		for round := 0; round < 5; round++ {
			time.Sleep(time.Until(start.Add(warmup + time.Duration(round)*2*time.Second)))
			t0 := time.Now()
			// untilOK retries a request every 50 ms until it succeeds
			// into v, or 2 s after t0.
			untilOK := func(what, target, body, from string, v *SeatInfo) bool {
				for {
					code, b := serve(ctx, l, "POST", target, body, from)
					if code == http.StatusOK || code == http.StatusCreated || code == http.StatusNoContent {
						json.Unmarshal(b, v)
						return true
					}
					if time.Since(t0) > 2*time.Second {
						t.Errorf("round %d: %s still refused after 2 s: HTTP %d %s", round, what, code, b)
						return false
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			var si, friend SeatInfo
			if !untilOK("the real player's create", "/api/games/demo", `{"name":"ours","player":"me"}`, "198.51.100.7:5000", &si) ||
				!untilOK("the friend's join", "/api/rooms/"+si.Room.ID+"/join", `{"player":"friend"}`, "198.51.100.8:5000", &friend) {
				break
			}
			took := time.Since(t0)
			worst = max(worst, took)
			t.Logf("round %d at %v: created and joined in %v; attackers: %d rooms created, %d displaced, %d refused full, %d rate-limited",
				round, t0.Sub(start), took, created.Load(), displaced.Load(), refusedFull.Load(), refusedRate.Load())
			if !untilOK("leaving", "/api/rooms/"+si.Room.ID+"/leave", `{"seat":"`+friend.Seat+`"}`, "198.51.100.8:5000", &SeatInfo{}) ||
				!untilOK("leaving", "/api/rooms/"+si.Room.ID+"/leave", `{"seat":"`+si.Seat+`"}`, "198.51.100.7:5000", &SeatInfo{}) {
				break
			}
		}
		time.Sleep(time.Until(end))
		elapsed := time.Since(start)
		cancel()
		l.Close()
		wg.Wait()

		t.Logf("40 s of flood from 64 addresses: %d rooms created by them, %d displaced, %d creates refused full, %d rate-limited; the real player's worst create+join %v",
			created.Load(), displaced.Load(), refusedFull.Load(), refusedRate.Load(), worst)
		if displaced.Load() == 0 || refusedFull.Load() == 0 {
			t.Error("the flood never filled the type: the test proves nothing")
		}
		// The global bucket: 20 at once, then 10 a second, for the
		// attackers and the real player (5 rooms) together.
		if n := created.Load() + 5; n > 20+int64(elapsed/(100*time.Millisecond))+1 {
			t.Errorf("%d rooms created in %v: over the global rate", n, elapsed)
		}
	})
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
