package game

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// InputFunc returns a player's input for a tick (appended to dst, exactly
// the game's input size: anything else plays as an idle input and counts
// in ClientStats.BadInputs). The Client calls it once per local
// player for every tick its predicted clock passes, in tick order, on
// the client's loop.
type InputFunc func(player uint16, tick uint32, dst []byte) []byte

// WorldInputFunc is an InputFunc that sees the world as the player sees
// it: world is the predicted world of the last frame (read it, do not
// change it), for input that depends on the state — bots, aim assist,
// "move toward". Install it with Client.InputFrom.
type WorldInputFunc func(world Game, player uint16, tick uint32, dst []byte) []byte

// FrameFunc runs on the client's loop after every frame of the engine
// (Client.OnFrame): read the predicted world, the bodies to draw and
// the effects of that frame there — each effect is in exactly one frame —
// without a lock or a goroutine of your own. Do not keep eng.
type FrameFunc func(eng *sim.Client)

// Client plays a game on a Client. It is the network side of the
// client tick engine (sim.Client): it rebuilds the server's state from
// snapshot deltas and full snapshots (deltacomp.Replica) and hands every
// new state to the engine as the authoritative world; it asks for a
// resync when a delta does not apply or a checksum differs; it puts the
// engine's predicted tick and rendered view in every packet header, its
// input frames in every packet, and feeds it the server's input acks and
// action rejections. The engine runs the predicted clock, prediction with
// rollback, interpolation and correction smoothing (see sim.Client).
// The game hears what happens to it through a Handler (Handle): the
// moment it can play, players joining and leaving, its actions accepted
// or rejected, late postmarked messages, resyncs, desyncs and the
// disconnect, in tick order.
//
// Create it with NewClient and pass it in Dialer.Game (it is a
// ClientLayer: it attaches to the accepted session through the same seam
// any other protocol layer would use). Use Do to read
// the engine (the predicted world, the interpolated bodies, effects)
// while the client's loop is not running it.
type Client struct {
	c       *tickwire.Client
	game    Game
	input   InputFunc
	cfg     sim.ClientConfig
	eng     *sim.Client
	replica *deltacomp.Replica
	codecs  deltacomp.Codecs
	sum     sim.Checksummer

	lastSeq   uint16 // header sequence of the last packet with game frames
	seenSeq   bool
	recvAt    time.Time // when that packet was taken
	lastDelta uint32    // revision of the last delta applied
	deltaTick uint32
	resyncDue bool
	resyncWhy proto.ResyncReason
	resyncAt  time.Time
	checkIdx  []int32
	connected time.Time
	settled   bool // stats.Settled was taken
	stats     ClientStats

	// worldInput replaces input (InputFrom); onFrame runs after each frame
	worldInput WorldInputFunc
	onFrame    FrameFunc

	// cur is c for the goroutines of Stats, State and Do (Attach
	// replaces c when the Client moves to a new session); resuming
	// makes the next Attach a host migration's (Resume).
	cur      atomic.Pointer[tickwire.Client]
	resuming atomic.Bool
	attachMu sync.Mutex // held by Attach, and by the readers around cur

	// revTicks maps the newest replica revisions to their server ticks
	// (UpdatedAt), by revision modulo its length.
	revTicks [512]revTick
	// repMu guards the replica and revTicks for UpdatedAt: held by the
	// loop only while it changes them, so UpdatedAt can read them from
	// anywhere, the loop's own callbacks included.
	repMu sync.RWMutex

	handler  Handler
	sampleFn sim.SampleFunc // g.sample, made once
	ev       gameEvents

	// recording: the Writer Record got, and the recorder on it once a
	// session told the players and the tick rate; own is the engine's
	// Own, made once per engine
	recordTo *replay.Writer
	recorder *replay.ClientRecorder
	own      func(proto.NetworkID) bool
}

