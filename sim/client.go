package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// SampleFunc returns a local player's input for a tick, appended to dst
// (exactly Schema.InputSize bytes; anything else counts as an idle, all
// zero input). dst has room for one input: appending to dst[:0] does not
// allocate.
type SampleFunc func(player uint16, tick uint32, dst []byte) []byte

// ClientStats are the client engine's counters and clock state.
type ClientStats struct {
	// InputsSampled counts ticks sampled (for all local players at once).
	InputsSampled uint64
	// InputAcks counts input acks taken; LateInputs those reporting the
	// input for their tick missing or late.
	InputAcks, LateInputs uint64
	// Snapshots counts authoritative states taken; StaleSnapshots those
	// ignored because a newer one had arrived.
	Snapshots, StaleSnapshots uint64
	// RejectedActions counts actions the server rejected.
	RejectedActions uint64
	// ClockJumps counts jumps of a far-behind predicted clock (and their
	// top-ups, see predClock.ack).
	ClockJumps uint64
	// PredictionCapped counts frames that sampled nothing because the
	// predicted tick had reached the prediction limit (three quarters of
	// the input ring past the newest server tick heard: the server is
	// silent).
	PredictionCapped uint64
	// Resumes counts host migrations the clocks were re-anchored for.
	Resumes uint64
	// Rollbacks counts rollbacks to a new authoritative state;
	// Resimulated the ticks re-simulated by them, Predicted the ticks
	// predicted for the first time.
	Rollbacks, Resimulated, Predicted uint64
	// Corrections counts re-simulations that moved one of the client's own
	// bodies (ClientConfig.Own) at a tick it had shown; CorrectionMax and
	// CorrectionTotal are the largest and summed distances (game units).
	// Visible is the largest smoothed offset of an own body shown now.
	Corrections                             uint64
	CorrectionMax, CorrectionTotal, Visible float64
	// InterpFrames counts frames that showed interpolated state;
	// InterpStalls those whose interpolation time was past the newest
	// snapshot (they show the newest); InterpClamps those where the
	// interpolation time was pulled up to MaxInterpLag; InterpSnaps resets
	// of an interpolation delay far off its target.
	InterpFrames, InterpStalls, InterpClamps, InterpSnaps uint64
	// InterpStallsBounded counts the stalls during which MaxInterpLag
	// held the interpolation delay below its target (the cover for lost
	// packets included): those the lag-compensation bound won over
	// smoothness. The other stalls are packets later than the target
	// covered.
	InterpStallsBounded uint64
	// InterpDelay is the smoothed delay of the interpolation time behind
	// the newest snapshot, InterpTarget what it is steered to (packet
	// interval + 2 × jitter), InterpDilation the interpolation clock's
	// time dilation.
	InterpDelay, InterpTarget time.Duration
	InterpDilation            float64
	// InterpCadence is the server's snapshot cadence the interpolation
	// clock learned, in ticks (1: a snapshot every tick; a game host's
	// game.Config.SnapshotInterval when it paces them): the least tick
	// step of the last 8 snapshot deltas (SnapshotReceived).
	InterpCadence uint32
	// Lead is how far the predicted tick runs ahead of the newest server
	// tick received, in ticks.
	Lead float64
	// InputAge is the smoothed input age the server reports, TargetAge
	// what the clock steers it to, Dilation the predicted clock's current
	// time dilation (within ±0.1).
	InputAge, TargetAge time.Duration
	Dilation            float64
}

