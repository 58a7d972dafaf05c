package fleet

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire"
)

// MemberConfig describes a game server to its fleet.
type MemberConfig struct {
	// Prefix is the fleet's subject prefix. Empty means DefaultPrefix.
	Prefix string
	// ID is the server's fleet id: the ID of the Credentials its NATS
	// connection presents, which that connection's permissions name.
	// Empty means a random id (a NATS without per-connection
	// permissions).
	ID string
	// Name labels the server for people. Empty means its first address.
	Name string
	// Types are the game types it runs (1..MaxTypes). Required.
	Types []string
	// Addrs are the UDP addresses players dial (1..MaxAddrs). Required.
	Addrs []string
	// Capacity is how many players it takes in all. Required.
	Capacity int
	// Key is its connect-token key, handed to the lobby that reserves
	// seats, sealed to that lobby's key, so the lobby can mint tokens
	// for them.
	Key tickwire.Key
	// LobbyGrants bounds the reservations one lobby (by its fleet id)
	// is granted per minute; more are refused. Zero means 120; a lobby
	// that asks more is broken or not ours.
	LobbyGrants int
	// Interval is the heartbeat interval. Zero means 500 ms: with the
	// Directory's default StaleAfter, a server that dies is no longer
	// chosen within 1.25 s.
	Interval time.Duration
	// Load reports the server's present load; called on every heartbeat
	// and reservation, from the Member's goroutines. Required.
	Load func() Load
	// OnGrant, when set, is called after every reservation granted
	// (Agones marks the server Allocated on the first).
	OnGrant func(Request)
	// Logger receives the Member's log lines. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the reservations. Nil means time.Now.
	Now func() time.Time
}

// Load is a game server's present load.
type Load struct {
	Players    int // connected players
	Games      int // running games
	TickP99    time.Duration
	TickBudget time.Duration
}

// holdSlack is how long a reservation outlives its tokens: a player who
// connects at the last moment still finds its seat counted.
const holdSlack = 5 * time.Second

// Bounds on a Request's hold.
const (
	minHold = time.Second
	maxHold = 10 * time.Minute
)

// Member is a game server's place in its fleet: it announces the
// server's Status every Interval and reserves seats when a lobby asks.
// Its methods are safe for concurrent use.
type Member struct {
	nc   *nats.Conn
	cfg  MemberConfig
	id   string
	subs []*nats.Subscription
	stop chan struct{}
	done <-chan struct{} // closed when the heartbeat stopped

	mu       sync.Mutex
	seq      uint64
	draining bool
	holds    map[uint64]*hold // by game id
	lobbies  map[string]*grantWindow

	granted, refused, bad, released atomic.Uint64
}

// hold is the seats reserved for one game.
type hold struct {
	seats int // not yet taken by a connected player
	until time.Time
	lobby string // the lobby that reserved them
}

// grantWindow counts one lobby's reservations in the minute from start.
type grantWindow struct {
	start time.Time
	n     int
}

// maxLobbies bounds the lobbies whose reservations a Member counts at
// once; a lobby beyond them is refused until a minute window ends.
const maxLobbies = 1024

// MemberStats are a Member's counters.
type MemberStats struct {
	Granted     uint64 // reservations granted
	Refused     uint64 // reservations refused (full, wrong type, draining, the lobby's rate)
	BadRequests uint64 // requests that did not decode or made no sense
	Released    uint64 // reservations given back by their lobby
}

