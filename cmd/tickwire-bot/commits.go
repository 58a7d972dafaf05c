package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp"
	"github.com/tickwire/tickwire/udp/netem"
)

// commitBot is one client of a commits-mode game (-game swarm): it gives
// its team's groups random orders and records what its committed world
// ran and when each command reached its live world.
type commitBot struct {
	id  int
	cc  *commits.Client
	mu  sync.Mutex
	rec botproto.CommitRecord
	// replay is the client's recording (-record-replay)
	replay *replay.Writer
}

// playCommits runs o.n swarm clients for o.duration.
func playCommits(ctx context.Context, o *options, log *slog.Logger, stderr io.Writer) (*botproto.Summary, error) {
	bots := make([]*commitBot, o.n)
	for i := range bots {
		bots[i] = &commitBot{id: i, rec: botproto.CommitRecord{Client: i}}
	}
	connected, err := connectAll(o, log, stderr, func(i int, delay time.Duration) error {
		return bots[i].connect(ctx, o, delay, log)
	})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	sum := &botproto.Summary{Clients: o.n, Connected: connected}
	played := time.Now()
	pctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	for _, b := range bots {
		if b.cc != nil {
			wg.Go(func() { b.play(pctx, o.seed) })
		}
	}
	var progress <-chan time.Time
	if o.progress > 0 {
		t := time.NewTicker(o.progress)
		defer t.Stop()
		progress = t.C
	}
loop:
	for {
		select {
		case <-pctx.Done():
			break loop
		case <-progress:
			fmt.Fprintf(stderr, "tickwire-bot: %v: %s\n", time.Since(played).Round(time.Second), commitProgress(bots))
		}
	}
	wg.Wait()
	// Let the last commands commit before the summary.
	time.Sleep(time.Second)
	sum.DurationSeconds = time.Since(played).Seconds()
	sum.Commits = commitSummary(bots)
	var rtt []time.Duration
	for _, b := range bots {
		if b.cc == nil {
			continue
		}
		if c := b.cc.Client(); c != nil {
			st := c.Stats()
			rtt = append(rtt, st.RTT)
			sum.DownKbpsPerClient += float64(st.BytesIn) * 8 / 1000 / sum.DurationSeconds / float64(connected)
			sum.UpKbpsPerClient += float64(st.BytesOut) * 8 / 1000 / sum.DurationSeconds / float64(connected)
		}
		b.cc.Close()
		if b.replay != nil {
			if err := b.replay.Close(); err != nil {
				return nil, fmt.Errorf("-record-replay: %w", err)
			}
		}
	}
	sum.RTTms = percentiles(rtt)
	if o.record != "" {
		if err := writeRecords(o.record, bots); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

func (b *commitBot) connect(ctx context.Context, o *options, delay time.Duration, log *slog.Logger) error {
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	token := func(ctx context.Context) (*tickwire.ConnectToken, error) {
		tok, err := fetchToken(ctx, o)
		if err == nil && o.via != "" {
			tok.ServerAddrs = []string{o.via}
		}
		return tok, err
	}
	tok, err := token(ctx)
	if err != nil {
		return err
	}
	w, err := swarm.NewGame(o.units)
	if err != nil {
		return err
	}
	var meshConn udp.BatchConn
	if o.mesh && o.meshNetem != "" {
		if meshConn, err = impairedMesh(o.meshNetem, uint64(b.id)+o.seed); err != nil {
			return err
		}
	}
	if o.recordReplay != "" {
		if b.replay, err = createReplay(o, b.id, 0, tok.GameID); err != nil {
			return err
		}
	}
	b.cc, err = commits.NewClient(w, commits.ClientConfig{
		Record:   b.replay,
		Mesh:     o.mesh,
		MeshConn: meshConn,
		Loaded: func(_ sim.CommitGame, tick uint32) {
			b.mu.Lock()
			b.rec.Executed = b.rec.Executed[:0] // the record restarts at the state
			b.rec.From = tick + 1
			b.rec.Loads++
			b.mu.Unlock()
		},
		Committed: func(c *sim.Command) {
			e := botproto.CommitExec{Tick: c.Tick, Kind: uint8(c.Kind), Player: c.Player}
			if c.Kind == sim.CommandInput {
				e.Tag = swarm.ParseCommand(c.Data).Tag
			}
			b.mu.Lock()
			b.rec.Executed = append(b.rec.Executed, e)
			b.mu.Unlock()
		},
		Shown: func(c *sim.Command, at time.Time) {
			if c.Kind != sim.CommandInput {
				return
			}
			b.mu.Lock()
			b.rec.Shown = append(b.rec.Shown, botproto.CommitShown{Tag: swarm.ParseCommand(c.Data).Tag, UnixUs: at.UnixMicro()})
			b.mu.Unlock()
		},
		Rejoin: token,
		Logger: log.With("bot", b.id),
	})
	if err != nil {
		return err
	}
	d := tickwire.Dialer{Game: b.cc}
	if o.rejoin {
		d.Rejoin = &tickwire.Rejoin{}
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := d.Dial(dctx, tok); err != nil {
		b.cc = nil
		return err
	}
	return nil
}

// play gives a random order to one of the team's groups every 200..600
// ms. Tags are the bot's id plus -seed − 1 (high 4 bits) and a count:
// unique in the process for 4,096 orders per bot, and across processes
// given seeds 16 bots apart.
func (b *commitBot) play(ctx context.Context, seed0 uint64) {
	seed := seed0 + uint64(b.id)
	r := rand.New(rand.NewPCG(seed, 0x5a4a))
	for n := uint16(1); n < 1<<12; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(200+r.IntN(400)) * time.Millisecond):
		}
		c := b.cc.Client()
		if c == nil {
			continue
		}
		tag := uint16((uint64(b.id)+seed0-1)%16)<<12 | n
		cmd := swarm.AppendCommand(nil, swarm.Command{Op: swarm.OpMove, Group: uint8(r.IntN(swarm.Groups)),
			X: uint16(r.IntN(swarm.WorldSize)), Y: uint16(r.IntN(swarm.WorldSize)), Tag: tag})
		if _, err := b.cc.Issue(c.Players()[0], cmd); err != nil {
			continue
		}
		b.mu.Lock()
		b.rec.Issued = append(b.rec.Issued, tag)
		b.rec.IssuedAt = append(b.rec.IssuedAt, botproto.CommitShown{Tag: tag, UnixUs: time.Now().UnixMicro()})
		b.mu.Unlock()
	}
}