// Client is the client side of the tick engine. Each frame
// (Advance) it moves a predicted clock that runs just far enough ahead of
// the server for inputs to arrive right before they are needed, samples
// the local players' inputs for every tick it passes, rolls the predicted
// world back to the newest authoritative state and re-simulates every
// unconfirmed tick (always), smooths the resulting corrections of what it
// displays, and moves an interpolation clock that shows remote entities
// between two received snapshots. Input frames repeat every input the
// server has not acknowledged; each input is tagged with the view shown
// when it was sampled, which the server rebuilds for lag compensation and
// the client's own re-simulation rebuilds through Tick.Rewind.
//
// Per received packet the caller passes in PacketReceived, then
// Authoritative (the replica's state after applying the update),
// InputAck and Rejected; per frame it calls Advance and sends what
// AppendInputFrames writes in a packet whose header carries Tick and
// View. It does no I/O, reads no clock and starts no goroutines; one
// goroutine drives it, and the slices it returns are valid until its
// next call.
type Client struct {
	cfg     ClientConfig
	schema  Schema
	period  time.Duration
	started bool

	clock     predClock
	ring      inputRing
	nextInput uint32 // the next tick to sample
	sampled   bool   // a tick has been sampled (nextInput-1 is valid)

	acked      []uint32 // per local player: newest input tick the server holds
	firstInput uint32   // the first tick sampled since Start
	frameBuf   []byte

	newestServer uint32 // newest server tick seen in a packet
	hasServer    bool

	// The newest authoritative state (and a scratch world a snapshot is
	// read into first, so a malformed one leaves auth intact).
	auth, scratch Game
	authTick      uint32
	hasAuth       bool
	authIDs       []proto.NetworkID

	// Prediction: the predicted world at simTick, the step context.
	pred        Game
	simTick     uint32
	predicting  bool // pred holds a prediction (from an authoritative state)
	rollbackDue bool // a newer authoritative state arrived
	ctx         Tick
	inputs      []PlayerInput
	scratchIn   [][]byte // per local player: a missing or rejected input
	spawn       spawnContext
	fx          effectLog
	rw          clientRewinder
	rejected    []rejection // rejections not yet covered by authoritative state
	resumed     bool        // Resume: the next rollback smooths from what was shown

	// Interpolation: the clock, the bodies of recent authoritative
	// states, this frame's view and its bodies.
	interp       interpClock
	hist         *BodyHistory
	histNewest   uint32
	histBodies   int // bodies in the newest recorded state: the size of new history slots
	hasHist      bool
	view         View
	interpBodies []Body

	// Display: predicted bodies and their smoothed corrections.
	own        func(proto.NetworkID) bool
	predBodies []Body
	newBodies  []Body
	display    []Body
	smooth     smoother
	corr       correctionStats
	lastFrame  time.Time
	render     renderState // RenderBodies

	stats ClientStats
}

// NewClient returns a client engine for game, a world of the game the
// server runs (its state does not matter: the first authoritative state
// replaces it).
func NewClient(game Game, cfg ClientConfig) (*Client, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	schema := game.Schema()
	if err := schema.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, schema: schema, auth: game.Clone(), scratch: game.Clone(), pred: game.Clone()}
	c.own = cfg.Own
	if c.own == nil {
		c.own = c.spawnedLocally
		if o, ok := game.(EntityOwner); ok {
			c.own = func(id proto.NetworkID) bool { return c.playerIndex(o.Owner(id)) >= 0 }
		}
	}
	c.spawn.ids = NewSpawnIDs(cfg.SpawnsPerTick)
	c.fx.track = true
	c.rw.c = c
	c.ctx.spawn, c.ctx.effects, c.ctx.rewind = &c.spawn, &c.fx, &c.rw
	c.inputs = make([]PlayerInput, 0, len(cfg.Players))
	for range cfg.Players {
		c.scratchIn = append(c.scratchIn, make([]byte, schema.InputSize))
	}
	c.period = time.Second / time.Duration(cfg.TickRate)
	c.clock.period = c.period
	c.clock.every = float64(cfg.InputInterval)
	c.interp.reset(c.period)
	// The history covers interpolation (MaxInterpLag and some) and, for
	// prediction, the views of every input in the ring (Tick.Rewind).
	histTicks := int(cfg.MaxInterpLag/c.period) + 16 + cfg.InputRing
	if cfg.Headless {
		histTicks = 1
	}
	c.hist = NewBodyHistory(histTicks)
	n := len(cfg.Players)
	c.ring = newInputRing(cfg.InputRing, n, schema.InputSize)
	c.acked = make([]uint32, n)
	c.frameBuf = make([]byte, 0, proto.MaxInputBytes)
	return c, nil
}

