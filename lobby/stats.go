package lobby

import (
	"net/http"
	"time"
)

// StatsSource feeds the dashboard with what the game server sees. The
// game server implements it; the lobby calls Stats about once a second
// per open dashboard page, from HTTP handler goroutines, possibly
// concurrently, so it must be safe for concurrent use and cheap (copy
// counters under a lock; do not stop the tick loop). The returned value
// belongs to the caller.
type StatsSource interface {
	Stats() ServerStats
}

// StatsFunc adapts a function to StatsSource.
type StatsFunc func() ServerStats

// Stats calls f.
func (f StatsFunc) Stats() ServerStats { return f() }

// ServerStats is one sample of a game server.
type ServerStats struct {
	Tick  TickStats
	Games []GameStats
}

// TickStats is the tick loop's timing over the last second or so.
type TickStats struct {
	Rate  float64       // configured ticks per second
	Ticks uint64        // ticks run since start
	Last  time.Duration // how long the last tick took
	Mean  time.Duration // mean tick duration over the window
	Max   time.Duration // longest tick in the window
}

// GameStats is one running game.
type GameStats struct {
	ID          uint64
	Type        string
	Tick        uint64 // the game's current tick
	Entities    int
	Connections []ConnStats
	// Timeline, if set, is the URL of the game's live timeline on the
	// operator listener (the dashboard links it).
	Timeline string
}

// ConnStats is one client connection to a game.
type ConnStats struct {
	ClientID uint64
	Addr     string   // the client's UDP address
	Players  []uint16 // player slots it carries
	RTT      time.Duration
	Jitter   time.Duration
	Loss     float64 // fraction of packets lost, 0..1, recent
	SendBps  float64 // bytes per second to the client, recent
	RecvBps  float64 // bytes per second from the client, recent
}

// statsJSON is GET /api/stats on the Admin handler: durations in
// milliseconds, ids as strings. It names every connection's address, so
// the public handler does not serve it.
type statsJSON struct {
	Time   time.Time        `json:"time"`
	Lobby  lobbyStatsJSON   `json:"lobby"`
	Server *serverStatsJSON `json:"server"` // null without a StatsSource
	// Fleet is every game server of Config.Fleet; absent without one.
	Fleet []fleetServerJSON `json:"fleet,omitempty"`
	// Lobbies are the lobbies announced on the fleet, this one included
	// once it announced itself.
	Lobbies []fleetLobbyJSON `json:"lobbies,omitempty"`
}

type fleetLobbyJSON struct {
	Tag     string `json:"tag"`
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Self    bool   `json:"self"`
}

type fleetServerJSON struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Types        []string `json:"types"`
	Addrs        []string `json:"addrs"`
	Capacity     int      `json:"capacity"`
	Players      int      `json:"players"`
	Reserved     int      `json:"reserved"`
	Games        int      `json:"games"`
	TickP99Ms    float64  `json:"tickP99Ms"`
	TickBudgetMs float64  `json:"tickBudgetMs"`
	Healthy      bool     `json:"healthy"`
	Why          string   `json:"why,omitempty"`
	SilentMs     float64  `json:"silentMs"`
}

type lobbyStatsJSON struct {
	Sockets  int        `json:"sockets"`
	APISeats int        `json:"apiSeats"`
	Rooms    int        `json:"rooms"`
	Players  int        `json:"players"`
	Types    []TypeInfo `json:"types"`
}

type serverStatsJSON struct {
	Tick struct {
		Rate     float64 `json:"rateHz"`
		Ticks    uint64  `json:"ticks"`
		BudgetMs float64 `json:"budgetMs"`
		LastMs   float64 `json:"lastMs"`
		MeanMs   float64 `json:"meanMs"`
		MaxMs    float64 `json:"maxMs"`
	} `json:"tick"`
	Games       []gameStatsJSON `json:"games"`
	Players     int             `json:"players"`
	Connections int             `json:"connections"`
}

