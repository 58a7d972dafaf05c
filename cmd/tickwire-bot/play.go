package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/lobby"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
)

// bot is one headless client.
type bot struct {
	id     int
	client *tickwire.Client
	game   *botGame
	server string // the game server's address in its token

	mu          sync.Mutex // guards the echo state (the client's loop writes it)
	sentAt      []time.Time
	nextEcho    uint32 // next number to send
	wantEcho    uint32 // next number expected back
	received    uint64
	duplicates  uint64
	outOfOrder  uint64
	echoRTT     []time.Duration
	disconnect  proto.DisconnectReason
	disconnects int
	closed      bool // we closed it: no longer count disconnects
	// rejoins (-rejoin): sessions lost, rejoined and how long each took,
	// rejoins that failed; newDue: the last one failed, and the bot joins
	// again as a new player (on the play loop)
	interruptions, rejoins, rejoinFailures, newPlayers int
	rejoinTook                                         []time.Duration
	newDue                                             bool
	lostWithSession                                    uint64
	// replays are the Writers of its connections' recordings
	// (-record-replay), one a game.Client, closed after the play
	replays []*replay.Writer
}

// rejoinProgress follows the client's automatic rejoin.
func (b *bot) rejoinProgress(p tickwire.RejoinProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch p.State {
	case tickwire.RejoinLost:
		b.interruptions++
		// What the lost session had in flight went with it: counted
		// apart, and not expected back.
		b.lostWithSession += uint64(b.nextEcho - b.wantEcho)
		b.wantEcho = b.nextEcho
	case tickwire.RejoinDone:
		b.rejoins++
		b.rejoinTook = append(b.rejoinTook, p.Took)
	case tickwire.RejoinFailed:
		b.rejoinFailures++
		b.newDue = !b.closed
	}
}

// Message implements tickwire.ClientHandler.
func (b *bot) Message(_ *tickwire.Client, m *tickwire.Message) {
	if m.Channel != botproto.EchoChannel || len(m.Data) < 4 {
		return
	}
	n := binary.LittleEndian.Uint32(m.Data)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case n < b.wantEcho:
		b.duplicates++
	case n > b.wantEcho:
		b.outOfOrder++
		b.wantEcho = n + 1
		b.received++
	default:
		b.wantEcho++
		b.received++
		if int(n) < len(b.sentAt) {
			b.echoRTT = append(b.echoRTT, time.Since(b.sentAt[n]))
		}
	}
}

// Disconnected implements tickwire.ClientHandler.
func (b *bot) Disconnected(_ *tickwire.Client, r proto.DisconnectReason) {
	b.mu.Lock()
	if !b.closed {
		b.disconnect = r
		b.disconnects++
	}
	b.mu.Unlock()
}

func (b *bot) sendEcho() {
	b.sendEchoWith(func(msg []byte) error { return b.client.Send(tickwire.Reliable, botproto.EchoChannel, msg) })
}

// sendEchoWith sends the next numbered echo with send.
func (b *bot) sendEchoWith(send func(msg []byte) error) {
	b.mu.Lock()
	n := b.nextEcho
	var msg [16]byte
	binary.LittleEndian.PutUint32(msg[:], n)
	b.sentAt = append(b.sentAt, time.Now())
	b.nextEcho++
	b.mu.Unlock()
	if err := send(msg[:]); err != nil {
		b.mu.Lock()
		b.nextEcho-- // not sent: do not expect it
		b.sentAt = b.sentAt[:len(b.sentAt)-1]
		b.mu.Unlock()
	}
}

// outstanding is how many echoes have not come back.
func (b *bot) outstanding() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int(b.nextEcho - b.wantEcho)
}

// joinResponse mirrors the server's POST /api/join answer.
type joinResponse struct {
	GameID  uint64   `json:"gameId,string"`
	Addr    string   `json:"addr"`
	Players []uint16 `json:"players"`
	Token   string   `json:"token"`
	Error   string   `json:"error"`
}

// joinConns bounds the HTTP connections the bots of one process hold to
// the server's POST /api/join at once: a server admits a few dozen from
// one address (tickwire-server -max-http-conns-per-addr, 64 by default)
// and closes the others, and hundreds of bots start together.
const joinConns = 16

