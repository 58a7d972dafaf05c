package fleet

import (
	"cmp"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tickwire/tickwire"
)

// DirectoryConfig configures a Directory.
type DirectoryConfig struct {
	// Prefix is the fleet's subject prefix. Empty means DefaultPrefix.
	Prefix string
	// ID is the lobby's fleet id: the ID of the Credentials its NATS
	// connection presents, in whose name it asks servers for seats.
	// Empty means a random id (a NATS without per-connection
	// permissions).
	ID string
	// StaleAfter is how many of a server's heartbeat intervals may pass
	// without one before it is no longer chosen. Zero means 2.5.
	StaleAfter float64
	// ForgetAfter is how long a silent server stays on the list (marked
	// unhealthy) before it is dropped. Zero means one minute.
	ForgetAfter time.Duration
	// RequestTimeout bounds one reservation request. Zero means 2 s.
	RequestTimeout time.Duration
	// MaxServers bounds the servers the Directory tracks; announcements
	// of further servers are dropped and counted. Zero means 10000.
	MaxServers int
	// Logger receives the Directory's log lines. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the Directory's clock. Nil means time.Now.
	Now func() time.Time
}

// Directory is a lobby's view of the fleet: every game server's last
// announcement, and the allocation of new games to them. Its methods
// are safe for concurrent use.
type Directory struct {
	nc   *nats.Conn
	cfg  DirectoryConfig
	subs []*nats.Subscription
	// sealKey is the key servers seal their token keys to: made for
	// this Directory, never sent anywhere but its public half.
	sealKey *ecdh.PrivateKey
	stop    chan struct{}
	// announcing is closed when the lobby's announcements stopped; nil
	// until Announce.
	announcing <-chan struct{}

	mu      sync.Mutex
	servers map[string]*entry
	lobbies map[string]*lobbyEntry // by tag
	self    *LobbyStatus           // this lobby, once announced

	bad, dropped, allocated, failed atomic.Uint64
}

// entry is one server as the Directory knows it.
type entry struct {
	st   Status
	seen time.Time
	// down is set when the server failed to answer a request, at downAt;
	// an announcement one interval later clears it (one sent before the
	// failure may still arrive after it).
	down   string
	downAt time.Time
	// asking is the seats this Directory's Allocate calls are asking
	// the server for right now: counted as reserved, so that rooms
	// filling at once spread instead of all choosing the server that
	// was least loaded before any of them was granted.
	asking int
}

// status is e's last announcement with the seats in flight counted as
// reserved.
func (e *entry) status() Status {
	st := e.st
	st.Reserved += e.asking
	return st
}

// Server is one game server as a Directory sees it.
type Server struct {
	Status
	LastSeen time.Time
	Healthy  bool
	// Why says why the server is not healthy: "silent for 3.1s", "no
	// answer: ...", "draining".
	Why string
}

// DirectoryStats are a Directory's counters.
type DirectoryStats struct {
	BadAnnouncements uint64 // announcements that did not decode or check
	Dropped          uint64 // announcements of servers beyond MaxServers
	Allocated        uint64 // games allocated
	Failed           uint64 // reservation requests that failed or were refused
}