// Period is the fixed step.
func (c *Client) Period() time.Duration { return c.period }

// Players are the local player slots, ascending.
func (c *Client) Players() []uint16 { return c.cfg.Players }

// Start anchors the clocks from the handshake: the server was at
// serverTick when it answered, and the handshake took rtt. Calling it
// again (after a reconnect) starts over.
func (c *Client) Start(now time.Time, serverTick uint32, rtt time.Duration) {
	c.clock.start(now, serverTick, rtt)
	c.ring.reset()
	c.nextInput = uint32(int64(c.clock.tick))
	c.sampled = false
	c.firstInput = c.nextInput
	for p := range c.acked {
		c.acked[p] = c.nextInput - 1 // nothing before the first sample is needed
	}
	c.newestServer, c.hasServer = serverTick, true
	c.predicting = false
	c.rollbackDue = c.hasAuth
	c.lastFrame = now
	c.interp.reset(c.period)
	c.interp.packet(now, serverTick)
	c.started = true
}

// Resume re-anchors the clocks on a new server after a host migration
// (docs/MIGRATION.md), keeping the sampled inputs: the new host resumed
// the game at serverTick and holds none of the inputs after it, so every
// one the ring still holds after serverTick goes out again, and the
// inputs up to the newest one the old host acknowledged are kept as they
// were (the old host may have run them; the successor must run the
// same). Prediction starts again from the next authoritative state,
// interpolation from the next packets. rtt is the new handshake's.
func (c *Client) Resume(now time.Time, serverTick uint32, rtt time.Duration) {
	if !c.started {
		c.Start(now, serverTick, rtt)
		return
	}
	c.clock.start(now, serverTick, rtt)
	next := uint32(int64(c.clock.tick))
	for _, a := range c.acked {
		if int32(a+1-next) > 0 {
			next = a + 1 // never re-sample an input the old host held
		}
	}
	if c.sampled && int32(next-c.nextInput) < 0 {
		// Re-sample from next: the inputs of the ticks after it were
		// sampled while the host was silent and reached nobody.
		c.nextInput = next
		c.clock.tick = max(c.clock.tick, float64(next))
	}
	for p := range c.acked {
		if int32(c.acked[p]-serverTick) > 0 {
			c.acked[p] = serverTick
		}
	}
	c.newestServer, c.hasServer = serverTick, true
	c.hasAuth, c.predicting, c.rollbackDue = false, false, false
	c.resumed = true
	c.authIDs = c.authIDs[:0]
	c.hist.Reset()
	c.hasHist = false
	c.render.cur, c.render.prev = c.render.cur[:0], c.render.prev[:0]
	c.lastFrame = now
	c.interp.resumeAt(serverTick)
	c.stats.Resumes++
}

// Advance runs one client frame at now: it moves the predicted clock
// (with its time dilation) and calls sample for every local player and
// every tick the clock passed; if a newer authoritative state arrived
// since the last frame it rolls the predicted world back to it and
// re-simulates every tick since with the sampled inputs (always, not
// only on a misprediction), then predicts the new ticks; it fades the
// display corrections.
func (c *Client) Advance(now time.Time, sample SampleFunc) {
	if !c.started {
		return
	}
	dt := now.Sub(c.lastFrame)
	c.lastFrame = now
	c.fx.events = c.fx.events[:0]
	c.clock.advance(now)
	if c.cfg.Headless {
		c.view = View{From: c.authTick, To: c.authTick}
		c.sample(sample)
		c.assignViews()
		return
	}
	c.interpolate(now)
	c.sample(sample)
	c.assignViews()
	c.decayCorrections(min(dt, maxFrameStep))
	c.predict()
	c.display = c.smooth.apply(c.display[:0], c.predBodies)
	c.render.keep(c.Tick(), c.display)
}

