package main

import (
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/fleet"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/lobby"
)

// gameHost is the server's handler: it runs the embedded game and keeps
// the figures the dashboard, /metrics and /healthz show.
type gameHost struct {
	tickwire.Handler // the game's handler
	srv              *tickwire.Server
	// recorded and admin: -record and -admin are set, so a game's
	// timeline is served and the dashboard links it
	recorded, admin bool
	name            string
	rate            int
	log             *slog.Logger
	tickHist        prometheus.Histogram
	ticks           atomic.Uint64
	member          *fleet.Member // nil outside a fleet; set before serving
	// describe names a client's address on the dashboard (the browser
	// gateway's Describe); nil: the address as it is. Set before serving.
	describe func(netip.AddrPort) string

	mu       sync.Mutex // guards the tick window and the byte samples
	window   [128]time.Duration
	windowN  int
	lastTick time.Duration
	prev     map[uint32]byteSample // per connection, for bytes per second
}

type byteSample struct {
	at      time.Time
	in, out uint64
}

func newGameHost(name string, rate int, log *slog.Logger, h tickwire.Handler) *gameHost {
	return &gameHost{
		Handler: h,
		name:    name,
		rate:    rate,
		log:     log,
		prev:    map[uint32]byteSample{},
		tickHist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickwire_tick_duration_seconds",
			Help:    "Time the server spent on one tick: game step, replication and sending.",
			Buckets: tickBuckets(rate),
		}),
	}
}

// tickBuckets are the tick duration histogram's bounds: 100 µs to some
// 150 ms, 10 % apart, and the tick's budget at rate ticks a second, so
// that whether 99 % of the ticks kept to it is read exactly, not to the
// nearest bucket.
func tickBuckets(rate int) []float64 {
	b := prometheus.ExponentialBuckets(100e-6, 1.1, 78)
	if rate > 0 {
		budget := 1 / float64(rate)
		if i, found := slices.BinarySearch(b, budget); !found {
			b = slices.Insert(b, i, budget)
		}
	}
	return b
}

// counts returns the players and games of the open connections. Call it
// on the server's loop (Server.Do).
func (g *gameHost) counts() (players, games int) {
	seen := map[uint64]bool{}
	g.srv.Each(func(c *tickwire.Conn) {
		players += len(c.Players())
		if !seen[c.GameID()] {
			seen[c.GameID()] = true
			games++
		}
	})
	return players, games
}

// load is what the server tells its fleet: players, games and the 99th
// percentile of the recent ticks (the last 128).
func (g *gameHost) load() fleet.Load {
	var l fleet.Load
	g.srv.Do(func() { l.Players, l.Games = g.counts() })
	g.mu.Lock()
	n := min(g.windowN, len(g.window))
	w := slices.Clone(g.window[:n])
	g.mu.Unlock()
	if n > 0 {
		slices.Sort(w)
		l.TickP99 = w[(n*99+99)/100-1]
	}
	l.TickBudget = time.Second / time.Duration(g.rate)
	return l
}

// Connected tells the fleet that a reserved seat is taken, then the game.
func (g *gameHost) Connected(c *tickwire.Conn) {
	if g.member != nil {
		g.member.Arrived(c.GameID(), len(c.Players()))
	}
	g.Handler.Connected(c)
}

// Interrupted passes a connection's silence and return on to the game
// (the embedded Handler hides its optional interfaces).
func (g *gameHost) Interrupted(c *tickwire.Conn, on bool) {
	if ih, ok := g.Handler.(tickwire.InterruptHandler); ok {
		ih.Interrupted(c, on)
	}
}

// observeTick is the server's Config.ObserveTick.
func (g *gameHost) observeTick(_ uint32, took time.Duration) {
	g.ticks.Add(1)
	g.tickHist.Observe(took.Seconds())
	g.mu.Lock()
	g.window[g.windowN%len(g.window)] = took
	g.windowN++
	g.lastTick = took
	g.mu.Unlock()
}

// Stats implements lobby.StatsSource for the dashboard.
func (g *gameHost) Stats() lobby.ServerStats {
	var st lobby.ServerStats
	g.mu.Lock()
	st.Tick = lobby.TickStats{Rate: float64(g.rate), Ticks: g.ticks.Load(), Last: g.lastTick}
	n := min(g.windowN, len(g.window))
	var sum time.Duration
	for _, d := range g.window[:n] {
		sum += d
		st.Tick.Max = max(st.Tick.Max, d)
	}
	if n > 0 {
		st.Tick.Mean = sum / time.Duration(n)
	}
	g.mu.Unlock()

	now := time.Now()
	games := map[uint64]*lobby.GameStats{}
	var order []uint64
	seen := map[uint32]bool{}
	g.srv.Do(func() {
		tick := uint64(g.srv.Tick())
		g.srv.Each(func(c *tickwire.Conn) {
			cs := c.Stats()
			gs := games[cs.GameID]
			if gs == nil {
				gs = &lobby.GameStats{ID: cs.GameID, Type: g.name, Tick: tick}
				if g.recorded && g.admin {
					gs.Timeline = timelineURL(cs.GameID)
				}
				games[cs.GameID] = gs
				order = append(order, cs.GameID)
			}
			lc := lobby.ConnStats{
				ClientID: cs.ClientID,
				Addr:     g.addrText(cs.Addr),
				Players:  append([]uint16(nil), cs.Players...),
				RTT:      cs.RTT,
				Jitter:   cs.Jitter,
				Loss:     cs.Loss,
			}
			g.mu.Lock()
			if p, ok := g.prev[cs.ConnID]; ok && now.Sub(p.at) > 0 {
				sec := now.Sub(p.at).Seconds()
				lc.SendBps = float64(cs.BytesOut-p.out) / sec
				lc.RecvBps = float64(cs.BytesIn-p.in) / sec
			}
			g.prev[cs.ConnID] = byteSample{at: now, in: cs.BytesIn, out: cs.BytesOut}
			g.mu.Unlock()
			seen[cs.ConnID] = true
			gs.Connections = append(gs.Connections, lc)
		})
		if e, ok := g.Handler.(entityCounter); ok {
			for id, gs := range games {
				gs.Entities = e.Entities(id)
			}
		}
	})
	g.mu.Lock()
	for id := range g.prev {
		if !seen[id] {
			delete(g.prev, id)
		}
	}
	g.mu.Unlock()
	for _, id := range order {
		st.Games = append(st.Games, *games[id])
	}
	return st
}

// addrText is how the dashboard shows a client's address.
func (g *gameHost) addrText(a netip.AddrPort) string {
	if g.describe != nil {
		return g.describe(a)
	}
	return a.String()
}

// entityCounter is implemented by a game handler that can say how many
// entities a game has (called from the server's loop).
type entityCounter interface {
	Entities(gameID uint64) int
}

// Message answers reliable messages on botproto.EchoChannel (the bots'
// end-to-end check) and hands everything else to the game.
func (g *gameHost) Message(c *tickwire.Conn, m *tickwire.Message) {
	if m.Channel == botproto.EchoChannel && m.Delivery == tickwire.Reliable {
		if err := c.Send(tickwire.Reliable, botproto.EchoChannel, m.Data); err != nil {
			g.log.Warn("echo", "conn", c.ID(), "err", err)
		}
		return
	}
	g.Handler.Message(c, m)
}

// Tick forwards to the game's handler when it runs every tick.
func (g *gameHost) Tick(now time.Time, tick uint32) {
	if t, ok := g.Handler.(tickwire.Ticker); ok {
		t.Tick(now, tick)
	}
}