// ClientStats count what a Client saw.
type ClientStats struct {
	Deltas, FullSnapshots uint64
	Resyncs               uint64 // resync requests sent
	// ResyncCauses counts resyncs started, by the cause that started
	// them (indexed by proto.ResyncReason).
	ResyncCauses [proto.NumResyncReasons]uint64
	Desyncs      uint64 // checksum mismatches
	ChecksumsOK  uint64
	BadStates    uint64 // states the game's ReadSnapshot rejected
	Rejected     uint64 // actions the server rejected
	// Engine is the client tick engine's view: clock, prediction,
	// interpolation and corrections.
	Engine sim.ClientStats
	// LateInputs counts inputs the server reported missing or late once
	// the clock had ConvergeTime to converge.
	LateInputs uint64
	// Settled is Engine as it stood once the session had lasted
	// ConvergeTime (zero before): Engine minus Settled is what happened
	// since, such as the interpolation stalls of a settled client. The
	// first seconds' stalls are the estimators (jitter, input age, RTT
	// variation) learning the path.
	Settled sim.ClientStats
	// BadInputs counts inputs the InputFunc returned with another size
	// than the game's Schema.InputSize (played as idle inputs).
	BadInputs uint64
	Entities  int
	// Events counts the events delivered (to the Handler, if any),
	// by kind.
	Events [NumEventKinds]uint64
}

// ConvergeTime is how long after connecting a Client's clock is
// given to converge before late inputs count in its statistics.
const ConvergeTime = 3 * time.Second

// NewClient returns a game client for game (a world of the game the
// server runs, used as the template of the engine's worlds), with input
// as the source of its players' inputs (nil: set one with InputFrom, or
// the players stand idle) and cfg for the engine; the local players and
// the tick rate come from the server's accept.
func NewClient(game Game, input InputFunc, cfg sim.ClientConfig) (*Client, error) {
	if game == nil {
		return nil, errors.New("game: NewClient needs a game")
	}
	if len(cfg.Players) > 0 {
		return nil, errors.New("game: NewClient: leave sim.ClientConfig.Players empty: the local players are the connect token's")
	}
	// Check the configuration now rather than at connect time.
	trial := cfg
	trial.Players = []uint16{1}
	if _, err := sim.NewClient(game, trial); err != nil {
		return nil, err
	}
	r, err := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: game.Schema().RecordSize, Predictor: game.Schema().Predictor})
	if err != nil {
		return nil, err
	}
	return &Client{game: game, input: input, cfg: cfg, replica: r}, nil
}

// Attach binds g to a client whose session was just accepted (it is
// Dialer.Game's ClientLayer): it starts the tick engine for the client's
// players at the server's tick and returns the handler of the game's
// frames.
//
// A Client can be attached again, to a new session: after a host
// migration (Resume before dialling the successor) it keeps its engine —
// the sampled inputs, which it re-sends, and the predicted world — and
// re-anchors the clocks; otherwise it starts over with a new engine.
// Either way the state of the old session (the replica, its packet
// sequence, the resync in progress) is forgotten.
func (g *Client) Attach(c *tickwire.Client, a tickwire.Accepted) (tickwire.FrameHandler, error) {
	g.attachMu.Lock() // against Stats, State, Do of the session before
	defer g.attachMu.Unlock()
	g.resetSession()
	if (g.resuming.Swap(false) || a.Rejoined) && g.eng != nil && slices.Equal(g.eng.Players(), a.Players) {
		g.c = c
		g.cur.Store(c)
		g.eng.Resume(a.Time, a.ServerTick, a.RTT)
		g.ev.resume(a.ServerTick)
		if a.Rejoined {
			g.post(a.ServerTick, Event{Kind: EventRejoined, Tick: a.ServerTick})
			g.deliver(0, true)
		}
		why := "resumed"
		if a.Rejoined {
			why = "rejoined"
		}
		g.startRecording(a, why)
		return (*gameFrames)(g), nil
	}
	cfg := g.cfg
	cfg.Players = a.Players
	cfg.TickRate = a.TickRate
	if g.recordTo != nil {
		cfg.FirstStep = g.firstStep
	}
	eng, err := sim.NewClient(g.game, cfg)
	if err != nil {
		return nil, err
	}
	g.c, g.eng = c, eng
	g.own = eng.Own
	g.startRecording(a, "connected")
	g.cur.Store(c)
	g.connected, g.settled = a.Time, false
	g.stats.Settled = sim.ClientStats{}
	schema := g.game.Schema()
	g.ev = gameEvents{newest: make([]uint32, len(cfg.Players)), inputSize: schema.InputSize,
		actionLen: schema.ActionBytes, newestTick: a.ServerTick}
	g.sampleFn = g.sample
	eng.Start(a.Time, a.ServerTick, a.RTT)
	return (*gameFrames)(g), nil
}