// sample samples the inputs of the ticks the clock passed, no further
// than the prediction limit: three quarters of the input ring (48 ticks,
// 800 ms at 60 Hz) past the newest server tick heard, well beyond any
// lead a playable path needs. A server silent that long (a host that
// died, a long outage) does not make the ring overwrite the inputs it
// may still need: those it acknowledged, and those a successor resuming
// from a tick up to a quarter ring earlier will need again (Resume).
func (c *Client) sample(sample SampleFunc) {
	target := uint32(int64(math.Floor(c.clock.tick)))
	if limit := c.newestServer + uint32(c.cfg.InputRing*3/4); int32(target-limit) > 0 {
		if int32(c.nextInput-limit) > 0 {
			c.stats.PredictionCapped++
			return
		}
		target = limit
	}
	if int32(target-c.nextInput) >= int32(c.cfg.InputRing/2) {
		// Far behind (a stall or a clock jump): skip to now rather than
		// burst half a ring of inputs.
		c.nextInput = target - uint32(c.cfg.InputRing/2) + 1
	}
	for ; int32(target-c.nextInput) >= 0; c.nextInput++ {
		t := c.nextInput
		c.ring.put(t)
		for p, player := range c.cfg.Players {
			dst := c.ring.input(t, p)
			in := dst[:0]
			if sample != nil {
				in = sample(player, t, dst[:0])
			}
			switch {
			case len(in) != c.schema.InputSize:
				clear(dst)
			case &in[0] != &dst[0]:
				copy(dst, in)
			}
		}
		c.sampled = true
		c.stats.InputsSampled++
	}
}

// assignViews gives the ticks sampled since the last input frames the
// view shown now. They go out together in the next packet, whose header
// names the view of the newest, and the server derives each older tick's
// view by shifting it back by the tick difference; the client records
// exactly that, so its own rewinds rebuild what the server will.
func (c *Client) assignViews() {
	if !c.sampled {
		return
	}
	h := c.Tick()
	v := c.view
	if int32(v.To-h) > 0 || int32(v.From-h) > 0 {
		// The newest snapshot is ahead of the prediction (just started).
		f := min(v.From, h)
		v = View{From: f, To: f}
	}
	for t := h; ; t-- {
		s := c.ring.slot(t)
		if s == nil || s.sent {
			break
		}
		s.view = v.shift(h - t)
	}
}

// Tick is the predicted tick: the newest tick whose inputs were sampled.
// Put it in the header of packets carrying AppendInputFrames' frames.
func (c *Client) Tick() uint32 { return c.nextInput - 1 }

// View is what the client rendered when it sampled the input for Tick:
// put it in the same header (InterpFrom, InterpTo, Blend). The server
// rebuilds it for lag compensation.
func (c *Client) View() View {
	if s := c.ring.slot(c.Tick()); s != nil {
		return s.view
	}
	t := c.Tick()
	return View{From: t, To: t}
}

// Lead is how far (in ticks) the predicted clock runs ahead of the newest
// server tick received.
func (c *Client) Lead() float64 { return c.clock.tick - float64(c.newestServer) }

// Redundancy is how many inputs each input frame repeats at least, for a
// packet loss rate loss (0..1): enough that losing them all in a row has
// a probability below 1e-4, and never fewer than 3.
func Redundancy(loss float64) int {
	if !(loss > 0) {
		return 3
	}
	loss = min(loss, 0.9)
	k := int(math.Ceil(math.Log(1e-4) / math.Log(loss)))
	return max(3, min(k, proto.MaxInputsPerFrame))
}