// Join announces a game server on nc and starts its heartbeat. Close
// the Member before closing nc.
func Join(nc *nats.Conn, cfg MemberConfig) (*Member, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Interval == 0 {
		cfg.Interval = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LobbyGrants == 0 {
		cfg.LobbyGrants = 120
	}
	if cfg.ID == "" {
		cfg.ID = strings.ToLower(rand.Text()[:16])
	}
	if len(cfg.Addrs) > 0 && cfg.Name == "" {
		cfg.Name = cfg.Addrs[0]
	}
	switch {
	case cfg.Load == nil:
		return nil, errors.New("fleet: MemberConfig.Load is required")
	case cfg.Capacity < 1:
		return nil, fmt.Errorf("fleet: capacity %d: want at least 1", cfg.Capacity)
	case cfg.Interval < 10*time.Millisecond || cfg.Interval > time.Minute:
		return nil, fmt.Errorf("fleet: heartbeat interval %v out of range 10ms..1m", cfg.Interval)
	}
	m := &Member{nc: nc, cfg: cfg, id: cfg.ID, holds: map[uint64]*hold{}, lobbies: map[string]*grantWindow{},
		stop: make(chan struct{})}
	st := m.Status()
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("fleet: %v", err)
	}
	subs, err := subscribe(nc, map[string]nats.MsgHandler{
		cfg.Prefix + ".alloc." + m.id + ".*": m.serve,
		cfg.Prefix + ".hello":                func(*nats.Msg) { m.announce() },
	})
	if err != nil {
		return nil, err
	}
	m.subs = subs
	m.announce()
	m.done = every(m.cfg.Interval, m.stop, m.announce)
	return m, nil
}

// ID is the server's id in the fleet.
func (m *Member) ID() string { return m.id }

// Stats returns the Member's counters.
func (m *Member) Stats() MemberStats {
	return MemberStats{Granted: m.granted.Load(), Refused: m.refused.Load(), BadRequests: m.bad.Load(), Released: m.released.Load()}
}

// Arrived tells the Member that players of game gameID connected: they
// take seats reserved for that game, if any.
func (m *Member) Arrived(gameID uint64, players int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.holds[gameID]; h != nil {
		h.seats -= players
		if h.seats <= 0 {
			delete(m.holds, gameID)
		}
	}
}

// Drain announces that the server takes no new game from now on.
func (m *Member) Drain() {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	m.announce()
}

// Close stops the heartbeat, tells the fleet the server is gone and
// stops answering requests. It waits at most 500 ms for the leave
// message to go, and not at all while NATS is not connected.
func (m *Member) Close() error {
	select {
	case <-m.stop:
		return nil
	default:
	}
	close(m.stop)
	<-m.done
	unsubscribe(m.subs)
	st := m.Status()
	st.Draining, st.Leaving = true, true
	m.publish(st)
	return flushLeaving(m.nc)
}

// Status is what the Member announces now.
func (m *Member) Status() Status {
	l := m.cfg.Load()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.statusLocked(l)
}