type gameStatsJSON struct {
	ID          uint64          `json:"id,string"`
	Type        string          `json:"type"`
	Tick        uint64          `json:"tick"`
	Entities    int             `json:"entities"`
	Connections []connStatsJSON `json:"connections"`
	Timeline    string          `json:"timeline,omitempty"`
}

type connStatsJSON struct {
	ClientID uint64   `json:"clientId,string"`
	Addr     string   `json:"addr"`
	Players  []uint16 `json:"players"`
	RTTMs    float64  `json:"rttMs"`
	JitterMs float64  `json:"jitterMs"`
	Loss     float64  `json:"loss"`
	SendBps  float64  `json:"sendBps"`
	RecvBps  float64  `json:"recvBps"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (l *Lobby) stats() statsJSON {
	out := statsJSON{Time: time.Now().UTC()}
	l.mu.Lock()
	out.Lobby.Sockets = len(l.sockets)
	for _, s := range l.seats {
		if s.sock == nil {
			out.Lobby.APISeats++
		}
	}
	for _, t := range l.order {
		ti := l.typeInfo(t)
		out.Lobby.Types = append(out.Lobby.Types, ti)
		out.Lobby.Rooms += ti.Rooms
		out.Lobby.Players += ti.Players
	}
	l.unlock()
	if l.cfg.Fleet != nil {
		out.Fleet = []fleetServerJSON{}
		for _, f := range l.cfg.Fleet.Servers() {
			out.Fleet = append(out.Fleet, fleetServerJSON{ID: f.ID, Name: f.Name, Types: f.Types, Addrs: f.Addrs,
				Capacity: f.Capacity, Players: f.Players, Reserved: f.Reserved, Games: f.Games,
				TickP99Ms: f.TickP99Ms, TickBudgetMs: f.TickBudgetMs, Healthy: f.Healthy, Why: f.Why,
				SilentMs: ms(out.Time.Sub(f.LastSeen))})
		}
		for _, lb := range l.cfg.Fleet.Lobbies() {
			out.Lobbies = append(out.Lobbies, fleetLobbyJSON{Tag: lb.Tag, URL: lb.URL, Healthy: lb.Healthy, Self: lb.Self})
		}
	}
	if l.cfg.Stats == nil {
		return out
	}
	ss := l.cfg.Stats.Stats()
	sj := &serverStatsJSON{Games: make([]gameStatsJSON, 0, len(ss.Games))}
	sj.Tick.Rate, sj.Tick.Ticks = ss.Tick.Rate, ss.Tick.Ticks
	if ss.Tick.Rate > 0 {
		sj.Tick.BudgetMs = 1000 / ss.Tick.Rate
	}
	sj.Tick.LastMs, sj.Tick.MeanMs, sj.Tick.MaxMs = ms(ss.Tick.Last), ms(ss.Tick.Mean), ms(ss.Tick.Max)
	for _, g := range ss.Games {
		gj := gameStatsJSON{ID: g.ID, Type: g.Type, Tick: g.Tick, Entities: g.Entities,
			Connections: make([]connStatsJSON, 0, len(g.Connections)), Timeline: g.Timeline}
		for _, c := range g.Connections {
			gj.Connections = append(gj.Connections, connStatsJSON{
				ClientID: c.ClientID, Addr: c.Addr, Players: c.Players,
				RTTMs: ms(c.RTT), JitterMs: ms(c.Jitter), Loss: c.Loss, SendBps: c.SendBps, RecvBps: c.RecvBps,
			})
			sj.Players += len(c.Players)
		}
		sj.Connections += len(g.Connections)
		sj.Games = append(sj.Games, gj)
	}
	out.Server = sj
	return out
}

func (l *Lobby) apiStats(w http.ResponseWriter, r *http.Request) {
	l.writeJSON(w, http.StatusOK, l.stats())
}
