package game

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/udptest"
)

// eventLog is a Handler that records the events a game received.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) GameEvent(_ *sim.Client, e *Event) {
	l.mu.Lock()
	l.events = append(l.events, *e)
	l.mu.Unlock()
}

func (l *eventLog) get() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// has reports whether an event of kind for player was received.
func (l *eventLog) has(kind EventKind, player uint16) bool {
	return slices.ContainsFunc(l.get(), func(e Event) bool { return e.Kind == kind && e.Player == player })
}

// waitEvent polls (in virtual time) until log has an event of kind for
// player; it fails the test after 10 s.
func waitEvent(t *testing.T, who string, l *eventLog, kind EventKind, player uint16) {
	t.Helper()
	waitEventWithin(t, who, l, kind, player, 10*time.Second)
}

func waitEventWithin(t *testing.T, who string, l *eventLog, kind EventKind, player uint16, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !l.has(kind, player) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %v event for player %d in %v; events:\n%s", who, kind, player, d, eventLines(l.get()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func eventLines(es []Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\t%v\n", e)
	}
	return b.String()
}

// scriptedActions is an arena InputFunc with no movement and no action,
// except the buttons the test arms: they go into the next tick sampled,
// whose number it records.
type scriptedActions struct {
	buttons atomic.Uint32
	tick    atomic.Uint32
}

func (s *scriptedActions) input(_ uint16, tick uint32, dst []byte) []byte {
	var in arena.Input
	if b := s.buttons.Swap(0); b != 0 {
		in.Buttons = uint8(b)
		s.tick.Store(tick)
	}
	return arena.AppendInput(dst, in)
}

// TestGameEvents: three clients join; the first sends an invalid action,
// a valid one and a postmarked message for a tick long past; the second
// leaves; the third drops off the network, is interrupted, times out and
// leaves once its rejoin grace is over; the first
// leaves. Each game receives exactly the events of what it saw, in tick
// order, and the clients agree on the ticks of the joins and leaves.
func TestGameEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		socks := map[uint64]*udptest.Cuttable{}
		var socksMu sync.Mutex
		r := newGameRigLink(t, Config{}, 15*time.Millisecond, func(pc net.PacketConn, seed uint64) net.PacketConn {
			c := &udptest.Cuttable{PacketConn: pc}
			socksMu.Lock()
			socks[seed] = c
			socksMu.Unlock()
			return c
		})
		defer r.close()
		logs := [3]*eventLog{{}, {}, {}}
		scripts := [3]*scriptedActions{{}, {}, {}}
		clients := [3]*tickwire.Client{}
		for i := range 3 {
			gc, err := NewClient(arena.NewGame(0), scripts[i].input, sim.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			gc.Handle(logs[i])
			id := uint64(i + 1)
			clients[i] = r.dialLayer(id, uint16(id), gc, nil)
			waitEvent(t, fmt.Sprint("client ", id), logs[i], EventReady, 0)
		}
		a, b, c := clients[0], clients[1], clients[2]

		// An invalid action (a button the arena does not have), then a
		// valid one (a ray).
		scripts[0].buttons.Store(0x80)
		waitEvent(t, "client 1", logs[0], EventActionRejected, 1)
		badTick := scripts[0].tick.Load()
		scripts[0].buttons.Store(arena.FireRay)
		waitEvent(t, "client 1", logs[0], EventActionAccepted, 1)
		goodTick := scripts[0].tick.Load()

		// A message postmarked for a tick the server simulated a while ago.
		var confirmed uint32
		r.srv.Do(func() { confirmed = r.host.Engine(rigGame).Tick() })
		postmark := confirmed - 5
		if err := a.SendAt(tickwire.Reliable, 7, postmark, []byte("buy")); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, "client 1", logs[0], EventMessageLate, 1)

		b.Close()
		waitEvent(t, "client 1", logs[0], EventPlayerLeft, 2)
		waitEvent(t, "client 3", logs[2], EventPlayerLeft, 2)

		socksMu.Lock()
		socks[103].Cut.Store(true)
		socksMu.Unlock()
		// Silent, then out of its session, then past its rejoin grace.
		cut := time.Now()
		waitEvent(t, "client 1", logs[0], EventPlayerInterrupted, 3)
		if d := time.Since(cut); d > tickwire.DefaultInterrupt+200*time.Millisecond {
			t.Errorf("player 3 interrupted %v after its cut, want about %v", d, tickwire.DefaultInterrupt)
		}
		waitEventWithin(t, "client 1", logs[0], EventPlayerLeft, 3, tickwire.DefaultTimeout+tickwire.DefaultRejoinGrace+2*time.Second)
		<-c.Done()
		a.Close()

		want := [3][]Event{
			{
				{Kind: EventPlayerJoined, Player: 1},
				{Kind: EventReady},
				{Kind: EventPlayerJoined, Player: 2},
				{Kind: EventPlayerJoined, Player: 3},
				{Kind: EventActionRejected, Player: 1, Tick: badTick, Reason: arena.ErrUnknownButton.Error()},
				{Kind: EventActionAccepted, Player: 1, Tick: goodTick},
				{Kind: EventMessageLate, Player: 1, Tick: postmark, Channel: 7},
				{Kind: EventPlayerLeft, Player: 2, Reason: "closed"},
				{Kind: EventPlayerInterrupted, Player: 3},
				{Kind: EventPlayerLeft, Player: 3, Reason: "timeout"},
				{Kind: EventDisconnected, Disconnect: proto.DisconnectClosed},
			},
			{
				{Kind: EventPlayerJoined, Player: 2},
				{Kind: EventReady},
				{Kind: EventPlayerJoined, Player: 3},
				{Kind: EventDisconnected, Disconnect: proto.DisconnectClosed},
			},
			{
				{Kind: EventPlayerJoined, Player: 3},
				{Kind: EventReady},
				{Kind: EventPlayerLeft, Player: 2, Reason: "closed"},
				{Kind: EventDisconnected, Disconnect: proto.DisconnectTimeout},
			},
		}
		ticks := map[string]uint32{} // joins and leaves: every client saw the same tick
		for i := range 3 {
			got := logs[i].get()
			t.Logf("client %d:\n%s", i+1, eventLines(got))
			if len(got) != len(want[i]) {
				t.Fatalf("client %d received %d events, want %d:\n%s", i+1, len(got), len(want[i]), eventLines(got))
			}
			for j, g := range got {
				w := want[i][j]
				if w.Tick == 0 {
					w.Tick = g.Tick
				}
				if g.Kind == EventMessageLate {
					if int32(g.RanAt-postmark) <= 0 {
						t.Errorf("client %d: late message ran at %d, not after its postmark %d", i+1, g.RanAt, postmark)
					}
					w.RanAt = g.RanAt
				}
				if g != w {
					t.Errorf("client %d event %d: %v, want %v", i+1, j, g, w)
				}
				if j > 0 && int32(g.Tick-got[j-1].Tick) < 0 && g.Kind != EventMessageLate {
					t.Errorf("client %d event %d (%v) out of tick order after %v", i+1, j, g, got[j-1])
				}
				if g.Kind == EventPlayerJoined || g.Kind == EventPlayerLeft {
					k := fmt.Sprint(g.Kind, g.Player)
					if seen, ok := ticks[k]; ok && seen != g.Tick {
						t.Errorf("client %d: %v at tick %d, another client saw it at %d", i+1, g.Kind, g.Tick, seen)
					}
					ticks[k] = g.Tick
				}
			}
		}
		gs := c.Err()
		if de, ok := gs.(*tickwire.DisconnectError); !ok || de.Reason != proto.DisconnectTimeout {
			t.Fatalf("client 3 ended with %v, want a timeout", gs)
		}
	})
}