func (m *Member) statusLocked(l Load) Status {
	now := m.cfg.Now()
	reserved := 0
	for id, h := range m.holds {
		if now.After(h.until) {
			delete(m.holds, id)
			continue
		}
		reserved += h.seats
	}
	m.seq++
	return Status{
		ID: m.id, Name: m.cfg.Name, Types: m.cfg.Types, Addrs: m.cfg.Addrs,
		Capacity: m.cfg.Capacity, Players: l.Players, Reserved: reserved, Games: l.Games,
		TickP99Ms: ms(l.TickP99), TickBudgetMs: ms(l.TickBudget), Draining: m.draining,
		IntervalMs: m.cfg.Interval.Milliseconds(), Seq: m.seq,
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (m *Member) announce() { m.publish(m.Status()) }

func (m *Member) publish(st Status) {
	b, _ := json.Marshal(st)
	if err := m.nc.Publish(m.cfg.Prefix+".servers."+m.id, b); err != nil {
		m.cfg.Logger.Debug("fleet: announce", "err", err)
	}
}

// serve answers one reservation request, from the lobby its subject's
// last token names.
func (m *Member) serve(msg *nats.Msg) {
	lobby := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
	g, answer := m.reserve(lobby, msg.Data)
	if !answer || msg.Reply == "" {
		return
	}
	b, _ := json.Marshal(g)
	if err := msg.Respond(b); err != nil {
		m.cfg.Logger.Debug("fleet: answer a reservation", "err", err)
	}
}

// reserve takes one request of lobby; answer is false for a release.
func (m *Member) reserve(lobby string, data []byte) (g Grant, answer bool) {
	var req Request
	if err := decode(data, &req); err != nil {
		m.bad.Add(1)
		return Grant{Error: "bad request: " + err.Error()}, true
	}
	if req.Release {
		m.release(lobby, req.GameID)
		return Grant{}, false
	}
	// The hold is checked in milliseconds: a huge HoldMs would wrap
	// around as a Duration.
	keep := time.Duration(req.HoldMs) * time.Millisecond
	if req.GameID == 0 || req.Seats < 1 || req.HoldMs < minHold.Milliseconds() || req.HoldMs > maxHold.Milliseconds() ||
		len(req.LobbyKey) != x25519Len {
		m.bad.Add(1)
		return Grant{Error: fmt.Sprintf("bad request: game %d, %d seats, hold %v, %d-byte lobby key (want a game id, 1+ seats, hold %v..%v, a %d-byte key)",
			req.GameID, req.Seats, keep, len(req.LobbyKey), minHold, maxHold, x25519Len)}, true
	}
	// The key is sealed before any seat is held: a lobby key that is no
	// X25519 key costs nothing.
	ephPub, sealed, err := sealTokenKey(m.cfg.Key, req.LobbyKey, m.id, req.GameID)
	if err != nil {
		m.bad.Add(1)
		return Grant{Error: "bad request: " + err.Error()}, true
	}
	l := m.cfg.Load()
	m.mu.Lock()
	st := m.statusLocked(l)
	var why string
	switch {
	case st.Draining:
		why = "draining"
	case !st.Runs(req.Type):
		why = fmt.Sprintf("does not run %q", req.Type)
	case m.holds[req.GameID] != nil:
		// The same game asked for again (our Directory never re-asks a
		// server, but any NATS client may): its seats are reserved
		// already, and counting them twice would leak a hold.
	case req.Seats > st.Free():
		why = fmt.Sprintf("full: %d players, %d reserved of %d", st.Players, st.Reserved, st.Capacity)
	case !m.countGrantLocked(lobby):
		why = fmt.Sprintf("this lobby had %d reservations in the last minute", m.cfg.LobbyGrants)
	default:
		m.holds[req.GameID] = &hold{seats: req.Seats, until: m.cfg.Now().Add(keep + holdSlack), lobby: lobby}
		st.Reserved += req.Seats
	}
	m.mu.Unlock()
	if why != "" {
		m.refused.Add(1)
		return Grant{Error: why, Status: st}, true
	}
	m.granted.Add(1)
	if m.cfg.OnGrant != nil {
		m.cfg.OnGrant(req)
	}
	m.cfg.Logger.Info("fleet: seats reserved", "game", req.GameID, "type", req.Type, "seats", req.Seats,
		"players", st.Players, "reserved", st.Reserved, "capacity", st.Capacity)
	return Grant{Addrs: m.cfg.Addrs, ServerKey: ephPub, SealedKey: sealed, Status: st}, true
}

// countGrantLocked counts one reservation of lobby in its minute
// window, or reports false when the window is full.
func (m *Member) countGrantLocked(lobby string) bool {
	now := m.cfg.Now()
	w := m.lobbies[lobby]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if w == nil && len(m.lobbies) >= maxLobbies {
			for id, o := range m.lobbies {
				if now.Sub(o.start) >= time.Minute {
					delete(m.lobbies, id)
				}
			}
			if len(m.lobbies) >= maxLobbies {
				return false
			}
		}
		w = &grantWindow{start: now}
		m.lobbies[lobby] = w
	}
	if w.n >= m.cfg.LobbyGrants {
		return false
	}
	w.n++
	return true
}

// release gives back the seats lobby reserved for game gameID.
func (m *Member) release(lobby string, gameID uint64) {
	m.mu.Lock()
	h := m.holds[gameID]
	ok := h != nil && h.lobby == lobby
	if ok {
		delete(m.holds, gameID)
	}
	m.mu.Unlock()
	if ok {
		m.released.Add(1)
		m.cfg.Logger.Info("fleet: seats released", "game", gameID, "seats", h.seats)
	}
}