// AppendInputFrames appends one proto.InputFrame per local player to b:
// its inputs up to Tick, at least Redundancy(loss) of them and every one
// the server has not acknowledged (up to proto.MaxInputsPerFrame and what
// the ring holds), using at most room bytes. A frame that does not fit
// whole carries fewer, newest, inputs.
func (c *Client) AppendInputFrames(b []byte, room int, loss float64) []byte {
	if !c.started || !c.sampled {
		return b
	}
	start := len(b)
	newest := c.Tick()
	size := c.schema.InputSize
	want := Redundancy(loss)
	perFrame := min(proto.MaxInputsPerFrame, proto.MaxInputBytes/size, c.cfg.InputRing)
	overhead := 1 + 2 + 4 + 1 + proto.VarintLen(uint32(size))
	for p, player := range c.cfg.Players {
		want := max(want, int(int32(newest-c.acked[p])))
		want = min(want, c.cfg.InputRing)
		// Frames of contiguous sampled ticks, the newest first: more than
		// one when more inputs are unacknowledged than a frame holds (a
		// successor after a host migration needs every one).
		for end := newest; want > 0; {
			count := min(want, perFrame, (room-(len(b)-start)-overhead)/size)
			n := 0
			for n < count && c.ring.slot(end-uint32(n)) != nil {
				n++
			}
			if n == 0 {
				break
			}
			data := c.frameBuf[:0]
			for t := end - uint32(n) + 1; int32(end-t) >= 0; t++ {
				data = append(data, c.ring.input(t, p)...)
			}
			c.frameBuf = data
			f := proto.InputFrame{Player: player, Tick: end, Count: uint8(n), Size: uint16(size), Data: data}
			nb, err := f.Append(b)
			if err != nil {
				break
			}
			b = nb
			want -= n
			end -= uint32(n)
		}
	}
	// Every sampled tick has now gone out under this header's view.
	for t := newest; ; t-- {
		s := c.ring.slot(t)
		if s == nil || s.sent {
			break
		}
		s.sent = true
	}
	return b
}

// PacketReceived notes that a packet from the server for serverTick (its
// header tick) arrived at now.
func (c *Client) PacketReceived(now time.Time, serverTick uint32) {
	if !c.hasServer || int32(serverTick-c.newestServer) > 0 {
		c.newestServer, c.hasServer = serverTick, true
	}
}

// SnapshotReceived notes that a snapshot delta of the server's state at
// tick arrived at now: the interpolation clock steers by their arrivals,
// whatever the server's cadence (one every tick, or every few: a game
// host's snapshot interval), not by other packets'.
func (c *Client) SnapshotReceived(now time.Time, tick uint32) {
	c.interp.packet(now, tick)
}

// InputAck takes an input ack frame from the server's update for
// serverTick (after PacketReceived for its packet): the newest input it
// holds for the player (which inputs need no repeating) and how long the
// input for serverTick waited (the clock steers that age to a target of
// one tick plus 2 × rttVar, the round-trip time variation). It reports
// whether the server had that input late or not at all (counted in
// ClientStats.LateInputs). Acks for other players, and acks from before
// any of our inputs arrived, are ignored.
func (c *Client) InputAck(now time.Time, a proto.InputAckFrame, serverTick uint32, rttVar time.Duration) (late bool) {
	p := c.playerIndex(a.Player)
	if p < 0 || !c.started {
		return false
	}
	if int32(a.Newest-c.firstInput) < 0 {
		return false // none of our inputs has arrived yet: no age to steer by
	}
	if int32(a.Newest-c.acked[p]) > 0 {
		c.acked[p] = a.Newest
	}
	c.stats.InputAcks++
	late, jumped := c.clock.ack(now, a.Age, a.Newest, serverTick, rttVar)
	if late {
		c.stats.LateInputs++
	}
	if jumped {
		c.stats.ClockJumps++
	}
	return late
}

// Acked is the newest input of player the server acknowledged
// (InputAck; before any ack, the tick before the first input sampled);
// ok is false for a player this client does not play. After Resume it
// is at most the new server's tick.
func (c *Client) Acked(player uint16) (tick uint32, ok bool) {
	p := c.playerIndex(player)
	if p < 0 {
		return 0, false
	}
	return c.acked[p], true
}