// NewDirectory starts watching the fleet's announcements on nc and asks
// every server to announce itself at once. Close it before closing nc.
func NewDirectory(nc *nats.Conn, cfg DirectoryConfig) (*Directory, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = 2.5
	}
	if cfg.ForgetAfter == 0 {
		cfg.ForgetAfter = time.Minute
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	if cfg.MaxServers == 0 {
		cfg.MaxServers = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ID == "" {
		cfg.ID = strings.ToLower(rand.Text()[:16])
	}
	if cfg.ID == "" || len(cfg.ID) > 64 || strings.ContainsAny(cfg.ID, ".*> \t\r\n") {
		return nil, fmt.Errorf("fleet: lobby id %q", cfg.ID)
	}
	if cfg.StaleAfter < 1 {
		return nil, fmt.Errorf("fleet: StaleAfter %v: want at least one interval", cfg.StaleAfter)
	}
	sk, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	d := &Directory{nc: nc, cfg: cfg, sealKey: sk, servers: map[string]*entry{}, lobbies: map[string]*lobbyEntry{}, stop: make(chan struct{})}
	subs, err := subscribe(nc, map[string]nats.MsgHandler{
		cfg.Prefix + ".servers.*": d.heard,
		cfg.Prefix + ".lobbies.*": d.heardLobby,
		cfg.Prefix + ".hello":     func(*nats.Msg) { d.announceLobby(false) },
	})
	if err != nil {
		return nil, err
	}
	d.subs = subs
	if err := nc.Publish(cfg.Prefix+".hello", nil); err != nil {
		unsubscribe(d.subs)
		return nil, fmt.Errorf("fleet: hello: %w", err)
	}
	return d, nil
}

// Close stops watching and, when the lobby was announced, tells the
// fleet it is gone, waiting at most 500 ms for that message to go (not
// at all while NATS is not connected).
func (d *Directory) Close() error {
	select {
	case <-d.stop:
		return nil
	default:
	}
	close(d.stop)
	d.mu.Lock()
	announcing := d.announcing
	d.mu.Unlock()
	if announcing != nil {
		<-announcing // no announcement may follow the last one
	}
	unsubscribe(d.subs)
	d.announceLobby(true)
	return flushLeaving(d.nc)
}

// Stats returns the Directory's counters.
func (d *Directory) Stats() DirectoryStats {
	return DirectoryStats{BadAnnouncements: d.bad.Load(), Dropped: d.dropped.Load(),
		Allocated: d.allocated.Load(), Failed: d.failed.Load()}
}

// heard takes one announcement.
func (d *Directory) heard(msg *nats.Msg) {
	var st Status
	if err := decode(msg.Data, &st); err != nil {
		d.bad.Add(1)
		return
	}
	if err := st.check(); err != nil || msg.Subject != d.cfg.Prefix+".servers."+st.ID {
		d.bad.Add(1)
		return
	}
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.servers[st.ID]
	switch {
	case st.Leaving:
		delete(d.servers, st.ID)
		return
	case e == nil && len(d.servers) >= d.cfg.MaxServers:
		forget(d.servers, now, d.cfg.ForgetAfter)
		if len(d.servers) >= d.cfg.MaxServers {
			d.dropped.Add(1)
			return
		}
	case e != nil && st.Seq <= e.st.Seq:
		return // older than what we know (a reservation's answer came first)
	}
	if e == nil {
		e = &entry{}
		d.servers[st.ID] = e
		d.cfg.Logger.Info("fleet: server joined", "server", st.Name, "id", st.ID, "types", strings.Join(st.Types, ","), "capacity", st.Capacity)
	}
	e.st, e.seen = st, now
	if e.down != "" && now.Sub(e.downAt) >= st.interval() {
		e.down = ""
	}
}

func (e *entry) lastSeen() time.Time { return e.seen }

// health says whether e may be chosen, and if not why.
func (d *Directory) health(e *entry, now time.Time) (bool, string) {
	switch {
	case !d.fresh(e.seen, e.st.IntervalMs, now):
		return false, fmt.Sprintf("silent for %.1fs", now.Sub(e.seen).Seconds())
	case e.down != "":
		return false, e.down
	case e.st.Draining:
		return false, "draining"
	}
	return true, ""
}

// Servers returns every server the Directory knows, by name.
func (d *Directory) Servers() []Server {
	now := d.cfg.Now()
	d.mu.Lock()
	forget(d.servers, now, d.cfg.ForgetAfter)
	out := make([]Server, 0, len(d.servers))
	for _, e := range d.servers {
		ok, why := d.health(e, now)
		s := Server{Status: e.st, LastSeen: e.seen, Healthy: ok, Why: why}
		s.Types, s.Addrs = slices.Clone(s.Types), slices.Clone(s.Addrs)
		out = append(out, s)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Server) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return out
}

// Allocation is where a new game runs: the server that reserved its
// seats, the addresses its players dial and the key to mint their tokens.
type Allocation struct {
	Server string // the server's name
	ID     string // the server's fleet id
	GameID uint64
	Addrs  []string
	Key    tickwire.Key
}

// ErrNoServer is returned by Allocate when no server can take the game.
var ErrNoServer = errors.New("fleet: no healthy server with free seats runs this game type")

// Allocate reserves seats for game gameID of type typ on the
// least-loaded healthy server that runs it and has room: the server with
// the smallest share of its capacity in use or reserved, servers whose
// tick p99 exceeds their budget last. When the chosen server refuses or
// does not answer, the next is asked. hold is how long the seats stay
// reserved for players who have not connected (the tokens' lifetime).
func (d *Directory) Allocate(ctx context.Context, typ string, gameID uint64, seats int, hold time.Duration) (*Allocation, error) {
	req, _ := json.Marshal(Request{GameID: gameID, Type: typ, Seats: seats, HoldMs: hold.Milliseconds(),
		LobbyKey: d.sealKey.PublicKey().Bytes()})
	var errs []error
	tried := map[string]bool{}
	for {
		e := d.best(typ, seats, tried)
		if e == nil {
			break
		}
		tried[e.ID] = true
		a, err := d.ask(ctx, e, gameID, req, seats)
		if err == nil {
			d.allocated.Add(1)
			return a, nil
		}
		d.failed.Add(1)
		errs = append(errs, fmt.Errorf("%s: %w", e.Name, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, ErrNoServer
	}
	return nil, fmt.Errorf("%w (%w)", ErrNoServer, errors.Join(errs...))
}

// best is the candidate Allocate asks next, nil when none is left; its
// seats count as reserved there until Allocate settles the answer.
func (d *Directory) best(typ string, seats int, tried map[string]bool) *Status {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *entry
	var bst Status
	for _, e := range d.servers {
		st := e.status()
		if ok, _ := d.health(e, now); !ok || tried[st.ID] || !st.Runs(typ) || st.Free() < seats {
			continue
		}
		if best == nil || cmp.Or(
			compareBool(st.Overloaded(), bst.Overloaded()),
			cmp.Compare(st.Load(), bst.Load()),
			cmp.Compare(st.TickP99Ms, bst.TickP99Ms),
			cmp.Compare(st.ID, bst.ID)) < 0 {
			best, bst = e, st
		}
	}
	if best == nil {
		return nil
	}
	best.asking += seats
	c := best.st
	return &c
}

// settle ends the ask for seats on server id, taking the status its
// answer carries (nil without one): granted, that status counts them;
// refused, they were never held.
func (d *Directory) settle(id string, seats int, st *Status) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.servers[id]
	if e == nil {
		return
	}
	e.asking = max(0, e.asking-seats)
	if st != nil && st.Seq > e.st.Seq {
		e.st = *st
	}
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// ask sends one reservation request for seats to st's server.
func (d *Directory) ask(ctx context.Context, st *Status, gameID uint64, req []byte, seats int) (*Allocation, error) {
	rctx, cancel := context.WithTimeout(ctx, d.cfg.RequestTimeout)
	defer cancel()
	msg, err := d.nc.RequestWithContext(rctx, d.allocSubject(st.ID), req)
	var answered *Status
	defer func() { d.settle(st.ID, seats, answered) }()
	if err != nil {
		if ctx.Err() == nil {
			// Silent or gone (nats.ErrNoResponders: nobody subscribes
			// any more): not chosen again until it announces itself.
			d.markDown(st.ID, "no answer: "+err.Error())
		}
		return nil, err
	}
	var g Grant
	if err := decode(msg.Data, &g); err != nil {
		return nil, fmt.Errorf("bad answer: %w", err)
	}
	if g.Status.ID == st.ID && g.Status.check() == nil {
		answered = &g.Status
	}
	if g.Error != "" {
		return nil, errors.New(g.Error)
	}
	a := &Allocation{Server: st.Name, ID: st.ID, GameID: gameID, Addrs: g.Addrs}
	key, err := openTokenKey(d.sealKey, g.ServerKey, g.SealedKey, st.ID, gameID)
	if err != nil {
		d.Release(a)
		return nil, fmt.Errorf("bad key in the answer: %w", err)
	}
	if len(g.Addrs) == 0 || len(g.Addrs) > MaxAddrs {
		d.Release(a)
		return nil, fmt.Errorf("answer with %d addresses", len(g.Addrs))
	}
	a.Key = key
	return a, nil
}

// allocSubject is where this lobby's requests to server id go.
func (d *Directory) allocSubject(id string) string {
	return d.cfg.Prefix + ".alloc." + id + "." + d.cfg.ID
}

// Release gives back the seats of a: its room went away before its
// players had their tokens. It does not wait for the server.
func (d *Directory) Release(a *Allocation) {
	b, _ := json.Marshal(Request{GameID: a.GameID, Release: true})
	if err := d.nc.Publish(d.allocSubject(a.ID), b); err != nil {
		d.cfg.Logger.Debug("fleet: release", "server", a.Server, "err", err)
	}
}

func (d *Directory) markDown(id, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.servers[id]; e != nil {
		e.down, e.downAt = why, d.cfg.Now()
		d.cfg.Logger.Warn("fleet: server did not answer", "server", e.st.Name, "id", id, "why", why)
	}
}
