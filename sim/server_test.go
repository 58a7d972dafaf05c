package sim

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

func newTestServer(t testing.TB, cfg ServerConfig, tg *tgTest) *Server {
	t.Helper()
	s, err := NewServer(newTestGame(tg), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start(t0, 0)
	return s
}

func mustJoin(t testing.TB, s *Server, players ...uint16) {
	t.Helper()
	for _, p := range players {
		if _, err := s.Join(p); err != nil {
			t.Fatalf("join %d: %v", p, err)
		}
	}
}

// input delivers player's input for tick at now, alone in a packet whose
// header names tick and view.
func input(t testing.TB, s *Server, now time.Time, player uint16, tick uint32, data []byte, v View) {
	t.Helper()
	h := proto.Header{Tick: tick, InterpFrom: v.From, InterpTo: v.To, Blend: v.Blend}
	f := proto.InputFrame{Player: player, Tick: tick, Count: 1, Size: uint16(len(data)), Data: data}
	if err := s.ReceiveInput(now, &h, &f); err != nil {
		t.Fatal(err)
	}
}

func ids(s *Server) []proto.NetworkID { return slices.Clone(s.Snapshot().IDs) }

func sameControl(a, b proto.ControlFrame) bool {
	return a.Code == b.Code && a.Player == b.Player && a.Tick == b.Tick && a.Arg == b.Arg && bytes.Equal(a.Text, b.Text)
}

func canonical(g Game) []byte { return g.AppendCanonical(nil) }

// lastStep is what the game saw in the last step.
func lastStep(t *testing.T, tg *tgTest) tgStep {
	t.Helper()
	if len(tg.steps) == 0 {
		t.Fatal("no step recorded")
	}
	return tg.steps[len(tg.steps)-1]
}

func TestServerInputsAndAges(t *testing.T) {
	tg := &tgTest{record: true}
	s := newTestServer(t, ServerConfig{}, tg)
	mustJoin(t, s, 1, 2)

	// Tick 1: player 1's input arrived 5 ms before its time, player 2's
	// never did.
	input(t, s, s.Scheduled(1).Add(-5*time.Millisecond), 1, 1, tgInputBytes(1, 2, 0x77, 0), View{})
	s.Step()
	if a, _ := s.InputAck(1); a != (proto.InputAckFrame{Player: 1, Newest: 1, Age: 50}) {
		t.Fatalf("ack 1 at tick 1: %+v", a)
	}
	if a, _ := s.InputAck(2); a.Age != proto.InputAgeMissing {
		t.Fatalf("ack 2 at tick 1: %+v, want missing", a)
	}
	st := lastStep(t, tg)
	if st.tick != 1 || len(st.inputs) != 2 ||
		!bytes.Equal(st.inputs[0].data, tgInputBytes(1, 2, 0x77, 0)) || st.inputs[0].missing ||
		!st.inputs[1].missing || !bytes.Equal(st.inputs[1].data, make([]byte, 4)) {
		t.Fatalf("tick 1 inputs: %+v", st)
	}

	// A redundant frame (ticks 1..3) arriving 1 ms after tick 1 ran: the
	// copy of tick 1 is stale; 2 and 3 are kept.
	at := s.Scheduled(1).Add(time.Millisecond)
	f := proto.InputFrame{Player: 1, Tick: 3, Count: 3, Size: 4, Data: slices.Concat(
		tgInputBytes(1, 2, 0x77, 0), tgInputBytes(3, 0, 0, 0), tgInputBytes(-1, -1, 0x55, 0))}
	if err := s.ReceiveInput(at, nil, &f); err != nil {
		t.Fatal(err)
	}
	s.Step()
	if a, _ := s.InputAck(1); a.Newest != 3 || a.Age != int16(s.Scheduled(2).Sub(at)/(100*time.Microsecond)) {
		t.Fatalf("ack 1 at tick 2: %+v", a)
	}
	// Player 2's input for tick 2 arrives after tick 2 ran: late.
	input(t, s, s.Scheduled(2).Add(time.Millisecond), 2, 2, tgInputBytes(9, 9, 0, 0), View{})
	s.Step() // tick 3: player 1 has input, player 2 missing (repeats zeros)
	st = lastStep(t, tg)
	if !bytes.Equal(st.inputs[0].data, tgInputBytes(-1, -1, 0x55, 0)) || st.inputs[0].missing {
		t.Fatalf("tick 3 inputs: %+v", st)
	}
	// Tick 4: player 1's input is missing: tick 3's repeats without its
	// action.
	s.Step()
	st = lastStep(t, tg)
	if !st.inputs[0].missing || !bytes.Equal(st.inputs[0].data, tgInputBytes(-1, -1, 0, 0)) {
		t.Fatalf("tick 4 player 1: %+v, want tick 3's input without action, missing", st.inputs[0])
	}
	if a, _ := s.InputAck(1); a.Newest != 3 || a.Age != proto.InputAgeMissing {
		t.Fatalf("ack 1 at tick 4: %+v", a)
	}
	stats := s.Stats()
	if stats.InputsReceived != 3 || stats.InputsStale != 1 || stats.InputsLate != 1 || stats.InputsMissing != 5 || stats.Ticks != 4 {
		t.Fatalf("stats %+v", stats)
	}
	// A frame of the wrong input size is refused; an unknown player too.
	bad := proto.InputFrame{Player: 1, Tick: 9, Count: 1, Size: 3, Data: []byte{1, 2, 3}}
	if err := s.ReceiveInput(t0, nil, &bad); err == nil {
		t.Fatal("wrong input size accepted")
	}
	bad = proto.InputFrame{Player: 7, Tick: 9, Count: 1, Size: 4, Data: make([]byte, 4)}
	if err := s.ReceiveInput(t0, nil, &bad); !errors.Is(err, ErrNoPlayer) {
		t.Fatalf("unknown player: %v", err)
	}
}

func TestServerRejectsActions(t *testing.T) {
	tg := &tgTest{record: true}
	s := newTestServer(t, ServerConfig{}, tg)
	mustJoin(t, s, 1, 2)
	input(t, s, t0, 1, 1, tgInputBytes(4, 0, actBad, 9), View{})
	input(t, s, t0, 2, 1, tgInputBytes(0, 0, actFire, 1), View{})
	s.Step()
	st := lastStep(t, tg)
	if !st.inputs[0].rejected || !bytes.Equal(st.inputs[0].data, tgInputBytes(4, 0, 0, 0)) {
		t.Fatalf("rejected input reached Step as %+v, want action zeroed and Rejected", st.inputs[0])
	}
	if st.inputs[1].rejected {
		t.Fatal("valid action rejected")
	}
	want := []Control{{To: 1, Frame: proto.ControlFrame{Code: proto.ControlActionRejected, Player: 1, Tick: 1, Text: []byte("bad action")}}}
	if c := s.Controls(); len(c) != 1 || c[0].To != want[0].To || c[0].Frame.Code != want[0].Frame.Code ||
		c[0].Frame.Player != 1 || c[0].Frame.Tick != 1 || c[0].Frame.Arg != 0 || string(c[0].Frame.Text) != "bad action" {
		t.Fatalf("controls %+v, want %+v", c, want)
	}
	if s.Stats().ActionsRejected != 1 || len(s.Snapshot().IDs) != 3 {
		t.Fatalf("stats %+v, %d entities (want 2 players + 1 spawn)", s.Stats(), len(s.Snapshot().IDs))
	}
	// The rejection is reported once; the next tick (input missing) has
	// no action to validate.
	s.Step()
	if c := s.Controls(); len(c) != 0 || s.Stats().ActionsRejected != 1 {
		t.Fatalf("tick 2 controls %+v", c)
	}
}

// TestServerRejectsLateActions: an action whose input arrives after its
// tick ran without it never happened, and the player is told so once, in
// the next step's controls; a late input without an action is not news.
func TestServerRejectsLateActions(t *testing.T) {
	s := newTestServer(t, ServerConfig{}, &tgTest{})
	mustJoin(t, s, 1)
	s.Step() // tick 1 runs without player 1's input
	s.Step() // tick 2 too
	input(t, s, t0, 1, 1, tgInputBytes(0, 0, actFire, 1), View{})
	input(t, s, t0, 1, 1, tgInputBytes(0, 0, actFire, 1), View{}) // a second copy: reported once
	input(t, s, t0, 1, 2, tgInputBytes(3, 0, 0, 0), View{})       // late, no action
	s.Step()
	c := s.Controls()
	if len(c) != 1 || c[0].To != 1 || c[0].Frame.Code != proto.ControlActionRejected || c[0].Frame.Player != 1 ||
		c[0].Frame.Tick != 1 || string(c[0].Frame.Text) != "arrived after its tick" {
		t.Fatalf("controls %+v, want tick 1's action rejected as late", c)
	}
	if st := s.Stats(); st.ActionsLate != 1 || st.ActionsRejected != 0 || st.InputsLate != 2 {
		t.Fatalf("stats %+v", st)
	}
	s.Step()
	if c := s.Controls(); len(c) != 0 {
		t.Fatalf("next step's controls %+v", c)
	}
}

func TestServerJoinRestoresWorld(t *testing.T) {
	errHook := errors.New("no room")
	for _, tc := range []struct {
		name  string
		panic bool
		want  error
	}{{"error", false, errHook}, {"panic", true, ErrJoinPanicked}} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &tgTest{}
			s := newTestServer(t, ServerConfig{}, tg)
			mustJoin(t, s, 1)
			for tick := uint32(1); tick <= 10; tick++ {
				input(t, s, t0, 1, tick, tgInputBytes(2, 1, 0, 0), View{})
				s.Step()
			}
			world, snap, rev := canonical(s.World()), slices.Clone(s.Snapshot().Records), s.Revision()

			tg.joinErr, tg.joinPanic = errHook, tc.panic
			hookRan := false
			tg.duringHook = func() {
				hookRan = true
				// The tick loop is paused inside the critical section.
				if n := s.Due(t0.Add(time.Hour)); n != 0 {
					t.Errorf("Due %d inside the join hook", n)
				}
				s.Step()
				if s.Tick() != 10 {
					t.Errorf("Step ran inside the join hook")
				}
			}
			_, err := s.Join(2)
			if !errors.Is(err, tc.want) || !hookRan {
				t.Fatalf("join: %v (hook ran %v), want %v", err, hookRan, tc.want)
			}
			if !bytes.Equal(canonical(s.World()), world) || !bytes.Equal(s.Snapshot().Records, snap) {
				t.Fatal("world not restored after the failed join")
			}
			if s.Revision() != rev || !slices.Equal(s.Players(nil), []uint16{1}) {
				t.Fatalf("revision %d players %v after failed join, want %d [1]", s.Revision(), s.Players(nil), rev)
			}
			if s.Due(t0.Add(time.Hour)) == 0 {
				t.Fatal("tick loop still paused after the failed join")
			}
			s.Step()
			if s.Tick() != 11 || slices.Contains(s.Snapshot().IDs, tgPlayerID(2)) {
				t.Fatalf("after failed join: tick %d ids %v", s.Tick(), s.Snapshot().IDs)
			}
			// The slot is free again.
			tg.joinErr, tg.joinPanic, tg.duringHook = nil, false, nil
			mustJoin(t, s, 2)
			if s.Revision() != rev+1 {
				t.Fatalf("revision %d after join, want %d", s.Revision(), rev+1)
			}
		})
	}
}

