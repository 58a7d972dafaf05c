package fleet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// AgonesPortEnv names the environment variable Agones sets to the port of
// its SDK sidecar's REST API on localhost.
const AgonesPortEnv = "AGONES_SDK_HTTP_PORT"

// AgonesURLFromEnv returns the sidecar's base URL when the process runs
// under Agones (AgonesPortEnv is set), else "".
func AgonesURLFromEnv() (string, error) {
	p := os.Getenv(AgonesPortEnv)
	if p == "" {
		return "", nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("fleet: %s=%q is not a port", AgonesPortEnv, p)
	}
	return "http://localhost:" + p, nil
}

// AgonesConfig configures the reports to an Agones SDK sidecar.
type AgonesConfig struct {
	// URL is the sidecar's REST API, e.g. "http://localhost:9358"
	// (AgonesURLFromEnv). Required.
	URL string
	// HealthEvery is the interval of health pings and player counts.
	// Zero means 2 s (Agones' default health check allows 5 s).
	HealthEvery time.Duration
	// Capacity is the server's player capacity, set on the "players"
	// counter.
	Capacity int
	// Load reports the server's present load. Required.
	Load func() Load
	// HTTP makes the requests. Nil means a client with a 2 s timeout.
	HTTP *http.Client
	// Logger receives the reporter's log lines. Nil means slog.Default().
	Logger *slog.Logger
}

// Agones reports a game server's life to the Agones SDK sidecar through
// its REST API: Ready once it serves, a Health ping every HealthEvery,
// the player count and capacity on the "players" counter (Counters and
// Lists, the successor of the alpha player tracking), Allocate when the
// fleet reserves its first seats (Agones then does not scale it down),
// and Shutdown when its last game ends, after which Ended is closed.
type Agones struct {
	cfg   AgonesConfig
	stop  chan struct{}
	done  chan struct{}
	ended chan struct{}

	allocOnce sync.Once
}

// StartAgones marks the server Ready, retrying while the sidecar is not
// up yet (it may start after the game server) until ctx ends, and starts
// the health pings.
func StartAgones(ctx context.Context, cfg AgonesConfig) (*Agones, error) {
	if cfg.URL == "" || cfg.Load == nil {
		return nil, fmt.Errorf("fleet: AgonesConfig needs URL and Load")
	}
	if cfg.HealthEvery == 0 {
		cfg.HealthEvery = 2 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 2 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Agones{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), ended: make(chan struct{})}
	for {
		err := a.call(ctx, http.MethodPost, "/ready", "{}")
		if err == nil {
			break
		}
		cfg.Logger.Warn("agones: not ready yet", "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("fleet: Agones sidecar at %s: %w", cfg.URL, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	cfg.Logger.Info("agones: marked Ready", "sdk", cfg.URL)
	go a.run()
	return a, nil
}

// Allocated marks the server Allocated, once: the fleet reserved seats
// on it. It does not wait for the sidecar.
func (a *Agones) Allocated() {
	a.allocOnce.Do(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := a.call(ctx, http.MethodPost, "/allocate", "{}"); err != nil {
				a.cfg.Logger.Warn("agones: allocate", "err", err)
			}
		}()
	})
}

// Ended is closed once the server called Shutdown because its last game
// ended: the process should stop.
func (a *Agones) Ended() <-chan struct{} { return a.ended }

// Close stops the health pings (Agones then restarts or removes the
// server: call it when the process stops).
func (a *Agones) Close() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}

func (a *Agones) run() {
	defer close(a.done)
	t := time.NewTicker(a.cfg.HealthEvery)
	defer t.Stop()
	lastPlayers, hadGames := -1, false
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		// A sidecar's answer may take longer than a short ping period
		// on a busy machine: a call given up on after it arrived would
		// be counted failed and repeated.
		ctx, cancel := context.WithTimeout(context.Background(), max(a.cfg.HealthEvery, time.Second))
		if err := a.call(ctx, http.MethodPost, "/health", "{}"); err != nil {
			a.cfg.Logger.Warn("agones: health", "err", err)
		}
		l := a.cfg.Load()
		if l.Players != lastPlayers {
			body := fmt.Sprintf(`{"count":"%d","capacity":"%d"}`, l.Players, a.cfg.Capacity)
			if err := a.call(ctx, http.MethodPatch, "/v1beta1/counters/players", body); err != nil {
				a.cfg.Logger.Warn("agones: player count", "err", err)
			} else {
				lastPlayers = l.Players
			}
		}
		hadGames = hadGames || l.Games > 0
		if hadGames && l.Games == 0 && l.Players == 0 {
			err := a.call(ctx, http.MethodPost, "/shutdown", "{}")
			cancel()
			if err != nil {
				a.cfg.Logger.Warn("agones: shutdown", "err", err)
				continue // try again on the next ping
			}
			a.cfg.Logger.Info("agones: the last game ended: Shutdown")
			close(a.ended)
			return
		}
		cancel()
	}
}

// call makes one request to the sidecar.
func (a *Agones) call(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, a.cfg.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
