package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// serverCollector reads the server's counters at scrape time.
type serverCollector struct {
	srv  *tickwire.Server
	host *gameHost
	// socketDrops reads the kernel's drops on the game socket (nil
	// where the platform does not tell).
	socketDrops func() (uint64, bool)

	connections, players, games  *prometheus.Desc
	packets, bytes               *prometheus.Desc
	drops, disconnects           *prometheus.Desc
	accepted, denied, challenges *prometheus.Desc
	ticks                        *prometheus.Desc
	resyncs, desyncs             *prometheus.Desc
	inputsMissing                *prometheus.Desc
	patchCodes                   *prometheus.Desc
	sockDrops                    *prometheus.Desc
}

func newServerCollector(srv *tickwire.Server, host *gameHost, socketDrops func() (uint64, bool)) *serverCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tickwire_"+name, help, labels, nil)
	}
	return &serverCollector{
		srv:           srv,
		host:          host,
		socketDrops:   socketDrops,
		connections:   d("connections", "Open client connections."),
		players:       d("players", "Player slots carried by open connections."),
		games:         d("games", "Games with at least one connection."),
		packets:       d("packets_total", "Datagrams by direction.", "direction"),
		bytes:         d("bytes_total", "UDP payload bytes by direction.", "direction"),
		drops:         d("dropped_packets_total", "Datagrams dropped, by reason.", "reason"),
		disconnects:   d("disconnects_total", "Connections ended, by reason.", "reason"),
		accepted:      d("connections_accepted_total", "Connections created by the handshake."),
		denied:        d("handshakes_denied_total", "Handshake denials sent."),
		challenges:    d("challenges_total", "Challenges sent (stateless)."),
		ticks:         d("ticks_total", "Ticks run."),
		resyncs:       d("resyncs_total", "Full-state resyncs sent to clients."),
		desyncs:       d("desyncs_total", "Checksum mismatches clients reported."),
		inputsMissing: d("inputs_missing_total", "Player ticks simulated without the player's input: it came too late or not at all."),
		patchCodes:    d("patch_codes_total", "Run-length codes of entity patches in snapshot deltas, by where they came from: shared (read from the cache of codes the clients acknowledged at the same revision share), encoded (into that cache, by the first client to need it) or private (encoded for one packet alone).", "source"),
		sockDrops:     d("socket_drops_total", "Datagrams the kernel dropped for the game socket, nearly all because its receive buffer was full: the server fell behind reading (absent where the platform does not tell)."),
	}
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

// gameCounters is implemented by a game handler that counts resyncs and
// desyncs (called from the server's loop).
type gameCounters interface {
	Resyncs() uint64
	Desyncs() uint64
}

// inputCounter is implemented by a game handler that counts the inputs
// its games ran without (called from the server's loop).
type inputCounter interface {
	InputsMissing() uint64
}

// patchCodeCounter is implemented by a game handler that counts where
// its snapshot deltas' patch codes came from (called from the server's
// loop).
type patchCodeCounter interface {
	PatchCodes() deltacomp.CodeStats
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.Stats()
	var players, games int
	var resyncs, desyncs, missing uint64
	ic, inputs := c.host.Handler.(inputCounter)
	pc, codes := c.host.Handler.(patchCodeCounter)
	var cs deltacomp.CodeStats
	c.srv.Do(func() {
		players, games = c.host.counts()
		if gc, ok := c.host.Handler.(gameCounters); ok {
			resyncs, desyncs = gc.Resyncs(), gc.Desyncs()
		}
		if inputs {
			missing = ic.InputsMissing()
		}
		if codes {
			cs = pc.PatchCodes()
		}
	})
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	gauge(c.connections, float64(st.Connections))
	gauge(c.players, float64(players))
	gauge(c.games, float64(games))
	counter(c.packets, st.PacketsIn, "in")
	counter(c.packets, st.PacketsOut, "out")
	counter(c.bytes, st.BytesIn, "in")
	counter(c.bytes, st.BytesOut, "out")
	for r, n := range st.Dropped {
		counter(c.drops, n, tickwire.DropReason(r).String())
	}
	for r := proto.DisconnectClosed; int(r) < len(st.Disconnects); r++ {
		counter(c.disconnects, st.Disconnects[r], r.String())
	}
	counter(c.accepted, st.Accepted)
	counter(c.denied, st.HandshakeDenied)
	counter(c.challenges, st.ChallengesSent)
	counter(c.ticks, st.Ticks)
	counter(c.resyncs, resyncs)
	counter(c.desyncs, desyncs)
	if inputs {
		counter(c.inputsMissing, missing)
	}
	if codes {
		counter(c.patchCodes, cs.Shared, "shared")
		counter(c.patchCodes, cs.Encoded, "encoded")
		counter(c.patchCodes, cs.Private, "private")
	}
	if c.socketDrops != nil {
		if n, ok := c.socketDrops(); ok {
			counter(c.sockDrops, n)
		}
	}
}