func TestServerJoinMidGameAndLeave(t *testing.T) {
	tg := &tgTest{record: true}
	s := newTestServer(t, ServerConfig{}, tg)
	if _, err := s.Join(0); !errors.Is(err, ErrBadPlayer) {
		t.Fatalf("join 0: %v", err)
	}
	c, err := s.Join(1)
	if err != nil || !sameControl(c.Frame, proto.ControlFrame{Code: proto.ControlPlayerJoined, Player: 1, Tick: 1, Arg: 1}) || s.Revision() != 1 {
		t.Fatalf("join 1 at tick 0: %+v %v, revision %d", c, err, s.Revision())
	}
	if _, err := s.Join(1); !errors.Is(err, ErrPlayerExists) {
		t.Fatalf("second join 1: %v", err)
	}
	// The join shows in the snapshot after the next step.
	s.Step()
	if !slices.Equal(ids(s), []proto.NetworkID{tgPlayerID(1)}) {
		t.Fatalf("ids after tick 1: %v", ids(s))
	}
	for tick := uint32(2); tick <= 30; tick++ {
		input(t, s, t0, 1, tick, tgInputBytes(1, 0, 0, 0), View{})
		s.Step()
	}

	c, err = s.Join(2)
	// No update has covered the joiner yet: nothing to acknowledge.
	if a, ok := s.InputAck(2); ok {
		t.Fatalf("input ack %+v for a player no step has covered yet", a)
	}
	if err != nil || !sameControl(c.Frame, proto.ControlFrame{Code: proto.ControlPlayerJoined, Player: 2, Tick: 31, Arg: 2}) {
		t.Fatalf("join 2 at tick 30: %+v %v", c, err)
	}
	input(t, s, t0, 1, 31, tgInputBytes(1, 0, 0, 0), View{})
	s.Step()
	if !slices.Equal(ids(s), []proto.NetworkID{tgPlayerID(1), tgPlayerID(2)}) {
		t.Fatalf("ids after mid-game join: %v", ids(s))
	}
	if a, ok := s.InputAck(2); !ok || a.Player != 2 || a.Age != proto.InputAgeMissing {
		t.Fatalf("joiner's first input ack %+v %v", a, ok)
	}
	if st := lastStep(t, tg); len(st.inputs) != 2 || st.inputs[1].player != 2 || !st.inputs[1].missing {
		t.Fatalf("tick 31 inputs %+v", st.inputs)
	}
	input(t, s, t0, 2, 32, tgInputBytes(0, 5, 0, 0), View{})
	input(t, s, t0, 2, 33, tgInputBytes(0, 5, 0, 0), View{})
	s.Step()

	hookRan := false
	tg.duringHook = func() {
		hookRan = true
		if s.Due(t0.Add(time.Hour)) != 0 {
			t.Error("tick loop not paused inside the leave hook")
		}
	}
	c, err = s.Leave(2, "bye")
	if err != nil || !hookRan || c.Frame.Code != proto.ControlPlayerLeft || c.Frame.Player != 2 || c.Frame.Tick != 33 ||
		c.Frame.Arg != 3 || string(c.Frame.Text) != "bye" || s.Revision() != 3 {
		t.Fatalf("leave: %+v %v, revision %d", c, err, s.Revision())
	}
	if !slices.Equal(tg.leaves, []string{"bye"}) {
		t.Fatalf("OnPlayerLeave calls %q", tg.leaves)
	}
	tg.duringHook = nil
	s.Step()
	if !slices.Equal(ids(s), []proto.NetworkID{tgPlayerID(1)}) || !slices.Equal(s.Players(nil), []uint16{1}) {
		t.Fatalf("after leave: ids %v players %v", ids(s), s.Players(nil))
	}
	if st := lastStep(t, tg); len(st.inputs) != 1 {
		t.Fatalf("tick 33 inputs %+v", st.inputs)
	}
	// The leaver's counters survive it.
	if st := s.Stats(); st.InputsReceived != 32 {
		t.Fatalf("inputs received %d, want 32 (30 + 2 of the leaver)", st.InputsReceived)
	}
	if _, err := s.Leave(2, "again"); !errors.Is(err, ErrNoPlayer) {
		t.Fatalf("second leave: %v", err)
	}
	if _, ok := s.InputAck(2); ok {
		t.Fatal("input ack for a player who left")
	}

	// A panicking leave hook still removes the player and bumps the
	// revision.
	tg.duringHook = func() { panic("leave hook exploded") }
	if _, err := s.Leave(1, "crash"); err == nil || s.Revision() != 4 || len(s.Players(nil)) != 0 {
		t.Fatalf("panicking leave: %v, revision %d, players %v", err, s.Revision(), s.Players(nil))
	}
	if s.Due(t0.Add(time.Hour)) == 0 {
		t.Fatal("tick loop paused after a panicking leave")
	}
}