// TestGamePostmarkedPlayers: on a connection that carries two players, a
// postmarked message runs as the player that sent it (Client.SendAt's as
// the first, SendPlayerAt's as the one it names): the late notices the
// server sends back name them.
func TestGamePostmarkedPlayers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGameRig(t)
		defer r.close()
		gc, err := NewClient(arena.NewGame(0), (&scriptedActions{}).input, sim.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		log := &eventLog{}
		gc.Handle(log)
		c := r.dialSlots(1, []uint16{4, 5}, gc, nil)
		defer c.Close()
		waitEvent(t, "client", log, EventReady, 0)
		var now uint32
		r.srv.Do(func() { now = r.host.Engine(rigGame).Tick() })
		if err := c.SendPlayerAt(5, tickwire.Reliable, 3, now-5, []byte("second")); err != nil {
			t.Fatal(err)
		}
		if err := c.SendAt(tickwire.Reliable, 2, now-4, []byte("first")); err != nil {
			t.Fatal(err)
		}
		if err := c.SendPlayerAt(9, tickwire.Reliable, 2, now, nil); err == nil {
			t.Fatal("SendPlayerAt sent for a player the connection does not carry")
		}
		waitEvent(t, "client", log, EventMessageLate, 5)
		waitEvent(t, "client", log, EventMessageLate, 4)
		for _, e := range log.get() {
			if e.Kind == EventMessageLate && (e.Player == 5) != (e.Channel == 3 && e.Tick == now-5) {
				t.Errorf("%v: attributed to the wrong player", e)
			}
		}
		if hs := r.hostStats(); hs.BadFrames != 0 || hs.Joins != 2 {
			t.Fatalf("host stats %+v", hs)
		}
	})
}

