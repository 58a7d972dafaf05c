package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/peerhost"
)

// playPeerCommits runs the -peer mode of -game swarm: one player of a
// peer-hosted commits game, whose swarm client plays through a
// peerhost.Player. Hosting is relaying (a commits.Relay, no game code);
// when the relay is lost the successor's relay adopts the game and every
// player resumes on it with its own worlds. Besides the migration
// events it prints a line each time it commits again on a new session
// ("committing again"), and its record goes to -record.
func playPeerCommits(ctx context.Context, o *options, ps *peerSeat, log *slog.Logger, stderr io.Writer) (*botproto.Summary, error) {
	a := ps.a
	b := &commitBot{id: int(a.Slot), rec: botproto.CommitRecord{Client: int(a.Slot)}}
	if err := b.newClient(o, nil, log); err != nil {
		ps.hc.Close()
		return nil, err
	}
	ev := &peerEvents{out: stderr}
	var peer *peerhost.Player
	peer, err := peerhost.NewPlayer(peerhost.Config{
		Commits:   b.cc,
		Server:    tickwire.Config{Logger: log},
		HostConn:  ps.hc,
		HostAddr:  ps.self,
		Logger:    log,
		OnEvent:   ps.onEvent(ctx, ev, &peer),
		Dialer:    ps.dialer,
		Successor: ps.successor,
	})
	if err != nil {
		ps.hc.Close()
		return nil, err
	}
	if err := ps.start(ctx, peer, ev, stderr); err != nil {
		return nil, err
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	played := make(chan struct{})
	go func() {
		defer close(played)
		b.play(pctx, o.seed)
	}()
	watch := time.NewTicker(10 * time.Millisecond) // the committed tick, for "committing again"
	defer watch.Stop()
	status := time.NewTicker(time.Second)
	defer status.Stop()
	conn, resumed := b.cc.Stats().Connection, true
	var from uint32
	var ended error
loop:
	for {
		select {
		case <-pctx.Done():
			break loop
		case <-peer.Done():
			ended = peer.Err()
			break loop
		case <-watch.C:
			st := b.cc.Stats()
			if st.Connection != conn {
				conn, resumed, from = st.Connection, false, st.Committed
			}
			if !resumed && int32(st.Committed-from) > 0 {
				resumed = true
				fmt.Fprintf(stderr, "tickwire-bot: committing again from tick %d on connection %d unix_ms=%d\n", from, conn, time.Now().UnixMilli())
			}
		case <-status.C:
			if st := peer.Stats(); st.Hosting {
				h := st.HostRelay
				fmt.Fprintf(stderr, "tickwire-bot: relaying epoch=%d joins=%d commands=%d duplicates=%d late=%d standby_tick=%d standby_lag=%d\n",
					st.Epoch, h.Joins, h.Commands, h.Duplicates, h.Late, st.Host.StandbyTick, st.Host.StandbyLag)
			}
		}
	}
	cancel()
	<-played
	elapsed := time.Since(start)
	if ended == nil {
		// Stay a little longer: the last commands commit, on this
		// player's relay too.
		linger := time.NewTimer(2 * time.Second)
		select {
		case <-linger.C:
		case <-ctx.Done():
		case <-peer.Done():
		}
		linger.Stop()
	}
	st := peer.Stats()
	sum := &botproto.Summary{Clients: 1, Connected: 1, DurationSeconds: elapsed.Seconds()}
	sum.Commits = commitSummary([]*commitBot{b})
	sum.Peer = ev.summary(uint16(a.Slot), st, ended)
	peer.Close()
	b.cc.Close()
	if o.record != "" {
		if err := writeRecords(o.record, []*commitBot{b}); err != nil {
			return nil, err
		}
	}
	return sum, nil
}