func TestServerJoinNotStarted(t *testing.T) {
	s, err := NewServer(newTestGame(&tgTest{}), ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(1); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("join before Start: %v", err)
	}
}

func TestServerPostmarkedMessages(t *testing.T) {
	tg := &tgTest{record: true}
	s := newTestServer(t, ServerConfig{}, tg)
	mustJoin(t, s, 1, 2)
	for range 10 {
		s.Step()
	}
	msg := func(player uint16, ch uint8, postmarked bool, tick uint32, data string) {
		t.Helper()
		b := []byte(data)
		f := proto.MessageFrame{Channel: ch, Postmarked: postmarked, Tick: tick, Data: b}
		if err := s.ReceiveMessage(t0, player, &f); err != nil {
			t.Fatal(err)
		}
		clear(b) // the engine must have copied it
	}
	msg(2, 1, true, 13, "buy@13")
	msg(1, 4, true, 13, "b@13")
	msg(1, 3, true, 13, "a@13")
	msg(1, 3, true, 10, "late@10") // tick 10 already ran
	msg(1, 0, false, 0, "now")
	msg(2, 0, true, 11, "on time@11")
	msg(1, 0, true, 10+1000, "far")
	if err := s.ReceiveMessage(t0, 9, &proto.MessageFrame{}); !errors.Is(err, ErrNoPlayer) {
		t.Fatalf("message from unknown player: %v", err)
	}

	type got struct {
		player uint16
		ch     uint8
		tick   uint32
		late   bool
		data   string
	}
	ran := map[uint32][]got{}
	var lateControls []Control
	for s.Tick() < 80 {
		s.Step()
		for _, m := range lastStep(t, tg).msgs {
			ran[s.Tick()] = append(ran[s.Tick()], got{m.Player, m.Channel, m.Tick, m.Late, string(m.Data)})
		}
		for _, c := range s.Controls() {
			if c.Frame.Code == proto.ControlMessageLate {
				lateControls = append(lateControls, c)
			}
		}
	}
	want := map[uint32][]got{
		11: {{1, 0, 11, false, "now"}, {1, 3, 10, true, "late@10"}, {2, 0, 11, false, "on time@11"}},
		13: {{1, 3, 13, false, "a@13"}, {1, 4, 13, false, "b@13"}, {2, 1, 13, false, "buy@13"}},
		// Beyond the input buffer (64 ticks) it runs at the horizon.
		11 + 64: {{1, 0, 1010, false, "far"}},
	}
	if len(ran) != len(want) {
		t.Fatalf("messages ran at %v, want %v", ran, want)
	}
	for tick, w := range want {
		if !slices.Equal(ran[tick], w) {
			t.Fatalf("tick %d ran %+v, want %+v", tick, ran[tick], w)
		}
	}
	if len(lateControls) != 1 || lateControls[0].To != 1 || !sameControl(lateControls[0].Frame, proto.ControlFrame{
		Code: proto.ControlMessageLate, Player: 1, Tick: 10, Arg: proto.MessageLateArg(11, 3)}) {
		t.Fatalf("late reports %+v", lateControls)
	}
	if st := s.Stats(); st.MessagesLate != 1 || st.MessagesDropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerPostmarkedMessagesDropLate(t *testing.T) {
	tg := &tgTest{record: true}
	s := newTestServer(t, ServerConfig{LateMessages: DropLate}, tg)
	mustJoin(t, s, 1)
	for range 5 {
		s.Step()
	}
	s.ReceiveMessage(t0, 1, &proto.MessageFrame{Channel: 2, Postmarked: true, Tick: 5, Data: []byte("x")})
	s.Step()
	if m := lastStep(t, tg).msgs; len(m) != 0 {
		t.Fatalf("late message ran under DropLate: %+v", m)
	}
	if c := s.Controls(); len(c) != 1 || c[0].To != 1 || !sameControl(c[0].Frame, proto.ControlFrame{Code: proto.ControlMessageLate, Player: 1, Tick: 5, Arg: proto.MessageLateArg(0, 2)}) {
		t.Fatalf("controls %+v", c)
	}
	if st := s.Stats(); st.MessagesDropped != 1 || st.MessagesLate != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerChecksumInterval(t *testing.T) {
	for _, tc := range []struct {
		interval int
		every    uint32 // 0: never
	}{{0, 60}, {7, 7}, {-1, 0}} {
		tg := &tgTest{}
		s := newTestServer(t, ServerConfig{ChecksumInterval: tc.interval}, tg)
		mustJoin(t, s, 1, 2)
		var c Checksummer
		sums := 0
		for tick := uint32(1); tick <= 130; tick++ {
			input(t, s, t0, 1, tick, tgInputBytes(int8(tick), 1, 0, 0), View{})
			s.Step()
			cs, ok := s.Checksum()
			due := tc.every != 0 && tick%tc.every == 0
			if ok != due {
				t.Fatalf("interval %d: checksum at tick %d: %v, want %v", tc.interval, tick, ok, due)
			}
			if !ok {
				continue
			}
			sums++
			if want := entitiesFNV(s.Snapshot(), nil); cs.Tick != tick || cs.Sum != c.SnapshotSum(s.Snapshot()) || cs.Sum != want {
				t.Fatalf("checksum %+v at tick %d, Checksummer says %x, FNV-1a %x", cs, tick, c.SnapshotSum(s.Snapshot()), want)
			}
		}
		if tc.every != 0 && sums != int(130/tc.every) {
			t.Fatalf("interval %d: %d checksums", tc.interval, sums)
		}
	}
}

// TestLagCompensation checks Tick.Rewind against the recorded history:
// exactly InterpolateBodies at the view the header named, the documented
// clamp beyond MaxRewind, in the future, and for a missing input.
func TestLagCompensation(t *testing.T) {
	tg := &tgTest{}
	s := newTestServer(t, ServerConfig{}, tg)
	mustJoin(t, s, 1, 2)
	hist := map[uint32][]Body{0: s.World().AppendBodies(nil)}
	step := func() {
		// The target (player 2) moves every tick.
		input(t, s, t0, 2, s.Tick()+1, tgInputBytes(3, -1, 0, 0), View{})
		s.Step()
		hist[s.Tick()] = s.World().AppendBodies(nil)
	}
	for range 40 {
		step()
	}
	check := func(name string, tick uint32, wantUsed View, clamped bool) RewindInfo {
		t.Helper()
		info := tg.rewind
		if tg.rewindAt != tick || info.Used != wantUsed || info.Clamped != clamped {
			t.Fatalf("%s: rewind at %d: %+v; want used %+v clamped %v", name, tg.rewindAt, info, wantUsed, clamped)
		}
		want := InterpolateBodies(nil, hist[wantUsed.From], hist[wantUsed.To], wantUsed.Blend)
		if len(want) != 2 || !slices.Equal(tg.rewound, want) {
			t.Fatalf("%s: rewound %+v, want %+v", name, tg.rewound, want)
		}
		return info
	}
	tg.rewindFor = 1

	// In the window: exactly the named view.
	v := View{From: 35, To: 36, Blend: proto.BlendOne / 3}
	arrived := s.Scheduled(41).Add(-2 * time.Millisecond)
	input(t, s, arrived, 1, 41, tgInputBytes(0, 0, 0, 0), v)
	step()
	info := check("in window", 41, v, false)
	if info.Requested != v || info.Unknown {
		t.Fatalf("info %+v", info)
	}
	wantRewind := s.Scheduled(41).Add(-2*time.Millisecond).Sub(t0) - time.Duration(viewTime(v)*float64(s.Period()))
	if d := info.Rewind - wantRewind; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("rewind %v, want %v", info.Rewind, wantRewind)
	}

	// A redundant input (the packet for tick 43 also carries 42) gets the
	// packet's view moved back by the tick difference.
	h := proto.Header{Tick: 43, InterpFrom: 37, InterpTo: 38, Blend: 100}
	f := proto.InputFrame{Player: 1, Tick: 43, Count: 2, Size: 4, Data: make([]byte, 8)}
	if err := s.ReceiveInput(s.Scheduled(42).Add(-time.Millisecond), &h, &f); err != nil {
		t.Fatal(err)
	}
	step()
	check("redundant", 42, View{From: 36, To: 37, Blend: 100}, false)
	step()
	check("redundant", 43, View{From: 37, To: 38, Blend: 100}, false)

	// Older than MaxRewind (200 ms = 12 ticks) before arrival: clamped to
	// arrival - 200 ms, between the two ticks around it.
	arrived = s.Scheduled(44).Add(-2 * time.Millisecond)
	input(t, s, arrived, 1, 44, tgInputBytes(0, 0, 0, 0), View{From: 20, To: 21, Blend: 0})
	step()
	recv := s.clock.TickAt(arrived)
	want := viewAt(recv - 12)
	if want.From != 31 || want.To != 32 {
		t.Fatalf("test setup: clamp target %+v", want)
	}
	info = check("too old", 44, want, true)
	if d := info.Rewind - 200*time.Millisecond; d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Fatalf("clamped rewind %v, want 200ms", info.Rewind)
	}
	if info.Requested != (View{From: 20, To: 21}) || s.Stats().RewindsClamped != 1 {
		t.Fatalf("info %+v, clamped %d", info, s.Stats().RewindsClamped)
	}

	// A view in the future (To after the newest state): the newest state.
	input(t, s, s.Scheduled(45).Add(-time.Millisecond), 1, 45, tgInputBytes(0, 0, 0, 0), View{From: 46, To: 47})
	step()
	check("future", 45, View{From: 44, To: 44}, true)

	// No input (missing): no compensation, the newest state.
	step()
	check("missing", 46, View{From: 45, To: 45}, false)
	if !tg.rewind.Unknown {
		t.Fatalf("missing input: %+v", tg.rewind)
	}
	if s.Stats().RewindsClamped != 2 {
		t.Fatalf("clamped %d, want 2", s.Stats().RewindsClamped)
	}
}