// TestGameEventsOverLoopback: a rejected action and a late postmarked
// message reach the game over real sockets. Under load only their
// arrival and content are certain, not when.
func TestGameEventsOverLoopback(t *testing.T) {
	_, _, key, addr := arenaServer(t, tickwire.Config{}, 10)
	script := &scriptedActions{}
	gc, err := NewClient(arena.NewGame(0), script.input, sim.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	gc.Handle(log)
	tok, _ := tickwire.MintToken(key, tickwire.TokenParams{GameID: 5, ClientID: 1, Players: []uint16{3}, ServerAddrs: []string{addr}}, time.Now())
	c := testrig.Dial(t, tok, tickwire.Dialer{Game: gc})
	wait := func(kind EventKind) Event {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			for _, e := range log.get() {
				if e.Kind == kind {
					return e
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %v event in 15 s; events:\n%s", kind, eventLines(log.get()))
		return Event{}
	}
	wait(EventReady)
	script.buttons.Store(0x80)
	if e := wait(EventActionRejected); e.Player != 3 || e.Tick != script.tick.Load() || e.Reason != arena.ErrUnknownButton.Error() {
		t.Fatalf("%v: want player 3's action at tick %d rejected", e, script.tick.Load())
	}
	var tick uint32
	gc.Do(func(eng *sim.Client) { _, tick, _ = eng.Confirmed() })
	if err := c.SendAt(tickwire.Reliable, 6, tick-2, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if e := wait(EventMessageLate); e.Player != 3 || e.Tick != tick-2 || e.Channel != 6 || int32(e.RanAt-e.Tick) <= 0 {
		t.Fatalf("%v: want player 3's message for tick %d on channel 6 run late", e, tick-2)
	}
	c.Close()
	if got := log.get(); got[len(got)-1].Kind != EventDisconnected {
		t.Fatalf("last event %v, want the disconnect", got[len(got)-1])
	}
}

type nopEvents struct{ n int }

func (h *nopEvents) GameEvent(*sim.Client, *Event) { h.n++ }

// TestGameClientEventsAllocs: a client frame and a packet's input ack
// that settles actions (an accepted event delivered every other tick)
// allocate nothing in steady state.
func TestGameClientEventsAllocs(t *testing.T) {
	fire := func(_ uint16, tick uint32, dst []byte) []byte {
		return arena.AppendInput(dst, arena.Input{Buttons: uint8(tick%2) * arena.FireRay})
	}
	gc, err := NewClient(arena.NewGame(0), fire, sim.ClientConfig{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &nopEvents{}
	gc.Handle(h)
	now := time.Now()
	fh, err := gc.Attach(nil, tickwire.Accepted{Time: now, ServerTick: 100, Players: []uint16{3}, TickRate: 60})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1200)
	ack := make([]byte, 0, 16)
	var sent, recv tickwire.PacketInfo
	round := func() {
		now = now.Add(time.Second / 60)
		fh.(tickwire.Ticker).Tick(now, 0)
		sent.Time = now
		buf = fh.AppendFrames(buf[:0], 1200, &sent)
		tick := gc.eng.Tick()
		f := proto.InputAckFrame{Player: 3, Newest: tick, Age: 50}
		ack, _ = f.Append(ack[:0])
		recv.Header.Seq++
		recv.Header.Tick, recv.Time = tick-2, now
		if err := fh.Frame(proto.FrameInputAck, ack, &recv); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		round()
	}
	before := h.n
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("%v allocations per frame and ack", n)
	}
	if h.n-before < 100 {
		t.Fatalf("%d events in 201 rounds, want an accepted action every other tick", h.n-before)
	}
}

// TestGameEventString: one event of each kind reads as Event's
// documentation shows it.
func TestGameEventString(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventReady, Tick: 3}, "tick 3: ready"},
		{Event{Kind: EventPlayerJoined, Tick: 15, Player: 3}, "tick 15: player 3 joined"},
		{Event{Kind: EventPlayerLeft, Tick: 124, Player: 3, Reason: "timeout"}, "tick 124: player 3 left (timeout)"},
		{Event{Kind: EventActionAccepted, Tick: 26, Player: 1}, "tick 26: player 1 action accepted"},
		{Event{Kind: EventActionRejected, Tick: 22, Player: 1, Reason: "arena: unknown button"}, "tick 22: player 1 action rejected (arena: unknown button)"},
		{Event{Kind: EventMessageLate, Tick: 24, Player: 1, Channel: 7, RanAt: 29}, "tick 24: player 1 message late (channel 7, ran at 29)"},
		{Event{Kind: EventMessageLate, Tick: 24, Player: 1, Channel: 7}, "tick 24: player 1 message late (channel 7, dropped)"},
		{Event{Kind: EventResyncStarted, Tick: 120, Resync: proto.ResyncChecksum}, "tick 120: resync started (checksum mismatch)"},
		{Event{Kind: EventResyncFinished, Tick: 123, Resync: proto.ResyncChecksum}, "tick 123: resync finished (checksum mismatch)"},
		{Event{Kind: EventDesync, Tick: 120}, "tick 120: desync"},
		{Event{Kind: EventDisconnected, Tick: 124, Disconnect: proto.DisconnectClosed}, "tick 124: disconnected (closed)"},
		{Event{Kind: 99, Tick: 1}, "tick 1: GameEventKind(99)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