// Resume makes the next Attach a host migration's: the session the
// Client is attached to is about to be replaced by one to the
// successor, which resumes the same game (docs/MIGRATION.md); its end
// is not the game's (no EventDisconnected). Call it before closing that
// session.
func (g *Client) Resume() { g.resuming.Store(true) }

// ResumeFailed tells g that the successor Resume prepared it for will
// not come (no player could take the game over, or the player left
// during the migration): the game ends as the end of its session would
// have ended it, with the events still pending and then
// EventDisconnected for reason r. It does nothing unless Resume was
// called and no session was attached since, so a game's end is told
// once. Call it once the session Resume was called for has ended (its
// Client's Done is closed) and before any other Attach.
func (g *Client) ResumeFailed(r proto.DisconnectReason) {
	if !g.resuming.Swap(false) {
		return
	}
	g.do(func() { (*gameFrames)(g).Ended(time.Time{}, r) })
}

// resetSession forgets what belonged to the last session.
func (g *Client) resetSession() {
	g.repMu.Lock()
	g.replica.Reset()
	g.repMu.Unlock()
	g.lastSeq, g.seenSeq, g.recvAt = 0, false, time.Time{}
	g.lastDelta, g.deltaTick = 0, 0
	g.resyncDue, g.resyncAt = false, time.Time{}
}

// Record makes the Client record what it plays to w, for
// tickwire-replay (package replay, docs/DEBUGGING.md): its players'
// inputs, what its game code predicts from each authoritative state
// (its own entities one step on), a confirmed state every
// w.Config().KeyEvery ticks, the checksums it checked, resyncs and
// desyncs. A player can attach the file to a bug report; tickwire-replay
// -bisect compares it with the server's recording of the same game.
// Call it before dialling; the Client writes to w from its loop, across
// rejoins and host migrations. Close w once the last session the Client
// plays has ended (its tickwire.Client's Done is closed).
func (g *Client) Record(w *replay.Writer) { g.recordTo = w }

// startRecording starts the recorder at the first session, and notes
// each session.
func (g *Client) startRecording(a tickwire.Accepted, why string) {
	if g.recordTo == nil {
		return
	}
	if g.recorder == nil {
		r, err := replay.NewClientRecorder(g.recordTo, g.recordTo.Config().GameID, g.game, a.Players, a.TickRate)
		if err != nil {
			g.recordTo = nil // the Writer took another recorder: not ours
			return
		}
		g.recorder = r
	}
	g.recorder.Event(a.ServerTick, replay.Event{Kind: replay.EventSession, Text: why})
}

// firstStep records what the game code made of an authoritative state
// (sim.ClientConfig.FirstStep).
func (g *Client) firstStep(tick uint32, world sim.Game) {
	if g.recorder != nil {
		g.recorder.FirstStep(tick, world, g.own)
	}
}

// gameFrames is the Client seen as its connection's FrameHandler
// and Ticker, so those methods stay out of Client's API.
type gameFrames Client

// Tick runs one client frame: the engine's clock, input sampling,
// rollback and prediction.
func (f *gameFrames) Tick(now time.Time, _ uint32) {
	g := (*Client)(f)
	g.eng.Advance(now, g.sampleFn)
	if g.recorder != nil {
		g.recorder.Frame(g.eng.Tick())
	}
	if !g.settled && now.Sub(g.connected) > ConvergeTime {
		g.settled = true
		g.stats.Settled = g.eng.Stats()
	}
	if g.onFrame != nil {
		g.onFrame(g.eng)
	}
}