// TestClampViewWindow checks clampView's policy on random views: views
// inside the window pass unchanged, others land on the window's edge.
func TestClampViewWindow(t *testing.T) {
	const tick, oldest, maxRewind = 1000, 940, 12.0
	recv := 998.4
	for from := uint32(930); from < 1005; from++ {
		for _, blend := range []uint16{0, 1, proto.BlendOne / 2, proto.BlendOne} {
			v := View{From: from, To: from + 1, Blend: blend}
			got, clamped := clampView(v, tick, recv, maxRewind, oldest)
			rt := viewTime(v)
			inside := from >= oldest && from+1 <= tick-1 && rt >= recv-maxRewind-1e-9
			if inside != !clamped {
				t.Fatalf("%+v: clamped %v, inside %v", v, clamped, inside)
			}
			if !clamped {
				if got != v {
					t.Fatalf("%+v changed to %+v", v, got)
				}
				continue
			}
			gt := viewTime(got)
			lo := math.Max(recv-maxRewind, oldest)
			if gt < lo-1e-4 || gt > tick-1 || int32(got.To-(tick-1)) > 0 {
				t.Fatalf("%+v clamped to %+v (t=%v), outside [%v, %d]", v, got, gt, lo, tick-1)
			}
			if rt < lo && math.Abs(gt-lo) > 1e-4 {
				t.Fatalf("too old %+v clamped to %v, want the window's start %v", v, gt, lo)
			}
		}
	}
}

