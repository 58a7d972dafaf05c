package game

import (
	"fmt"
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
)

// EventKind says what a Event reports.
type EventKind uint8

// Game events and what each sets of Event's fields (Event's
// documentation shows one of each).
const (
	// EventReady: the game can be played. The first state was applied
	// and the server simulated a tick with this client's input on time
	// (the clock leads enough). Tick is that tick (or the first state's,
	// if later). Once per connection.
	EventReady EventKind = iota + 1
	// EventPlayerJoined: Player joined at Tick (the first tick with it);
	// the joiner hears its own join too.
	EventPlayerJoined
	// EventPlayerLeft: Player left at Tick (the first tick without it);
	// Reason is why (the proto.DisconnectReason's name: "closed",
	// "timeout", "kicked"...).
	EventPlayerLeft
	// EventActionAccepted: the server simulated local Player's action
	// (an input whose action bytes were not all zero) at Tick. (One
	// case is beyond what the client can tell: an action all of whose
	// copies were lost — proto.MaxInputsPerFrame packets in a row — while
	// later inputs arrived, is reported accepted though its tick ran
	// without it.)
	EventActionAccepted
	// EventActionRejected: the server rejected local Player's action at
	// Tick; Reason says why (the game's ValidateAction error, or "arrived
	// after its tick" for an input that reached the server too late).
	EventActionRejected
	// EventMessageLate: local Player's message postmarked for Tick on
	// Channel arrived after that tick; it ran at RanAt (0: dropped, as
	// the server's sim.ServerConfig.LateMessages says). It is ordered by
	// RanAt (or, dropped, by when the notice came), so its Tick may be
	// older than the event before it.
	EventMessageLate
	// EventResyncStarted: the client asked the server for a full state
	// (Resync says why); Tick is the newest server tick it had seen.
	EventResyncStarted
	// EventResyncFinished: the full state the resync asked for arrived;
	// Tick is its tick, Resync the cause of the resync.
	EventResyncFinished
	// EventDesync: the checksum of Tick differed from the client's state
	// (a resync follows).
	EventDesync
	// EventDisconnected: the session ended (Disconnect says why); Tick is
	// the newest server tick seen. Always the last event.
	EventDisconnected
	// EventEffect: the server's game produced Effect at Tick, and its
	// Config.SendEffects sent it to this client (a tag, a score, an
	// explosion out of the client's prediction).
	EventEffect
	// EventPlayerInterrupted: Player's connection went silent at Tick,
	// or its session ended without a leave and its slot waits for it to
	// rejoin. It is still in the game; its inputs run missing.
	EventPlayerInterrupted
	// EventPlayerBack: Player is heard again at Tick (on its session, or
	// on a new one that rejoined its slot).
	EventPlayerBack
	// EventRejoining: this client's session was lost without a leave
	// (Disconnect says how) and it is coming back by itself
	// (tickwire.Dialer.Rejoin); Tick is the newest server tick seen.
	// EventRejoined or EventDisconnected follows.
	EventRejoining
	// EventRejoined: this client is back in its slots on a new session;
	// Tick is the server's tick at the accept. The game as it stands
	// follows.
	EventRejoined
	numGameEventKinds
)

// NumGameEventKinds bounds EventKind, for arrays indexed by kind.
const NumEventKinds = int(numGameEventKinds)

var gameEventNames = [...]string{
	EventReady:             "ready",
	EventPlayerJoined:      "joined",
	EventPlayerLeft:        "left",
	EventActionAccepted:    "action accepted",
	EventActionRejected:    "action rejected",
	EventMessageLate:       "message late",
	EventResyncStarted:     "resync started",
	EventResyncFinished:    "resync finished",
	EventDesync:            "desync",
	EventDisconnected:      "disconnected",
	EventEffect:            "effect",
	EventPlayerInterrupted: "interrupted",
	EventPlayerBack:        "back",
	EventRejoining:         "rejoining",
	EventRejoined:          "rejoined",
}

func (k EventKind) String() string {
	if k > 0 && k < numGameEventKinds {
		return gameEventNames[k]
	}
	return fmt.Sprintf("GameEventKind(%d)", uint8(k))
}