func commitProgress(bots []*commitBot) string {
	var committed, live uint32
	var lag, lead int
	var rollbacks, kicks uint64
	for _, b := range bots {
		if b.cc == nil {
			continue
		}
		st := b.cc.Stats()
		committed, live, lead = st.Committed, st.Live, st.Lead
		lag = max(lag, st.CommitLag)
		rollbacks += st.Rollbacks
		kicks += st.Kicks
	}
	return fmt.Sprintf("committed tick %d, live %d, lead %d, commit lag ≤ %d ticks, %d rollbacks, %d kicks", committed, live, lead, lag, rollbacks, kicks)
}

// commitSummary sums the clients' figures and checks their records
// against each other.
func commitSummary(bots []*commitBot) *botproto.CommitsSummary {
	s := &botproto.CommitsSummary{}
	var ref []botproto.CommitExec
	var refFrom uint32
	var earlier time.Duration // of the useful shortcuts, over every client
	var earlierN uint64
	refSet := false
	end := uint32(1<<32 - 1)
	for _, b := range bots {
		if b.cc != nil {
			end = min(end, b.cc.Stats().Committed)
		}
	}
	for _, b := range bots {
		if b.cc == nil {
			continue
		}
		st := b.cc.Stats()
		s.Issued += st.Issued
		s.Committed += uint64(st.LockstepStats.Committed)
		s.Lead = st.Lead
		s.CommitLagMax = max(s.CommitLagMax, st.MaxLag)
		s.Rollbacks += st.Rollbacks
		s.Replayed += st.Replayed
		s.Kicks += st.Kicks
		s.Resyncs += st.Resyncs
		s.Desyncs += st.Desyncs
		s.Rejoins += st.Rejoins
		s.StallMaxMs = max(s.StallMaxMs, float64(st.StallMax.Microseconds())/1000)
		if m := st.Mesh; m.Links > 0 || m.Reached > 0 {
			if s.Mesh == nil {
				s.Mesh = &botproto.MeshSummary{}
			}
			sm := s.Mesh
			sm.Peers += m.Links
			sm.Reachable += m.Reachable
			sm.Reached += m.Reached
			sm.Sent += m.ShortcutsSent
			sm.Received += m.ShortcutsReceived
			sm.Useful += m.ShortcutsUseful
			sm.Late += m.ShortcutsLate
			earlier += m.Earlier
			earlierN += m.EarlierCount
			for _, d := range m.Dropped {
				sm.Dropped += d
			}
		}
		b.mu.Lock()
		b.rec.StallMs = float64(st.StallMax.Microseconds()) / 1000
		from := b.rec.From
		var mine []botproto.CommitExec
		for _, e := range b.rec.Executed {
			if e.Tick <= end {
				mine = append(mine, e)
				if e.Kind == uint8(sim.CommandInput) {
					s.Executed++
				}
			}
		}
		b.mu.Unlock()
		if !refSet {
			ref, refFrom, refSet = mine, from, true
			continue
		}
		if !sameRecord(ref, refFrom, mine, from) {
			s.Mismatches++
		}
	}
	if s.Mesh != nil && earlierN > 0 {
		s.Mesh.EarlierMs = float64(earlier.Microseconds()) / 1000 / float64(earlierN)
	}
	return s
}

// impairedMesh opens a DSCP EF mesh socket on loopback whose outgoing
// datagrams go through an in-process netem (udp/netem): distinct peer
// paths on one machine, without a proxy per pair.
func impairedMesh(spec string, seed uint64) (udp.BatchConn, error) {
	sp, err := netem.Parse(spec)
	if err != nil {
		return nil, err
	}
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if _, err := udp.NewConn(uc, udp.Config{}); err != nil { // marks the socket DSCP EF
		uc.Close()
		return nil, err
	}
	return udp.FromPacketConn(netem.Wrap(uc, netem.Config{Egress: sp, Seed: seed})), nil
}

// sameRecord reports whether two clients' records, starting at ticks
// fromA and fromB, agree over the ticks both hold.
func sameRecord(a []botproto.CommitExec, fromA uint32, b []botproto.CommitExec, fromB uint32) bool {
	from := max(fromA, fromB)
	trim := func(r []botproto.CommitExec) []botproto.CommitExec {
		i := slices.IndexFunc(r, func(e botproto.CommitExec) bool { return e.Tick >= from })
		if i < 0 {
			return nil
		}
		return r[i:]
	}
	return slices.Equal(trim(a), trim(b))
}

// writeRecords writes one JSON object per client (JSON lines).
func writeRecords(path string, bots []*commitBot) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-record: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, b := range bots {
		b.mu.Lock()
		err := enc.Encode(&b.rec)
		b.mu.Unlock()
		if err != nil {
			f.Close()
			return fmt.Errorf("-record: %w", err)
		}
	}
	return f.Close()
}