// joinClient is the bots' HTTP client for POST /api/join: requests past
// joinConns wait for a connection instead of opening one the server
// would close.
var joinClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = joinConns
	t.MaxIdleConnsPerHost = joinConns
	return t
}()}

// fetchToken asks the server's POST /api/join for a token, waiting and
// asking again while it answers 429 (its per-address rate limit).
func fetchToken(ctx context.Context, o *options) (*tickwire.ConnectToken, error) {
	for {
		req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(o.server, "/")+"/api/join",
			strings.NewReader(fmt.Sprintf(`{"players":%d}`, o.players)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if o.secret != "" {
			req.Header.Set("Authorization", "Bearer "+o.secret)
		}
		resp, err := joinClient.Do(req)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				return nil, fmt.Errorf("no server answers at -server %s (start one with tickwire-server -dev-join -http 127.0.0.1:8080): %w", o.server, err)
			}
			return nil, fmt.Errorf("POST /api/join: %w", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && resp.StatusCode == http.StatusTooManyRequests {
			select {
			case <-time.After(time.Duration(secs) * time.Second):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var jr joinResponse
		if err := json.Unmarshal(b, &jr); err != nil {
			return nil, fmt.Errorf("POST /api/join: %d %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("POST /api/join: %d %s", resp.StatusCode, jr.Error)
		}
		tok, err := tickwire.ParseConnectToken(jr.Token)
		if err != nil {
			return nil, err
		}
		return tok, checkGame(tok, o)
	}
}

// checkGame refuses a token for another game than the bot plays (the
// token's UserData names the game type: the lobby's, and the server's
// POST /api/join), before the bot dials: an arena client on a swarm
// server would only see patches it cannot apply. A commits relay runs
// any commits-mode game: swarm, the bots' one, plays on it.
func checkGame(tok *tickwire.ConnectToken, o *options) error {
	t := lobby.GameTypeFromUserData(tok.UserData)
	if t == "relay" && o.game == "swarm" {
		return nil
	}
	if t != "" && t != o.game {
		return fmt.Errorf("the server runs the game %s, and this bot plays %s: run it with -game %s", t, o.game, t)
	}
	return nil
}

// play connects the bots, plays for the duration and summarises.
func play(ctx context.Context, o *options, log *slog.Logger, stderr io.Writer) (*botproto.Summary, error) {
	bots := make([]*bot, o.n)
	for i := range bots {
		bots[i] = &bot{id: i}
	}
	token := func(ctx context.Context, _ int) (*tickwire.ConnectToken, error) { return fetchToken(ctx, o) }
	if o.lobby {
		token = newLobbyRooms(o).token
	}
	groups := make([]*tickwire.ClientGroup, o.groups)
	for i := range groups {
		g, err := tickwire.NewClientGroup(tickwire.ClientGroupConfig{})
		if err != nil {
			return nil, err
		}
		groups[i] = g
		defer g.Close()
	}
	connected, err := connectAll(o, log, stderr, func(i int, delay time.Duration) error {
		var g *tickwire.ClientGroup
		if len(groups) > 0 {
			g = groups[i%len(groups)]
		}
		return bots[i].connect(ctx, o, delay, token, g, log)
	})
	if err != nil {
		return nil, err
	}

	sum := &botproto.Summary{Clients: o.n, Connected: connected}
	played := time.Now()
	cpu0 := cpuTime()
	before := totals(bots)
	echo := time.NewTicker(o.echoEvery)
	defer echo.Stop()
	var progress <-chan time.Time
	if o.progress > 0 {
		t := time.NewTicker(o.progress)
		defer t.Stop()
		progress = t.C
	}
	sample := time.NewTicker(time.Second)
	defer sample.Stop()
	end := time.NewTimer(o.duration)
	defer end.Stop()
	var rtts []time.Duration
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end.C:
			break loop
		case <-echo.C:
			rejoinAsNew(ctx, o, bots, token, groups, log)
			for _, b := range bots {
				if b.client != nil && b.client.Err() == nil {
					b.sendEcho()
				}
			}
		case <-sample.C:
			for _, b := range bots {
				if b.client != nil && b.client.Err() == nil {
					rtts = append(rtts, b.client.Stats().RTT)
				}
			}
		case <-progress:
			t := totals(bots)
			fmt.Fprintf(stderr, "tickwire-bot: %v: %d connected, %d disconnected, echo %d/%d, %s\n",
				time.Since(played).Round(time.Second), t.connected, t.disconnects, t.received, t.sent, gameProgress(bots))
		}
	}
	elapsed := time.Since(played)
	drainEchoes(func() int {
		pending := 0
		for _, b := range bots {
			if b.client != nil && b.client.Err() == nil {
				pending += b.outstanding()
			}
		}
		return pending
	})
	after := totals(bots)
	for _, b := range bots {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		if b.client != nil && len(groups) == 0 {
			b.client.Close()
		}
	}
	for _, g := range groups {
		g.Close() // ends its clients at once (Client.Close would wait a tick for each)
	}
	if err := closeReplays(bots); err != nil {
		return nil, err
	}
	fill(sum, bots, before, after, elapsed, rtts)
	if ticks := elapsed.Seconds() * 60; connected > 0 && ticks > 0 {
		sum.BotCPUPerClientTick = float64((cpuTime() - cpu0).Microseconds()) / float64(connected) / ticks
	}
	return sum, nil
}

// rejoinAsNew connects again, as new players, the bots whose rejoin
// failed (they were away past the server's grace). It runs on the play
// loop, the only reader of a bot's client and game besides their own
// callbacks, and waits for the dials.
func rejoinAsNew(ctx context.Context, o *options, bots []*bot, token func(context.Context, int) (*tickwire.ConnectToken, error),
	groups []*tickwire.ClientGroup, log *slog.Logger) {
	var wg sync.WaitGroup
	for i, b := range bots {
		b.mu.Lock()
		due := b.newDue && b.client != nil && b.client.Err() != nil
		if due {
			b.newDue = false
		}
		b.mu.Unlock()
		if !due {
			continue
		}
		var g *tickwire.ClientGroup
		if len(groups) > 0 {
			g = groups[i%len(groups)]
		}
		wg.Go(func() {
			if err := b.connect(ctx, o, 0, token, g, log); err != nil {
				log.Warn("could not join again as a new player", "bot", b.id, "err", err)
				return
			}
			b.mu.Lock()
			b.newPlayers++
			b.mu.Unlock()
			log.Info("joined again as a new player: its rejoin grace was over", "bot", b.id)
		})
	}
	wg.Wait()
}

// connectAll connects the -n clients at once, the i-th i × the ramp-up
// gap after the first, and says how many did; it fails when none did.
func connectAll(o *options, log *slog.Logger, stderr io.Writer, connect func(i int, delay time.Duration) error) (int, error) {
	errs := make([]error, o.n)
	start := time.Now()
	gap := o.rampUp / time.Duration(o.n)
	var wg sync.WaitGroup
	for i := range o.n {
		wg.Go(func() { errs[i] = connect(i, gap*time.Duration(i)) })
	}
	wg.Wait()
	connected := 0
	// One line per distinct reason, not one per client: 500 clients that
	// find no server are one problem.
	type failure struct {
		first, n int
		err      error
	}
	var failures []*failure
	byMsg := map[string]*failure{}
	for i, err := range errs {
		if err == nil {
			connected++
			continue
		}
		f := byMsg[err.Error()]
		if f == nil {
			f = &failure{first: i, err: err}
			byMsg[err.Error()] = f
			failures = append(failures, f)
		}
		f.n++
	}
	if connected == 0 && len(failures) == 1 {
		return 0, fmt.Errorf("no client connected: %w", failures[0].err)
	}
	for _, f := range failures {
		log.Warn("clients failed to connect", "clients", f.n, "first_bot", f.first, "err", f.err)
	}
	if connected == 0 {
		return 0, fmt.Errorf("no client connected: %w", errs[0])
	}
	if o.progress > 0 {
		fmt.Fprintf(stderr, "tickwire-bot: %d/%d clients connected in %v\n", connected, o.n, time.Since(start).Round(time.Millisecond))
	}
	return connected, nil
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// connect dials the server after delay with the token that token hands
// this bot, on group g if not nil.
func (b *bot) connect(ctx context.Context, o *options, delay time.Duration,
	token func(context.Context, int) (*tickwire.ConnectToken, error), g *tickwire.ClientGroup, log *slog.Logger) error {
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	tok, err := token(ctx, b.id)
	if err != nil {
		return err
	}
	b.server = tok.ServerAddrs[0]
	if o.via != "" {
		tok.ServerAddrs = []string{o.via}
	}
	b.game = newBotGame(o.seed+uint64(b.id), tok.Players, o.headless, b.id < o.verify, o.interpLag, o.inputInterval)
	if o.recordReplay != "" {
		w, err := createReplay(o, b.id, len(b.replays), tok.GameID)
		if err != nil {
			return err
		}
		b.replays = append(b.replays, w)
		b.game.gc.Record(w)
	}
	d := tickwire.Dialer{Handler: b, Group: g}
	if o.rejoin {
		d.Rejoin = &tickwire.Rejoin{Progress: b.rejoinProgress}
	}
	b.game.attach(&d)
	timeout := 10 * time.Second
	if g != nil {
		timeout = time.Minute // a group runs its handshakes one at a time: this one may wait its turn
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := d.Dial(dctx, tok)
	if err != nil {
		return err
	}
	b.client = c
	log.Debug("connected", "bot", b.id, "conn", c.ConnID(), "players", c.Players())
	return nil
}

// counts are totals over all bots at one moment.
type counts struct {
	connected, disconnects int
	sent, received         uint64
	bytesIn, bytesOut      uint64
}

func totals(bots []*bot) counts {
	var t counts
	for _, b := range bots {
		if b.client == nil {
			continue
		}
		st := b.client.Stats()
		t.bytesIn += st.BytesIn
		t.bytesOut += st.BytesOut
		b.mu.Lock()
		if b.client.Err() == nil {
			t.connected++
		}
		t.disconnects += b.disconnects
		t.sent += uint64(b.nextEcho)
		t.received += b.received
		b.mu.Unlock()
	}
	return t
}

func percentiles(d []time.Duration) botproto.Percentiles {
	if len(d) == 0 {
		return botproto.Percentiles{}
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return botproto.Percentiles{P50: ms(d[len(d)/2]), P99: ms(d[len(d)*99/100])}
}

// fill completes s from the bots and the counts before and after play.
func fill(s *botproto.Summary, bots []*bot, before, after counts, elapsed time.Duration, rtts []time.Duration) {
	var echo, rejoinTook []time.Duration
	var events [game.NumEventKinds]uint64
	reasons := map[string]int{}
	for _, b := range bots {
		if b.client != nil {
			if s.Servers == nil {
				s.Servers = map[string]int{}
			}
			s.Servers[b.server]++
		}
		b.mu.Lock()
		s.Disconnects += b.disconnects
		if b.disconnects > 0 {
			reasons[b.disconnect.String()]++
		}
		s.ReliableSent += uint64(b.nextEcho)
		s.ReliableReceived += b.received
		s.ReliableDuplicates += b.duplicates
		s.ReliableOutOfOrder += b.outOfOrder
		s.ReliableLost += uint64(b.nextEcho - b.wantEcho)
		echo = append(echo, b.echoRTT...)
		s.Interruptions += b.interruptions
		s.ReliableLostWithSession += b.lostWithSession
		s.Rejoins += b.rejoins
		s.RejoinFailures += b.rejoinFailures
		s.NewPlayers += b.newPlayers
		rejoinTook = append(rejoinTook, b.rejoinTook...)
		b.mu.Unlock()
		if b.game != nil {
			g := b.game.stats()
			s.Desyncs += g.desyncs
			s.Resyncs += g.resyncs
			for r, n := range g.resyncCauses {
				if n > 0 {
					if s.ResyncCauses == nil {
						s.ResyncCauses = map[string]uint64{}
					}
					s.ResyncCauses[proto.ResyncReason(r).String()] += n
				}
			}
			s.InputsSent += g.inputsSent
			s.LateInputs += g.lateInputs
			s.Corrections += g.corrections
			s.Rollbacks += g.rollbacks
			s.InterpFrames += g.interpFrames
			s.InterpStalls += g.stalls
			s.InterpStallsBounded += g.stallsBounded
			s.InterpFramesSettled += g.settled.frames
			s.InterpStallsSettled += g.settled.stalls
			s.InterpStallsBoundedSettled += g.settled.bounded
			for k, n := range g.events {
				events[k] += n
			}
		}
	}
	for r, n := range reasons {
		s.DisconnectReasons = append(s.DisconnectReasons, fmt.Sprintf("%s×%d", r, n))
	}
	slices.Sort(s.DisconnectReasons)
	s.Events = eventCounts(&events)
	s.RTTms = percentiles(rtts)
	s.EchoMs = percentiles(echo)
	s.RejoinMs = percentiles(rejoinTook)
	if len(rejoinTook) > 0 {
		s.RejoinMaxMs = float64(slices.Max(rejoinTook).Microseconds()) / 1000
	}
	sec := elapsed.Seconds()
	if s.Connected > 0 && sec > 0 {
		s.DownKbpsPerClient = float64(after.bytesIn-before.bytesIn) * 8 / 1000 / sec / float64(s.Connected)
		s.UpKbpsPerClient = float64(after.bytesOut-before.bytesOut) * 8 / 1000 / sec / float64(s.Connected)
	}
	s.DurationSeconds = sec
}

// printSummary writes s for people.
func printSummary(w io.Writer, s *botproto.Summary) {
	fmt.Fprintf(w, "tickwire-bot summary over %.1f s:\n", s.DurationSeconds)
	fmt.Fprintf(w, "  clients %d, connected %d, disconnects %d %v\n", s.Clients, s.Connected, s.Disconnects, s.DisconnectReasons)
	if len(s.Servers) > 1 {
		fmt.Fprintf(w, "  clients by game server: %v\n", s.Servers)
	}
	if s.Commits != nil {
		fmt.Fprintf(w, "  rtt p50 %.1f ms p99 %.1f ms; per client: down %.1f kbit/s, up %.1f kbit/s\n", s.RTTms.P50, s.RTTms.P99, s.DownKbpsPerClient, s.UpKbpsPerClient)
	} else {
		fmt.Fprintf(w, "  rtt p50 %.1f ms p99 %.1f ms; echo p50 %.1f ms p99 %.1f ms\n", s.RTTms.P50, s.RTTms.P99, s.EchoMs.P50, s.EchoMs.P99)
		fmt.Fprintf(w, "  per client: down %.1f kbit/s, up %.1f kbit/s; the bot's own CPU %.1f µs per client and tick\n", s.DownKbpsPerClient, s.UpKbpsPerClient, s.BotCPUPerClientTick)
		fmt.Fprintf(w, "  reliable: sent %d, received %d, lost %d, duplicates %d, out of order %d", s.ReliableSent, s.ReliableReceived, s.ReliableLost, s.ReliableDuplicates, s.ReliableOutOfOrder)
		if s.ReliableLostWithSession > 0 {
			fmt.Fprintf(w, "; %d in flight on sessions lost", s.ReliableLostWithSession)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  game: inputs %d, late %d (after the first %v), resyncs %d %v, desyncs %d\n",
			s.InputsSent, s.LateInputs, game.ConvergeTime, s.Resyncs, s.ResyncCauses, s.Desyncs)
		fmt.Fprintf(w, "  prediction: rollbacks %d, corrections of own bodies %d; interpolation: %d frames, %d stalled (%d while the lag-compensation bound cut the delay); after the first %v: %d frames, %d stalled (%d)\n",
			s.Rollbacks, s.Corrections, s.InterpFrames, s.InterpStalls, s.InterpStallsBounded,
			game.ConvergeTime, s.InterpFramesSettled, s.InterpStallsSettled, s.InterpStallsBoundedSettled)
		e := &s.Events
		fmt.Fprintf(w, "  events: ready %d, players joined %d, left %d, interrupted %d, back %d; actions accepted %d, rejected %d; messages late %d; resyncs %d/%d, desyncs %d, disconnects %d\n",
			e.Ready, e.PlayersJoined, e.PlayersLeft, e.PlayersInterrupted, e.PlayersBack, e.ActionsAccepted, e.ActionsRejected, e.MessagesLate, e.ResyncsStarted, e.ResyncsFinished, e.Desyncs, e.Disconnects)
		if s.Interruptions > 0 {
			fmt.Fprintf(w, "  hiccups: %d sessions lost, %d rejoined their slots (p50 %.0f ms, p99 %.0f ms, max %.0f ms), %d past the grace joined again as new players (%d)\n",
				s.Interruptions, s.Rejoins, s.RejoinMs.P50, s.RejoinMs.P99, s.RejoinMaxMs, s.RejoinFailures, s.NewPlayers)
		}
	}
	if p := s.Peer; p != nil {
		fmt.Fprintf(w, "  peer slot %d: epoch %d, %d migrations, %d promotions, hosting %v, stepped down %v; standby took %d states and %d steps; resumed inputs missing %d\n",
			p.Slot, p.Epoch, p.Migrations, p.Promotions, p.Hosting, p.SteppedDown, p.StandbyStates, p.StandbySteps, p.ResumedMissing)
		if p.Ended != "" {
			fmt.Fprintf(w, "  peer ended: %s\n", p.Ended)
		}
	}
	if c := s.Commits; c != nil {
		fmt.Fprintf(w, "  commits: %d commands issued, %d executed, %d ticks committed, lead %d ticks, commit lag ≤ %d ticks, longest commit stall %.0f ms\n",
			c.Issued, c.Executed, c.Committed, c.Lead, c.CommitLagMax, c.StallMaxMs)
		fmt.Fprintf(w, "  commits: %d rollbacks (%d ticks replayed), %d kicks, %d resyncs, %d desyncs, %d rejoins, %d clients whose record differs\n",
			c.Rollbacks, c.Replayed, c.Kicks, c.Resyncs, c.Desyncs, c.Rejoins, c.Mismatches)
		if m := c.Mesh; m != nil {
			fmt.Fprintf(w, "  mesh: %d of %d peers reachable; shortcuts sent %d, received %d, useful %d (%.0f ms before the server's copy), late %d; %d peer datagrams dropped\n",
				m.Reachable, m.Peers, m.Sent, m.Received, m.Useful, m.EarlierMs, m.Late, m.Dropped)
		}
	}
	if s.Failed() {
		fmt.Fprintln(w, "  FAILED")
	}
}

// drainEchoes lets the last echoes come back (a few round trips): it
// waits until pending says none is out, at most 5 s.
func drainEchoes(pending func() int) {
	drain := time.NewTimer(5 * time.Second)
	defer drain.Stop()
	poll := time.NewTicker(20 * time.Millisecond) // polling the bots' counters
	defer poll.Stop()
	for pending() > 0 {
		select {
		case <-drain.C:
			return
		case <-poll.C:
		}
	}
}

// createReplay creates the file bot id's connection n records to
// (-record-replay): bot-ID.replay, then bot-ID-N.replay for the new
// players it joins as after a failed rejoin.
func createReplay(o *options, id, n int, gameID uint64) (*replay.Writer, error) {
	if err := os.MkdirAll(o.recordReplay, 0o755); err != nil {
		return nil, fmt.Errorf("-record-replay: %w", err)
	}
	name := fmt.Sprintf("bot-%d.replay", id)
	if n > 0 {
		name = fmt.Sprintf("bot-%d-%d.replay", id, n+1)
	}
	w, err := replay.Create(filepath.Join(o.recordReplay, name), replay.Config{Game: o.game, GameID: gameID})
	if err != nil {
		return nil, fmt.Errorf("-record-replay: %w", err)
	}
	return w, nil
}

// closeReplays closes the bots' recordings, once their clients have
// stopped writing to them.
func closeReplays(bots []*bot) error {
	var first error
	for _, b := range bots {
		if len(b.replays) == 0 {
			continue
		}
		if b.client != nil {
			select {
			case <-b.client.Done():
			case <-time.After(5 * time.Second):
			}
		}
		for _, w := range b.replays {
			if err := w.Close(); err != nil && first == nil {
				first = fmt.Errorf("-record-replay: %w", err)
			}
		}
	}
	return first
}