// InputFrom makes f the source of the players' inputs instead of the
// InputFunc given to NewClient: f sees the predicted world. Call it
// before dialling.
func (g *Client) InputFrom(f WorldInputFunc) { g.worldInput = f }

// OnFrame makes f run on the client's loop after every frame (FrameFunc).
// Call it before dialling.
func (g *Client) OnFrame(f FrameFunc) { g.onFrame = f }

// Ticks put the predicted tick and the view the client rendered when it
// sampled that tick's input in the header.
func (f *gameFrames) Ticks() tickwire.Ticks {
	v := f.eng.View()
	return tickwire.Ticks{Tick: f.eng.Tick(), InterpFrom: v.From, InterpTo: v.To, Blend: v.Blend}
}

// MaxInputInterval is the longest Client.SetInputInterval.
const MaxInputInterval = 4

// SetInputInterval makes the client send its packets every n ticks (1,
// the default, to MaxInputInterval) instead of every tick, each with the
// n inputs sampled since the last (and any the server has not
// acknowledged): a command rate below the tick rate, as Source's
// cl_cmdrate. The server then receives and opens n times fewer packets
// from this client, and the client sends fewer bytes; its clock leads
// the server by 1.5·(n−1) ticks more, so that the inputs sampled first
// still arrive in time, even when a packet is lost
// (sim.ClientConfig.InputInterval). Reliable data queued goes at once
// whatever n.
// Call it before dialing.
func (g *Client) SetInputInterval(n int) error {
	if n < 1 || n > MaxInputInterval {
		return fmt.Errorf("game: input interval %d is outside 1–%d ticks", n, MaxInputInterval)
	}
	g.cfg.InputInterval = n // the engine's clock covers the cadence too
	return nil
}

// Due paces the client's packets (Pacer): every tick, or every
// SetInputInterval ticks.
func (f *gameFrames) Due(tick uint32) bool {
	return f.cfg.InputInterval <= 1 || tick%uint32(f.cfg.InputInterval) == 0
}

// AppendFrames writes the engine's input frames (every input the server
// has not acknowledged, at least enough for the measured loss) and a
// pending resync request.
func (f *gameFrames) AppendFrames(b []byte, room int, p *tickwire.PacketInfo) []byte {
	g := (*Client)(f)
	start := len(b)
	b = g.eng.AppendInputFrames(b, room, p.Loss)
	now := p.Time
	if g.resyncDue && now.Sub(g.resyncAt) > 500*time.Millisecond {
		req := g.replica.ResyncRequest(g.resyncWhy)
		if nb, err := req.Append(b); err == nil && len(nb)-start <= room {
			b = nb
			g.resyncAt = now
			g.stats.Resyncs++
			g.resyncStarted(g.resyncWhy)
		}
	}
	return b
}

func (g *Client) resync(why proto.ResyncReason) {
	if !g.resyncDue {
		g.resyncDue, g.resyncWhy = true, why
		g.stats.ResyncCauses[why]++
	}
}

// authoritative hands the replica's state to the engine.
func (g *Client) authoritative(tick uint32) {
	if err := g.eng.Authoritative(tick, g.replica.State()); err != nil {
		g.stats.BadStates++
		g.resync(proto.ResyncPatchError)
		return
	}
	if g.recorder != nil && !g.cfg.SkipState {
		g.recorder.Confirmed(g.replica.State())
	}
	g.stateApplied(tick)
}

