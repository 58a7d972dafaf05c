package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultPrefix is the subject prefix of a fleet's NATS messages.
const DefaultPrefix = "tickwire.fleet"

// MaxMessage bounds every fleet message decoded: a Status or a Grant
// with MaxTypes types and MaxAddrs addresses fits many times over. Give
// it to the NATS server as its payload limit (embedded.Config.MaxPayload).
const MaxMessage = 16 << 10

// Bounds on what an announcement may carry.
const (
	MaxTypes = 32
	MaxAddrs = 4
	maxText  = 256
)

// Status is what a game server announces on every heartbeat, and what
// it answers a reservation with (its load after the reservation).
type Status struct {
	ID       string   `json:"id"`   // unique per process, random
	Name     string   `json:"name"` // for people: dashboards, logs
	Types    []string `json:"types"`
	Addrs    []string `json:"addrs"` // UDP host:port players dial, in order
	Capacity int      `json:"capacity"`
	Players  int      `json:"players"`  // connected
	Reserved int      `json:"reserved"` // seats granted whose players have not connected yet
	Games    int      `json:"games"`
	// TickP99Ms is the 99th percentile of the server's recent tick
	// durations; TickBudgetMs is one tick at its rate.
	TickP99Ms    float64 `json:"tickP99Ms"`
	TickBudgetMs float64 `json:"tickBudgetMs"`
	// Draining is set while the server shuts down: it takes no new game.
	Draining bool `json:"draining,omitempty"`
	// Leaving is set on the server's last announcement: forget it.
	Leaving bool `json:"leaving,omitempty"`
	// IntervalMs is the server's heartbeat interval.
	IntervalMs int64  `json:"intervalMs"`
	Seq        uint64 `json:"seq"`
}

// Free is how many more players the server can take.
func (s *Status) Free() int { return s.Capacity - s.Players - s.Reserved }

// Load is the fraction of the capacity in use or promised.
func (s *Status) Load() float64 {
	if s.Capacity <= 0 {
		return 1
	}
	return float64(s.Players+s.Reserved) / float64(s.Capacity)
}

// Runs reports whether the server runs games of type t.
func (s *Status) Runs(t string) bool {
	for _, x := range s.Types {
		if x == t {
			return true
		}
	}
	return false
}

// Overloaded reports whether the server's tick p99 exceeds its budget.
func (s *Status) Overloaded() bool { return s.TickBudgetMs > 0 && s.TickP99Ms > s.TickBudgetMs }

func (s *Status) interval() time.Duration { return time.Duration(s.IntervalMs) * time.Millisecond }

// check rejects an announcement no honest server sends.
func (s *Status) check() error {
	switch {
	case s.ID == "" || len(s.ID) > 64 || strings.ContainsAny(s.ID, ".*> \t\r\n"):
		return fmt.Errorf("bad server id %q", s.ID)
	case len(s.Name) > maxText:
		return errors.New("name too long")
	case len(s.Types) == 0 || len(s.Types) > MaxTypes:
		return fmt.Errorf("%d game types (1..%d)", len(s.Types), MaxTypes)
	case len(s.Addrs) == 0 || len(s.Addrs) > MaxAddrs:
		return fmt.Errorf("%d addresses (1..%d)", len(s.Addrs), MaxAddrs)
	case s.Capacity < 0 || s.Players < 0 || s.Reserved < 0 || s.Games < 0:
		return errors.New("negative count")
	case s.IntervalMs <= 0 || s.IntervalMs > 60_000:
		return fmt.Errorf("heartbeat interval %d ms (1..60000)", s.IntervalMs)
	}
	for _, t := range append(s.Types[:len(s.Types):len(s.Types)], s.Addrs...) {
		if t == "" || len(t) > maxText {
			return errors.New("empty or long type or address")
		}
	}
	return nil
}

// Request asks a server to reserve seats for a new game, or to release
// them. It goes to "<prefix>.alloc.<server id>.<lobby id>": NATS lets a
// lobby send only in its own name (PermissionsFor).
type Request struct {
	GameID uint64 `json:"gameId,string"`
	Type   string `json:"type"`
	Seats  int    `json:"seats"`
	// HoldMs is how long the seats stay reserved for players who have
	// not connected: the lifetime of the tokens the lobby mints.
	HoldMs int64 `json:"holdMs"`
	// LobbyKey is the lobby's X25519 public key (32 bytes), to which
	// the server seals its token key.
	LobbyKey []byte `json:"lobbyKey,omitempty"`
	// Release gives back the seats of game GameID that this lobby
	// reserved (its room went away); it is answered by nothing.
	Release bool `json:"release,omitempty"`
}

// Grant answers a Request: the seats are reserved (Error empty) or not.
type Grant struct {
	Error string   `json:"error,omitempty"`
	Addrs []string `json:"addrs,omitempty"`
	// ServerKey is the server's one-time X25519 public key and
	// SealedKey its token key sealed to the Request's LobbyKey, the
	// server's id and the game id (sealTokenKey).
	ServerKey []byte `json:"serverKey,omitempty"`
	SealedKey []byte `json:"sealedKey,omitempty"`
	Status    Status `json:"status"` // the server after the reservation
}

func decode(b []byte, v any) error {
	if len(b) > MaxMessage {
		return fmt.Errorf("%d-byte message (at most %d)", len(b), MaxMessage)
	}
	return json.Unmarshal(b, v)
}

// every runs f every interval until stop is closed; the channel it
// returns is closed once it stopped.
func every(interval time.Duration, stop <-chan struct{}, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return done
}

// lastSeen is what forget needs of a Directory's entries.
type lastSeen interface{ lastSeen() time.Time }

// forget drops the entries of m not heard from for after.
func forget[E lastSeen](m map[string]E, now time.Time, after time.Duration) {
	for k, e := range m {
		if now.Sub(e.lastSeen()) > after {
			delete(m, k)
		}
	}
}

// leaveFlush bounds the wait for a Member's or Directory's last message
// on Close: a process whose NATS is gone must still stop at once.
const leaveFlush = 500 * time.Millisecond

// flushLeaving sends what nc buffered, waiting at most leaveFlush, and
// not at all when nc is not connected (the fleet then learns of the
// leave from the silence).
func flushLeaving(nc *nats.Conn) error {
	if !nc.IsConnected() {
		return fmt.Errorf("fleet: NATS is %v: the last message is not sent", nc.Status())
	}
	if err := nc.FlushTimeout(leaveFlush); err != nil {
		return fmt.Errorf("fleet: the last message: %w", err)
	}
	return nil
}

// subscribe subscribes h to each subject, or to none when one fails.
func subscribe(nc *nats.Conn, handlers map[string]nats.MsgHandler) ([]*nats.Subscription, error) {
	var subs []*nats.Subscription
	for subj, h := range handlers {
		sub, err := nc.Subscribe(subj, h)
		if err != nil {
			unsubscribe(subs)
			return nil, fmt.Errorf("fleet: subscribe %s: %w", subj, err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func unsubscribe(subs []*nats.Subscription) {
	for _, s := range subs {
		s.Unsubscribe()
	}
}