// Event is something that happened to a Client's game, which a
// Handler receives. Kind says which fields are set (see the Event
// constants); the others are zero. One of each kind, as String shows
// them:
//
//	EventReady           tick 3: ready
//	EventPlayerJoined    tick 15: player 3 joined
//	EventPlayerLeft      tick 124: player 3 left (timeout)
//	EventActionAccepted  tick 26: player 1 action accepted
//	EventActionRejected  tick 22: player 1 action rejected (arena: unknown button)
//	EventMessageLate     tick 24: player 1 message late (channel 7, ran at 29)
//	EventResyncStarted   tick 120: resync started (checksum mismatch)
//	EventResyncFinished  tick 123: resync finished (checksum mismatch)
//	EventDesync          tick 120: desync
//	EventDisconnected    tick 124: disconnected (closed)
//	EventPlayerInterrupted tick 130: player 2 interrupted
//	EventPlayerBack      tick 190: player 2 back
//	EventRejoining       tick 731: rejoining (timeout)
//	EventRejoined        tick 812: rejoined
type Event struct {
	Kind       EventKind
	Tick       uint32
	Player     uint16
	Reason     string                 // EventPlayerLeft, EventActionRejected
	Channel    uint8                  // EventMessageLate
	RanAt      uint32                 // EventMessageLate
	Resync     proto.ResyncReason     // EventResyncStarted, EventResyncFinished
	Disconnect proto.DisconnectReason // EventDisconnected, EventRejoining
	Effect     sim.Effect             // EventEffect
}

// String describes e in one line, as the Event constants show.
func (e Event) String() string {
	var s string
	switch e.Kind {
	case EventPlayerJoined, EventPlayerLeft, EventActionAccepted, EventActionRejected, EventMessageLate,
		EventPlayerInterrupted, EventPlayerBack:
		s = fmt.Sprintf("tick %d: player %d %v", e.Tick, e.Player, e.Kind)
	default:
		s = fmt.Sprintf("tick %d: %v", e.Tick, e.Kind)
	}
	switch e.Kind {
	case EventPlayerLeft, EventActionRejected:
		s += " (" + e.Reason + ")"
	case EventMessageLate:
		if e.RanAt == 0 {
			s += fmt.Sprintf(" (channel %d, dropped)", e.Channel)
		} else {
			s += fmt.Sprintf(" (channel %d, ran at %d)", e.Channel, e.RanAt)
		}
	case EventResyncStarted, EventResyncFinished:
		s += " (" + e.Resync.String() + ")"
	case EventEffect:
		s += fmt.Sprintf(" (kind %d, player %d, entity %v, data %v)", e.Effect.Kind, e.Effect.Player, e.Effect.Entity, e.Effect.Data)
	case EventDisconnected, EventRejoining:
		s += " (" + e.Disconnect.String() + ")"
	}
	return s
}

// Handler receives a Client's events. Event runs on the
// client's loop goroutine, one event at a time, in tick order, with the
// client's state locked (like a ClientHandler): it must not block and
// must not call the Client's or the Client's methods that take the
// lock (Do, State, Stats, Send...); it may read eng, the tick engine,
// during the call. e is valid only during the call.
//
// Tick order: events are delivered in the order of the server ticks at
// which they happened, and only once the client knows everything that
// happened up to that tick. Every input ack names how many game frames
// (control frames and full snapshots) the server had sent the connection
// (proto.InputAckFrame.Frames); once the client holds as many, it knows
// every join, leave, rejection and late message up to the ack's tick.
// An action is accepted when such an ack says the server holds the
// player's inputs through the action's tick and no rejection names it.
type Handler interface {
	GameEvent(eng *sim.Client, e *Event)
}

// Handle sets the handler of the game's events. Call it before Dial.
func (g *Client) Handle(h Handler) { g.handler = h }

// pendingEvent is an event waiting for the client to know everything up
// to its tick (at: the server tick it is ordered by).
type pendingEvent struct {
	at uint32
	e  Event
}

// sampledAction is a local player's action waiting for its verdict.
type sampledAction struct {
	player uint16
	tick   uint32
}

// maxPendingActions bounds the actions waiting for a verdict (a server
// that acknowledges nothing): the oldest are forgotten.
const maxPendingActions = 4096

// gameEvents is a Client's event bookkeeping.
type gameEvents struct {
	pending []pendingEvent
	actions []sampledAction // in tick order
	frames  uint16          // game frames (controls, full snapshots) received
	// The newest input ack's tick and frame count, and per local player
	// the newest input tick the server holds.
	ackTick   uint32
	ackFrames uint16
	hasAck    bool
	newest    []uint32
	// first tick sampled, a state applied, an on-time ack seen, ready sent
	firstInput           uint32
	sampled              bool
	haveState, onTime    bool
	readyTick            uint32
	ready                bool
	newestTick           uint32 // newest server tick seen in a header
	resyncing            bool
	resyncCause          proto.ResyncReason
	counts               [numGameEventKinds]uint64
	inputSize, actionLen int
}

