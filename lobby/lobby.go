package lobby

import (
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickwire/tickwire/internal/addrlimit"
)

// Lobby is the lobby's public HTTP handler: pages, WebSockets and the JSON
// API. Create it with New, serve it at the root of an http.Server (or of a
// ServeMux pattern "/"), serve Admin on a listener only operators reach,
// and Close it on shutdown. It is safe for concurrent use.
type Lobby struct {
	cfg      Config
	types    map[string]*gameType
	order    []*gameType // menu order
	mux      *http.ServeMux
	admin    *http.ServeMux
	xorigin  *http.CrossOriginProtection
	pages    *template.Template
	static   fs.FS
	metrics  *metrics
	gatherer prometheus.Gatherer

	now func() time.Time // the clock of the rate limits; tests replace it

	// The per-address limits (limits.go), used with mu held. A nil
	// Buckets is a rate limit turned off.
	createRate, joinRate, chatRate *addrlimit.Buckets
	globalCreate                   *addrlimit.Buckets // one bucket, the zero Key
	roomsByAddr                    addrlimit.Counts   // open rooms each address created
	socketsByAddr                  addrlimit.Counts   // sockets each address holds or is being accepted

	mu    sync.Mutex
	rooms map[string]*room
	seats map[string]*seat
	// tickets holds the seats by rendezvous ticket (nat.go); written with
	// mu and ticketMu held, read with either: NoteMapping rejects an
	// unknown ticket without taking mu.
	tickets  map[[ticketSize]byte]*seat
	ticketMu sync.RWMutex
	sockets  map[*socket]struct{}
	nsockets int // sockets accepted or being accepted
	closed   bool
	done     chan struct{} // closed by Close
	after    []func()      // run by unlock, after l.mu is released

	names      map[uint64][]playerName // players' names of assigned games (names.go)
	namedGames []uint64                // their ids, oldest first
}

// New returns a lobby for cfg (see Config for the defaults).
func New(cfg Config) (*Lobby, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Lobby{
		cfg:     cfg,
		types:   map[string]*gameType{},
		rooms:   map[string]*room{},
		seats:   map[string]*seat{},
		sockets: map[*socket]struct{}{},
		now:     time.Now,
		done:    make(chan struct{}),

		createRate:   cfg.CreateRate.buckets(),
		globalCreate: cfg.GlobalCreateRate.buckets(),
		joinRate:     cfg.JoinRate.buckets(),
		chatRate:     cfg.ChatRate.buckets(),
	}
	for _, gt := range cfg.Types {
		t := &gameType{GameType: gt, watchers: map[*socket]struct{}{}}
		for i := range cfg.Servers {
			s := &cfg.Servers[i]
			if len(s.Types) == 0 || contains(s.Types, gt.Name) {
				t.servers = append(t.servers, s)
			}
		}
		t.fleet = len(t.servers) == 0 && cfg.Fleet != nil
		l.types[gt.Name] = t
		l.order = append(l.order, t)
	}
	if err := l.initMetrics(); err != nil {
		return nil, err
	}
	if err := l.initPages(); err != nil {
		return nil, err
	}
	l.routes()
	return l, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ServeHTTP serves the lobby's public pages, sockets and API. Nothing it
// serves names a player's address.
func (l *Lobby) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.mux.ServeHTTP(w, r) }

// ProtectCrossOrigin returns h behind the lobby's own cross-origin
// protection: a browser request that another site's page makes (by
// Sec-Fetch-Site or Origin) is refused with 403 and a JSON Error
// "cross_origin" before h runs; GET and HEAD, same-origin requests and
// tools (no such headers) pass. The lobby puts its JSON API behind it;
// endpoints served next to the lobby use it to refuse the same requests
// the same way (tickwire-server's POST /api/join).
func (l *Lobby) ProtectCrossOrigin(h http.Handler) http.Handler { return l.xorigin.Handler(h) }

// Admin returns the operator pages: the live dashboard (/dashboard), its
// numbers with every game connection's address (GET /api/stats),
// Prometheus /metrics and the static files they use; / leads to the
// dashboard. Serve it on a listener only operators reach (loopback or a
// private network), never on the public one.
func (l *Lobby) Admin() http.Handler { return l.admin }

// Close shuts the lobby: open WebSockets are closed with status 1001
// ("going away"), waiting long-polls answer "closed", and every later
// request is refused. It does not wait for the connections to finish.
func (l *Lobby) Close() error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	for s := range l.sockets {
		s.closeAfterSend(websocket.StatusGoingAway, "lobby shutting down")
	}
	for _, s := range l.seats {
		if s.expiry != nil {
			s.expiry.Stop()
		}
	}
	return nil
}

// unlock releases l.mu and runs the callbacks queued while it was held.
func (l *Lobby) unlock() {
	after := l.after
	l.after = nil
	l.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// routes lists every endpoint; the package doc describes them.
func (l *Lobby) routes() {
	static := http.StripPrefix("/static/", http.FileServerFS(l.static))
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", l.serveMenu)
	m.HandleFunc("GET /games/{type}", l.serveTypePage)
	m.HandleFunc("GET /games/{type}/ws", l.serveTypeSocket)
	m.Handle("GET /static/", static)

	api := http.NewServeMux()
	api.HandleFunc("GET /api/types", l.apiTypes)
	api.HandleFunc("GET /api/games/{type}", l.apiRooms)
	api.HandleFunc("POST /api/games/{type}", l.apiCreate)
	api.HandleFunc("GET /api/rooms/{room}", l.elsewhere(l.apiRoom))
	api.HandleFunc("POST /api/rooms/{room}/join", l.elsewhere(l.apiJoin))
	api.HandleFunc("POST /api/rooms/{room}/ready", l.elsewhere(l.apiReady))
	api.HandleFunc("POST /api/rooms/{room}/chat", l.elsewhere(l.apiChat))
	api.HandleFunc("POST /api/rooms/{room}/leave", l.elsewhere(l.apiLeave))
	api.HandleFunc("GET /api/rooms/{room}/assignment", l.elsewhere(l.apiAssignment))
	api.HandleFunc("GET /api/play/{game}/players", l.apiPlayers)
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		l.writeError(w, errorf(CodeBadRequest, "no API endpoint %s %s (see the lobby package doc)", r.Method, r.URL.Path))
	})
	// Browsers may not POST to the API from other sites; tools (no
	// Origin or Sec-Fetch-Site header) always may.
	l.xorigin = http.NewCrossOriginProtection()
	l.xorigin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.writeError(w, errorf(CodeCrossOrigin, "a page on another site may not call %s %s", r.Method, r.URL.Path))
	}))
	m.Handle("/api/", l.ProtectCrossOrigin(api))
	l.mux = m

	a := http.NewServeMux()
	a.Handle("GET /{$}", http.RedirectHandler("/dashboard", http.StatusFound))
	a.HandleFunc("GET /dashboard", l.serveDashboard)
	a.HandleFunc("GET /api/stats", l.apiStats)
	a.Handle("GET /metrics", l.metricsHandler())
	a.Handle("GET /static/", static)
	l.admin = a
}

func (l *Lobby) serveTypeSocket(w http.ResponseWriter, r *http.Request) {
	t := l.types[r.PathValue("type")]
	if t == nil {
		l.writeError(w, errorf(CodeUnknownType, "there is no game type %q", r.PathValue("type")))
		return
	}
	l.serveSocket(w, r, t)
}
