package lobby

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the lobby's Prometheus collectors (namespace
// tickwire_lobby). Gauges are read from the lobby's state at scrape time.
type metrics struct {
	roomsCreated   *prometheus.CounterVec // type
	roomsDisplaced *prometheus.CounterVec // type
	gamesAssigned  *prometheus.CounterVec // type, hosting
	playersLeft    *prometheus.CounterVec // why: left, disconnected, timed out
	errors         *prometheus.CounterVec // code
	chats          prometheus.Counter
	socketsOpened  prometheus.Counter
	redirects      prometheus.Counter
}

var (
	descRooms   = prometheus.NewDesc("tickwire_lobby_rooms", "Open rooms (games waiting for players).", []string{"type"}, nil)
	descPlayers = prometheus.NewDesc("tickwire_lobby_players", "Players seated in open rooms.", []string{"type"}, nil)
	descSockets = prometheus.NewDesc("tickwire_lobby_sockets", "Open lobby WebSockets.", nil, nil)
	descSeats   = prometheus.NewDesc("tickwire_lobby_api_seats", "Seats held through the JSON API (including assignments not yet expired).", nil, nil)

	// With Config.Fleet.
	descFleetServers = prometheus.NewDesc("tickwire_lobby_fleet_servers", "Game servers of the fleet this lobby knows, by health.", []string{"health"}, nil)
	descFleetSeats   = prometheus.NewDesc("tickwire_lobby_fleet_seats", "Seats over the fleet's healthy servers: capacity, players connected, reserved.", []string{"kind"}, nil)
	descFleetAllocs  = prometheus.NewDesc("tickwire_lobby_fleet_allocations_total", "Games the fleet allocated to a server for this lobby.", nil, nil)
	descFleetFailed  = prometheus.NewDesc("tickwire_lobby_fleet_requests_failed_total", "Reservation requests a server refused or did not answer.", nil, nil)
	descFleetBad     = prometheus.NewDesc("tickwire_lobby_fleet_bad_announcements_total", "Fleet announcements that did not decode or check, dropped.", nil, nil)
)

func (l *Lobby) initMetrics() error {
	m := &metrics{
		roomsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickwire_lobby_rooms_created_total", Help: "Rooms created.",
		}, []string{"type"}),
		roomsDisplaced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickwire_lobby_rooms_displaced_total", Help: "Rooms closed to make way for a new one when their type was full.",
		}, []string{"type"}),
		gamesAssigned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickwire_lobby_games_assigned_total", Help: "Games assigned (rooms that started).",
		}, []string{"type", "hosting"}),
		playersLeft: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickwire_lobby_players_left_total", Help: "Players that left an open room, by why.",
		}, []string{"why"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickwire_lobby_errors_total", Help: "Refused requests and dropped sockets, by error code.",
		}, []string{"code"}),
		chats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickwire_lobby_chat_messages_total", Help: "Chat messages relayed.",
		}),
		socketsOpened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickwire_lobby_sockets_opened_total", Help: "WebSockets accepted.",
		}),
		redirects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickwire_lobby_room_redirects_total", Help: "API requests for a room of another lobby of the fleet, sent there.",
		}),
	}
	l.metrics = m
	reg := l.cfg.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	l.gatherer = l.cfg.Gatherer
	if l.gatherer == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			l.gatherer = g
		} else {
			l.gatherer = prometheus.DefaultGatherer
		}
	}
	for _, c := range []prometheus.Collector{m.roomsCreated, m.roomsDisplaced, m.gamesAssigned, m.playersLeft, m.errors, m.chats, m.socketsOpened, m.redirects, stateCollector{l}} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lobby) metricsHandler() http.Handler {
	return promhttp.HandlerFor(l.gatherer, promhttp.HandlerOpts{})
}

// stateCollector reports the gauges from the lobby's state.
type stateCollector struct{ l *Lobby }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRooms
	ch <- descPlayers
	ch <- descSockets
	ch <- descSeats
	if c.l.cfg.Fleet != nil {
		for _, d := range []*prometheus.Desc{descFleetServers, descFleetSeats, descFleetAllocs, descFleetFailed, descFleetBad} {
			ch <- d
		}
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.l
	l.mu.Lock()
	defer l.unlock()
	for _, t := range l.order {
		ti := l.typeInfo(t)
		ch <- prometheus.MustNewConstMetric(descRooms, prometheus.GaugeValue, float64(ti.Rooms), t.Name)
		ch <- prometheus.MustNewConstMetric(descPlayers, prometheus.GaugeValue, float64(ti.Players), t.Name)
	}
	ch <- prometheus.MustNewConstMetric(descSockets, prometheus.GaugeValue, float64(len(l.sockets)))
	api := 0
	for _, s := range l.seats {
		if s.sock == nil {
			api++
		}
	}
	ch <- prometheus.MustNewConstMetric(descSeats, prometheus.GaugeValue, float64(api))
	if f := l.cfg.Fleet; f != nil {
		var healthy, unhealthy, capacity, players, reserved int
		for _, s := range f.Servers() {
			if !s.Healthy {
				unhealthy++
				continue
			}
			healthy++
			capacity, players, reserved = capacity+s.Capacity, players+s.Players, reserved+s.Reserved
		}
		gauge := func(d *prometheus.Desc, v int, label string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), label)
		}
		gauge(descFleetServers, healthy, "healthy")
		gauge(descFleetServers, unhealthy, "unhealthy")
		gauge(descFleetSeats, capacity, "capacity")
		gauge(descFleetSeats, players, "players")
		gauge(descFleetSeats, reserved, "reserved")
		st := f.Stats()
		ch <- prometheus.MustNewConstMetric(descFleetAllocs, prometheus.CounterValue, float64(st.Allocated))
		ch <- prometheus.MustNewConstMetric(descFleetFailed, prometheus.CounterValue, float64(st.Failed))
		ch <- prometheus.MustNewConstMetric(descFleetBad, prometheus.CounterValue, float64(st.BadAnnouncements))
	}
}