// sample is the engine's SampleFunc: the application's InputFunc, with
// the actions it returns noted for their verdict.
func (g *Client) sample(player uint16, tick uint32, dst []byte) []byte {
	var in []byte
	switch {
	case g.worldInput != nil:
		in = g.worldInput(g.eng.Predicted(), player, tick, dst)
	case g.input != nil:
		in = g.input(player, tick, dst)
	default: // idle
		in = dst
		for range g.ev.inputSize {
			in = append(in, 0)
		}
	}
	ev := &g.ev
	if len(in) != ev.inputSize {
		g.stats.BadInputs++ // the engine plays it as an idle input
	} else if g.recorder != nil {
		g.recorder.Input(tick, player, in)
	}
	if !ev.sampled {
		ev.firstInput, ev.sampled = tick, true
	}
	if ab := ev.actionLen; ab > 0 && len(in) == ev.inputSize && !allZeroBytes(in[len(in)-ab:]) {
		if len(ev.actions) == maxPendingActions {
			ev.actions = append(ev.actions[:0], ev.actions[1:]...)
		}
		ev.actions = append(ev.actions, sampledAction{player, tick})
	}
	return in
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// post queues e, ordered by at.
func (g *Client) post(at uint32, e Event) {
	ev := &g.ev
	i := len(ev.pending)
	for i > 0 && int32(ev.pending[i-1].at-at) > 0 {
		i--
	}
	ev.pending = slices.Insert(ev.pending, i, pendingEvent{at, e})
}

// packetTick notes the header tick of a packet from the server.
func (g *Client) packetTick(t uint32) {
	if int32(t-g.ev.newestTick) > 0 {
		g.ev.newestTick = t
	}
}

// resume starts the counts of a new session to a host that resumed the
// game at serverTick (a host migration): its game frames are counted
// from zero, and it holds no input after serverTick.
func (ev *gameEvents) resume(serverTick uint32) {
	ev.frames, ev.ackFrames, ev.hasAck, ev.ackTick = 0, 0, false, 0
	ev.newestTick = serverTick
	for i, n := range ev.newest {
		if int32(n-serverTick) > 0 {
			ev.newest[i] = serverTick
		}
	}
}

// gameFrame counts a game frame that came on the reliable channel.
func (g *Client) gameFrame() { g.ev.frames++ }

// control turns a control frame from the server (counted by gameFrame)
// into its event.
func (g *Client) control(ctl *proto.ControlFrame, headerTick uint32) {
	e := Event{Tick: ctl.Tick, Player: ctl.Player}
	at := ctl.Tick
	switch ctl.Code {
	case proto.ControlPlayerJoined:
		e.Kind = EventPlayerJoined
		g.recordEvent(ctl.Tick, replay.Event{Kind: replay.EventJoin, Player: ctl.Player})
	case proto.ControlPlayerLeft:
		e.Kind, e.Reason = EventPlayerLeft, string(ctl.Text)
		g.recordEvent(ctl.Tick, replay.Event{Kind: replay.EventLeave, Player: ctl.Player, Text: e.Reason})
	case proto.ControlPlayerInterrupted:
		e.Kind = EventPlayerInterrupted
	case proto.ControlPlayerBack:
		e.Kind = EventPlayerBack
	case proto.ControlActionRejected:
		e.Kind, e.Reason = EventActionRejected, string(ctl.Text)
		g.ev.actions = slices.DeleteFunc(g.ev.actions, func(a sampledAction) bool {
			return a.player == ctl.Player && a.tick == ctl.Tick
		})
	case proto.ControlMessageLate:
		e.Kind = EventMessageLate
		e.RanAt, e.Channel = proto.SplitMessageLateArg(ctl.Arg)
		// It happened when the server noticed: the tick it ran at, or for
		// a dropped one the packet's (the notice was sent by then).
		at = e.RanAt
		if at == 0 {
			at = headerTick
		}
	default:
		return
	}
	g.post(at, e)
	g.advance()
}

// inputAck takes an input ack from the update for tick.
func (g *Client) inputAck(a *proto.InputAckFrame, tick uint32) {
	ev := &g.ev
	i := slices.Index(g.eng.Players(), a.Player)
	if i < 0 {
		return
	}
	if !ev.hasAck || int32(tick-ev.ackTick) >= 0 {
		ev.ackTick, ev.ackFrames, ev.hasAck = tick, a.Frames, true
	}
	if int32(a.Newest-ev.newest[i]) > 0 || ev.newest[i] == 0 {
		ev.newest[i] = a.Newest
	}
	if !ev.onTime && ev.sampled && a.Age != proto.InputAgeMissing && int32(tick-ev.firstInput) >= 0 {
		ev.onTime, ev.readyTick = true, max(ev.readyTick, tick)
		g.maybeReady()
	}
	g.advance()
}

// stateApplied notes that a state of tick was handed to the engine.
func (g *Client) stateApplied(tick uint32) {
	if !g.ev.haveState {
		g.ev.haveState = true
		if int32(tick-g.ev.readyTick) > 0 {
			g.ev.readyTick = tick
		}
		g.maybeReady()
	}
}

func (g *Client) maybeReady() {
	ev := &g.ev
	if !ev.ready && ev.haveState && ev.onTime {
		ev.ready = true
		g.post(ev.readyTick, Event{Kind: EventReady, Tick: ev.readyTick})
	}
}

// resyncStarted and resyncFinished bracket a resync.
func (g *Client) resyncStarted(why proto.ResyncReason) {
	ev := &g.ev
	if ev.resyncing {
		return
	}
	ev.resyncing, ev.resyncCause = true, why
	g.post(ev.newestTick, Event{Kind: EventResyncStarted, Tick: ev.newestTick, Resync: why})
}

func (g *Client) fullSnapshot(tick uint32) {
	ev := &g.ev
	if ev.resyncing {
		ev.resyncing = false
		g.post(tick, Event{Kind: EventResyncFinished, Tick: tick, Resync: ev.resyncCause})
	}
	g.stateApplied(tick)
	g.advance()
}

func (g *Client) desync(tick uint32) {
	g.post(tick, Event{Kind: EventDesync, Tick: tick})
	g.recordEvent(tick, replay.Event{Kind: replay.EventDesync})
}

// recordEvent records e at tick, if the Client records.
func (g *Client) recordEvent(tick uint32, e replay.Event) {
	if g.recorder != nil {
		g.recorder.Event(tick, e)
	}
}

// advance decides the actions the newest input ack settles and delivers
// the events up to the tick the client knows everything of.
func (g *Client) advance() {
	ev := &g.ev
	if !ev.hasAck || int16(ev.frames-ev.ackFrames) < 0 {
		return // a game frame the ack counts is still on its way
	}
	known := ev.ackTick
	players := g.eng.Players()
	n := 0
	for _, a := range ev.actions {
		if int32(a.tick-ev.ackTick) > 0 {
			ev.actions[n] = a
			n++
			continue
		}
		if i := slices.Index(players, a.player); i >= 0 && int32(a.tick-ev.newest[i]) > 0 {
			// The server ran the tick without the input: a late copy
			// will be rejected. Nothing from this tick on is known.
			known = min(known, a.tick-1)
			ev.actions[n] = a
			n++
			continue
		}
		g.post(a.tick, Event{Kind: EventActionAccepted, Tick: a.tick, Player: a.player})
	}
	ev.actions = ev.actions[:n]
	g.deliver(known, false)
}

// deliver hands the handler every pending event up to tick known (all
// of them when all).
func (g *Client) deliver(known uint32, all bool) {
	ev := &g.ev
	n := 0
	for n < len(ev.pending) && (all || int32(ev.pending[n].at-known) <= 0) {
		e := &ev.pending[n].e
		ev.counts[e.Kind]++
		if g.handler != nil {
			g.handler.GameEvent(g.eng, e)
		}
		n++
	}
	if n > 0 {
		ev.pending = append(ev.pending[:0], ev.pending[n:]...)
	}
}

// Ended delivers what is pending, then EventDisconnected.
// Lost tells the game its session was lost and a rejoin is under way.
func (f *gameFrames) Lost(_ time.Time, r proto.DisconnectReason) {
	g := (*Client)(f)
	g.deliver(0, true)
	g.post(g.ev.newestTick, Event{Kind: EventRejoining, Tick: g.ev.newestTick, Disconnect: r})
	g.deliver(0, true)
}

func (f *gameFrames) Ended(_ time.Time, r proto.DisconnectReason) {
	g := (*Client)(f)
	if g.resuming.Load() {
		return // a host migration: the game goes on with the successor
	}
	g.ev.actions = g.ev.actions[:0] // no verdict will come
	g.deliver(0, true)
	g.post(g.ev.newestTick, Event{Kind: EventDisconnected, Tick: g.ev.newestTick, Disconnect: r})
	g.deliver(0, true)
}