func TestSpawnIDs(t *testing.T) {
	a, b := NewSpawnIDs(4), NewSpawnIDs(0)
	seq := []uint16{3, 3, 5, 3, 5, 3}
	var got [2][]proto.NetworkID
	for i, al := range []*SpawnIDs{a, b} {
		al.Begin(100)
		for _, p := range seq {
			id, ok := al.Next(p)
			if !ok {
				t.Fatalf("spawn for %d refused", p)
			}
			got[i] = append(got[i], id)
		}
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("two allocators disagree: %v vs %v", got[0], got[1])
	}
	want := []proto.NetworkID{
		proto.MakeNetworkID(3, 401), proto.MakeNetworkID(3, 402), proto.MakeNetworkID(5, 401),
		proto.MakeNetworkID(3, 403), proto.MakeNetworkID(5, 402), proto.MakeNetworkID(3, 404),
	}
	if !slices.Equal(got[0], want) {
		t.Fatalf("ids %v, want %v", got[0], want)
	}
	// A fifth spawn of player 3 in tick 100 is refused.
	if _, ok := a.Next(3); ok || a.Exhausted != 1 {
		t.Fatalf("fifth spawn allowed (exhausted %d)", a.Exhausted)
	}
	// Live ids are skipped, on both sides alike.
	live := []proto.NetworkID{proto.MakeNetworkID(3, 405), proto.MakeNetworkID(3, 407)}
	for _, al := range []*SpawnIDs{a, b} {
		al.SetLive(live)
		al.Begin(101)
		x, _ := al.Next(3)
		y, _ := al.Next(3)
		_, ok := al.Next(3)
		if x != proto.MakeNetworkID(3, 406) || y != proto.MakeNetworkID(3, 408) || ok || al.Collisions != 2 {
			t.Fatalf("with live ids %v: %v %v %v (collisions %d)", live, x, y, ok, al.Collisions)
		}
	}
	if _, ok := a.Next(proto.MaxSpawner + 1); ok {
		t.Fatal("spawner above MaxSpawner allowed")
	}
	// The server's (spawner 0) ids skip live ones too.
	a.SetLive([]proto.NetworkID{proto.MakeNetworkID(0, 1)})
	if id, ok := a.Next(0); !ok || id != proto.MakeNetworkID(0, 2) {
		t.Fatalf("server spawn %v %v", id, ok)
	}
}