// Frame handles a game frame from the server.
func (f *gameFrames) Frame(t proto.FrameType, frame []byte, p *tickwire.PacketInfo) error {
	g := (*Client)(f)
	h := &p.Header
	if !g.seenSeq || h.Seq != g.lastSeq {
		g.lastSeq, g.seenSeq, g.recvAt = h.Seq, true, p.Time
		g.eng.PacketReceived(g.recvAt, h.Tick)
		g.packetTick(h.Tick)
	}
	switch t {
	case proto.FrameSnapshotDelta:
		d, _, err := proto.ParseSnapshotDeltaFrame(frame)
		if err != nil {
			return err
		}
		g.eng.SnapshotReceived(g.recvAt, d.Tick)
		if g.cfg.SkipState { // acked, not applied (no checksum compared then)
			g.stats.Deltas++
			g.authoritative(d.Tick)
			return nil
		}
		g.repMu.Lock()
		err = g.replica.Apply(&d)
		if err == nil {
			g.revTicks[d.Revision%uint32(len(g.revTicks))] = revTick{rev: d.Revision, tick: d.Tick}
		}
		g.repMu.Unlock()
		switch {
		case err == nil:
			g.stats.Deltas++
			g.lastDelta, g.deltaTick = d.Revision, d.Tick
			g.authoritative(d.Tick)
		case errors.Is(err, deltacomp.ErrBaselineMissing):
			g.resync(proto.ResyncBaselineMissing)
		case errors.Is(err, deltacomp.ErrStale):
		default:
			g.resync(proto.ResyncPatchError)
		}
	case proto.FrameFullSnapshot:
		g.gameFrame()
		full, _, err := proto.ParseFullSnapshotFrame(frame)
		if err != nil {
			g.resync(proto.ResyncPatchError)
			return err
		}
		if g.cfg.SkipState {
			g.stats.FullSnapshots++
			g.authoritative(full.Tick)
			g.fullSnapshot(full.Tick)
			return nil
		}
		g.repMu.Lock()
		err = g.replica.ApplyFull(&full, &g.codecs)
		if err == nil {
			rev := g.replica.Revision()
			g.revTicks[rev%uint32(len(g.revTicks))] = revTick{rev: rev, tick: g.replica.State().Tick}
		}
		g.repMu.Unlock()
		if err != nil {
			g.resync(proto.ResyncPatchError)
			return nil // the frame was well formed; the state it names is not ours
		}
		g.stats.FullSnapshots++
		g.resyncDue = false
		g.recordEvent(full.Tick, replay.Event{Kind: replay.EventResync, Arg: uint32(full.Cause)})
		g.authoritative(g.replica.State().Tick)
		g.fullSnapshot(g.replica.State().Tick)
	case proto.FrameChecksum:
		cs, _, err := proto.ParseChecksumFrame(frame)
		if err != nil {
			return err
		}
		if g.lastDelta == 0 || g.replica.Revision() != g.lastDelta || cs.Tick != g.deltaTick {
			return nil // not right after the delta it describes: nothing to compare
		}
		ok := g.sumReplica() == cs.Sum
		if g.recorder != nil {
			g.recorder.Check(cs.Tick, cs.Sum, ok)
		}
		if !ok {
			g.stats.Desyncs++
			g.desync(cs.Tick)
			g.resync(proto.ResyncChecksum)
		} else {
			g.stats.ChecksumsOK++
		}
	case proto.FrameInputAck:
		a, _, err := proto.ParseInputAckFrame(frame)
		if err != nil {
			return err
		}
		late := g.eng.InputAck(g.recvAt, a, h.Tick, p.RTTVar)
		if late && g.recvAt.Sub(g.connected) > ConvergeTime {
			g.stats.LateInputs++
		}
		g.inputAck(&a, h.Tick)
	case proto.FrameControl:
		g.gameFrame() // counted even when malformed: the server counted it
		ctl, _, err := proto.ParseControlFrame(frame)
		if err != nil {
			return err
		}
		if ctl.Code == proto.ControlActionRejected {
			g.stats.Rejected++
			g.eng.Rejected(ctl.Player, ctl.Tick)
		}
		g.control(&ctl, h.Tick)
	case proto.FrameEffect:
		g.gameFrame()
		ef, _, err := proto.ParseEffectFrame(frame)
		if err != nil {
			return err
		}
		e := sim.Effect{Tick: ef.Tick, Kind: ef.Kind, Player: ef.Player, Entity: ef.Entity, Data: ef.Data}
		g.post(ef.Tick, Event{Kind: EventEffect, Tick: ef.Tick, Player: ef.Player, Effect: e})
		g.advance()
	default:
		return errUnexpectedFrame
	}
	return nil
}