// Authoritative takes the newest confirmed state: the server's snapshot
// for tick (for a client of an interest-managed server, the replica's
// state after applying the update for tick). States older than one
// already taken are ignored. s is read during the call only. An error
// (ReadSnapshot rejected a record) leaves the previous state in place;
// ask the server for a resync.
func (c *Client) Authoritative(tick uint32, s *deltacomp.Snapshot) error {
	if c.cfg.Headless {
		if !c.hasAuth || int32(tick-c.authTick) > 0 {
			c.authTick, c.hasAuth = tick, true
			c.stats.Snapshots++
		}
		return nil
	}
	if c.hasAuth && int32(tick-c.authTick) <= 0 {
		c.stats.StaleSnapshots++
		// Reordered: still good for interpolation if it is missing there.
		if _, ok := c.hist.Get(tick); !ok && int32(c.histNewest-tick) < int32(c.hist.Len()) {
			if c.scratch.ReadSnapshot(s) == nil {
				c.record(tick, c.scratch)
			}
		}
		return nil
	}
	if err := c.scratch.ReadSnapshot(s); err != nil {
		return fmt.Errorf("sim: authoritative state for tick %d: %w", tick, err)
	}
	c.auth, c.scratch = c.scratch, c.auth
	c.authTick, c.hasAuth = tick, true
	c.authIDs = append(c.authIDs[:0], s.IDs...)
	c.rollbackDue = true
	c.record(tick, c.auth)
	c.stats.Snapshots++
	return nil
}

// Confirmed is the newest authoritative world and its tick (ok false
// before the first). Read it between calls only. Under interest
// management it holds, besides the entities the server confirmed at that
// tick, the last records of those it did not (out of view, held back):
// game.Client.UpdatedAt tells which are which.
func (c *Client) Confirmed() (world Game, tick uint32, ok bool) {
	return c.auth, c.authTick, c.hasAuth
}

// Rejected takes the server's rejection of player's action in the input
// for tick (proto.ControlActionRejected: its Player and Tick): the action is
// zeroed in the input ring, so re-simulation no longer predicts it, and
// the effects predicted for that player at that tick are cancelled (see
// Effects). Call it before the Advance that takes the authoritative state
// of that tick, as the server sends both in the same update.
func (c *Client) Rejected(player uint16, tick uint32) {
	p := c.playerIndex(player)
	if p < 0 {
		return
	}
	c.stats.RejectedActions++
	if len(c.rejected) < 4*c.cfg.InputRing {
		c.rejected = append(c.rejected, rejection{player, tick})
	}
	if c.ring.slot(tick) != nil && c.schema.ActionBytes > 0 {
		in := c.ring.input(tick, p)
		clear(in[len(in)-c.schema.ActionBytes:])
	}
}

func (c *Client) spawnedLocally(id proto.NetworkID) bool {
	return c.playerIndex(id.Spawner()) >= 0
}

func (c *Client) playerIndex(player uint16) int {
	for i, p := range c.cfg.Players {
		if p == player {
			return i
		}
	}
	return -1
}

// Stats returns the counters and clock state.
func (c *Client) Stats() ClientStats {
	st := c.stats
	st.Lead = c.Lead()
	st.InputAge = time.Duration(c.clock.ageEMA * float64(time.Second))
	st.TargetAge = time.Duration(c.clock.target * float64(time.Second))
	st.Dilation = c.clock.dilation
	st.Corrections, st.CorrectionMax, st.CorrectionTotal = c.corr.count, c.corr.max, c.corr.total
	st.Visible = c.smooth.visible(c.own)
	st.InterpSnaps = c.interp.snaps
	st.InterpDelay = time.Duration(c.interp.delay * float64(time.Second))
	st.InterpTarget = time.Duration(c.interp.target() * float64(time.Second))
	st.InterpDilation = c.interp.dilation
	st.InterpCadence = c.interp.step()
	return st
}