// TestServerSpawnsPredictable: the ids the server gives a player's
// spawns are those an independent SpawnIDs predicts, and spawns past
// SpawnsPerTick are refused.
func TestServerSpawnsPredictable(t *testing.T) {
	tg := &tgTest{}
	s := newTestServer(t, ServerConfig{SpawnsPerTick: 3}, tg)
	mustJoin(t, s, 7)
	for range 5 {
		s.Step()
	}
	input(t, s, t0, 7, 6, tgInputBytes(0, 0, actFire, 5), View{})
	s.Step()
	pred := NewSpawnIDs(3)
	pred.SetLive([]proto.NetworkID{tgPlayerID(7)})
	pred.Begin(6)
	want := []proto.NetworkID{tgPlayerID(7)}
	for range 3 {
		id, _ := pred.Next(7)
		want = append(want, id)
	}
	if !slices.Equal(ids(s), want) {
		t.Fatalf("ids %v, predicted %v", ids(s), want)
	}
	if st := s.Stats(); st.SpawnsExhausted != 1 {
		t.Fatalf("exhausted %d, want 1", st.SpawnsExhausted)
	}
}

// TestServerStepAllocs: a tick with 64 players (inputs in, step, lag
// compensation, acks, checksum) allocates nothing in steady state.
func TestServerStepAllocs(t *testing.T) {
	tg := &tgTest{rewindFor: 1}
	s := newTestServer(t, ServerConfig{ChecksumInterval: 2}, tg)
	for p := uint16(1); p <= 64; p++ {
		mustJoin(t, s, p)
	}
	h := proto.Header{}
	data := make([]byte, 3*tgInputSize)
	f := proto.InputFrame{Count: 3, Size: tgInputSize, Data: data}
	tick := func() {
		next := s.Tick() + 1
		h.Tick, h.InterpFrom, h.InterpTo = next, next-6, next-5
		for p := uint16(1); p <= 64; p++ {
			f.Player, f.Tick = p, next
			data[3*tgInputSize-4] = byte(p)
			if p%5 == 0 {
				continue // some inputs missing
			}
			if err := s.ReceiveInput(s.Scheduled(next).Add(-time.Millisecond), &h, &f); err != nil {
				t.Fatal(err)
			}
		}
		s.Step()
		for p := uint16(1); p <= 64; p++ {
			s.InputAck(p)
		}
		s.Checksum()
	}
	for range 100 {
		tick()
	}
	if n := testing.AllocsPerRun(200, tick); n != 0 {
		t.Fatalf("%v allocations per tick with 64 players", n)
	}
	if tg.rewind.Unknown || tg.rewind.Clamped || len(tg.rewound) != 64 {
		t.Fatalf("lag compensation did not run: %+v, %d bodies", tg.rewind, len(tg.rewound))
	}
}