// sumReplica is the checksum frame's sum (sim.Checksummer.EntitiesSum)
// over the entities the delta frame just applied carried, with their
// values in the replica. Not "every entity of that revision": a second
// delta of the same revision (a server tick that ran no step) or a full
// snapshot of it would add entities the server's sum does not cover.
func (g *Client) sumReplica() uint64 {
	s := g.replica.State()
	g.checkIdx = g.checkIdx[:0]
	lo := 0
	for _, id := range g.replica.Carried() {
		i, ok := slices.BinarySearch(s.IDs[lo:], id)
		i += lo
		if ok {
			g.checkIdx = append(g.checkIdx, int32(i))
			lo = i
		}
	}
	return g.sum.EntitiesSum(s, g.checkIdx)
}

// revTick is a replica revision's server tick.
type revTick struct{ rev, tick uint32 }

// UpdatedAt is the server tick as of which the client's record of entity
// id is confirmed: the tick of the newest snapshot delta that carried the
// entity, with a new value or (an all-zero patch) a confirmation that the
// value the client holds is still the server's. ok is false when the
// client holds no record of id, or one too old to say.
//
// The confirmed world (sim.Client.Confirmed, and State) is the state of
// the newest delta applied, at its tick T, but only entity by entity: an
// entity with UpdatedAt(id) = T is fresh, its record the server's at T;
// any other is stale, its record the server's at UpdatedAt(id) and
// perhaps no longer — out of the client's view, held back by its
// distance band or the packet budget, or its last update lost on the way.
// A server whose scheduler confirms (interest.SchedulerConfig.Confirm)
// confirms the unchanged entities it considers in a tick, as far as the
// packet has room, so that an unchanged entity in view is fresh; without
// it, an unchanged entity is stale until it changes. Safe from any goroutine, the client's loop
// (OnFrame, InputFrom, Handler) included.
func (g *Client) UpdatedAt(id proto.NetworkID) (tick uint32, ok bool) {
	g.repMu.RLock()
	defer g.repMu.RUnlock()
	return g.updatedAt(id)
}

// do runs f under the current session's lock, unless no session was
// attached yet; it reports whether f ran.
func (g *Client) do(f func()) bool {
	g.attachMu.Lock()
	defer g.attachMu.Unlock()
	c := g.cur.Load()
	if c == nil {
		return false
	}
	c.Do(f)
	return true
}

func (g *Client) updatedAt(id proto.NetworkID) (uint32, bool) {
	s := g.replica.State()
	i, found := slices.BinarySearch(s.IDs, id)
	if !found {
		return 0, false
	}
	rev := g.replica.EntityRevision(i)
	rt := g.revTicks[rev%uint32(len(g.revTicks))]
	return rt.tick, rt.rev == rev && rev != 0
}

// Stats returns the counters. Safe from any goroutine but the client's
// loop: not from OnFrame, InputFrom or a Handler, which it would wait
// for forever (they have the engine at hand).
func (g *Client) Stats() ClientStats {
	var st ClientStats
	g.do(func() {
		st = g.stats
		st.Engine = g.eng.Stats()
		st.Events = g.ev.counts
		st.Entities = g.replica.State().Len()
	})
	return st
}

// State calls f with the replicated state (the newest value of every
// entity the server sent), under the client's lock: from any goroutine
// but the client's loop, as Stats.
func (g *Client) State(f func(s *deltacomp.Snapshot)) {
	g.do(func() { f(g.replica.State()) })
}

// Do calls f with the tick engine (the predicted and confirmed worlds,
// bodies to render, effects) under the client's lock, between two of
// the loop's frames. It does nothing before the client connected. Not
// from the client's loop, as Stats: OnFrame already has the engine.
func (g *Client) Do(f func(eng *sim.Client)) {
	g.do(func() { f(g.eng) })
}
