package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

func TestClientConfigErrors(t *testing.T) {
	bad := []ClientConfig{
		{},                           // no players
		{Players: []uint16{0}},       // server slot
		{Players: []uint16{4096}},    // beyond MaxSpawner
		{Players: []uint16{3, 2, 3}}, // duplicate
		{Players: []uint16{1}, TickRate: -1},
		{Players: []uint16{1}, TickRate: 1001},
		{Players: []uint16{1}, InputRing: -1},
		{Players: []uint16{1}, InputRing: 1 << 13},
		{Players: []uint16{1}, InputInterval: -1},
		{Players: []uint16{1}, InputInterval: 9},
		{Players: []uint16{1}, MaxInterpLag: -time.Millisecond},
		{Players: []uint16{1}, MaxCorrection: -1},
		{Players: []uint16{1}, SpawnsPerTick: -2},
		{Players: []uint16{1}, SkipState: true},
	}
	for i, cfg := range bad {
		_, err := NewClient(&testGame{}, cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("config %d (%+v): error %v, want a ConfigError", i, cfg, err)
		}
	}
	c, err := NewClient(&testGame{}, ClientConfig{Players: []uint16{7, 2}, InputRing: 40})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Players(); len(got) != 2 || got[0] != 2 || got[1] != 7 {
		t.Errorf("players %v, want sorted [2 7]", got)
	}
	if c.cfg.InputRing != 64 || c.Period() != time.Second/60 || c.cfg.MaxInterpLag != 200*time.Millisecond {
		t.Errorf("defaults: ring %d period %v lag %v", c.cfg.InputRing, c.Period(), c.cfg.MaxInterpLag)
	}
	if _, err := NewClient(&badSchemaGame{}, ClientConfig{Players: []uint16{1}}); !errors.As(err, new(*ConfigError)) {
		t.Errorf("bad schema: %v", err)
	}
}

type badSchemaGame struct{ testGame }

func (badSchemaGame) Schema() Schema { return Schema{InputSize: 0, RecordSize: 8} }

func TestRedundancy(t *testing.T) {
	for _, c := range []struct {
		loss float64
		want int
	}{{0, 3}, {-1, 3}, {0.02, 3}, {0.05, 4}, {0.1, 4}, {0.3, 8}, {0.9, 32}, {2, 32}} {
		if got := Redundancy(c.loss); got != c.want {
			t.Errorf("Redundancy(%v) = %d, want %d", c.loss, got, c.want)
		}
	}
}

// parseFrames decodes every input frame in b.
func parseFrames(t *testing.T, b []byte) []proto.InputFrame {
	t.Helper()
	var out []proto.InputFrame
	for len(b) > 0 {
		f, n, err := proto.ParseInputFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
		b = b[n:]
	}
	return out
}

func TestClientInputFrames(t *testing.T) {
	c, err := NewClient(&testGame{}, ClientConfig{Players: []uint16{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if b := c.AppendInputFrames(nil, 1200, 0); len(b) != 0 {
		t.Fatal("frames before Start")
	}
	now := t0
	c.Start(now, 100, 0)
	input := func(player uint16, tick uint32, dst []byte) []byte {
		return append(dst, byte(tick), byte(player), 0, 0)
	}
	// Two seconds of frames without any ack (the server's packets
	// arrive): every packet repeats every input the ring holds (all are
	// unacknowledged), in frames of at most MaxInputsPerFrame.
	for i := range 120 {
		now = now.Add(c.Period())
		c.PacketReceived(now, 100+uint32(i))
		c.Advance(now, input)
	}
	check := func(fs []proto.InputFrame, want int) {
		t.Helper()
		if want == proto.MaxInputsPerFrame {
			// A second frame per player carries the 32 before.
			if len(fs) != 4 || fs[1].Tick != c.Tick()-proto.MaxInputsPerFrame || fs[1].Count != proto.MaxInputsPerFrame {
				t.Fatalf("%d frames %+v, want two per player", len(fs), fs)
			}
			fs = []proto.InputFrame{fs[0], fs[2]}
		}
		if len(fs) != 2 {
			t.Fatalf("%d frames, want one per player", len(fs))
		}
		for i, f := range fs {
			if f.Player != uint16(i+1) || f.Tick != c.Tick() || int(f.Count) != want || f.Size != tgInputSize {
				t.Fatalf("frame %+v, want player %d tick %d count %d", f, i+1, c.Tick(), want)
			}
			for k := range int(f.Count) {
				in := f.Input(k)
				tick := f.FirstTick() + uint32(k)
				if in[0] != byte(tick) || in[1] != byte(f.Player) {
					t.Fatalf("input %d of player %d is %x, want tick %d", k, f.Player, in, tick)
				}
			}
		}
	}
	check(parseFrames(t, c.AppendInputFrames(nil, 1200, 0)), proto.MaxInputsPerFrame)
	// The server acknowledges up to Tick-5 for player 1 and Tick-1 for
	// player 2 (the first ack only says "inputs arrive").
	for _, p := range []uint16{1, 2} {
		c.InputAck(now, proto.InputAckFrame{Player: p, Newest: c.Tick() - 40, Age: 50}, c.Tick()-10, 0)
	}
	c.InputAck(now, proto.InputAckFrame{Player: 1, Newest: c.Tick() - 5, Age: 50}, c.Tick()-10, 0)
	c.InputAck(now, proto.InputAckFrame{Player: 2, Newest: c.Tick() - 1, Age: 50}, c.Tick()-10, 0)
	fs := parseFrames(t, c.AppendInputFrames(nil, 1200, 0))
	if fs[0].Count != 5 || fs[1].Count != 3 {
		t.Fatalf("counts %d, %d; want 5 unacknowledged and 3 (the minimum)", fs[0].Count, fs[1].Count)
	}
	if fs := parseFrames(t, c.AppendInputFrames(nil, 1200, 0.3)); fs[1].Count != 8 {
		t.Fatalf("count %d at 30 %% loss, want 8", fs[1].Count)
	}
	// Room for one frame header and two inputs only.
	b := c.AppendInputFrames(nil, 1+2+4+1+1+2*tgInputSize, 0)
	if fs := parseFrames(t, b); len(fs) != 1 || fs[0].Count != 2 || fs[0].Tick != c.Tick() {
		t.Fatalf("small room: %+v", fs)
	}
	// Allocation-free once the buffers exist.
	buf := make([]byte, 0, 1500)
	if n := testing.AllocsPerRun(100, func() {
		now = now.Add(c.Period())
		c.Advance(now, input)
		buf = c.AppendInputFrames(buf[:0], 1200, 0.02)
	}); n != 0 {
		t.Errorf("Advance+AppendInputFrames: %v allocs", n)
	}
}

func TestClientRejectedZeroesAction(t *testing.T) {
	c, _ := NewClient(&testGame{}, ClientConfig{Players: []uint16{1}})
	now := t0
	c.Start(now, 0, 0)
	now = now.Add(10 * c.Period())
	c.Advance(now, func(player uint16, tick uint32, dst []byte) []byte {
		return append(dst, tgInputBytes(5, 0, actFire, 1)...)
	})
	tick := c.Tick() - 2
	c.Rejected(1, tick)
	c.Rejected(9, tick) // not ours: ignored
	if in := c.ring.input(tick, 0); in[0] != 5 || in[2] != 0 || in[3] != 0 {
		t.Fatalf("rejected input %x, want the move kept and the action zeroed", in)
	}
	if in := c.ring.input(tick+1, 0); in[2] != actFire {
		t.Fatalf("other input %x changed", in)
	}
	if c.Stats().RejectedActions != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

// The predicted clock converges to inputs arriving about the target age
// before they are needed, and again after the path gets longer (the clock
// jumps or speeds up) and shorter (it slows down).
func TestClientClockConverges(t *testing.T) {
	for _, oneWay := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond} {
		h, c := lossless(t, oneWay, ClientConfig{}, 1)
		target := h.Server.Period() // rttVar is 0 here
		converged := func(phase string) {
			t.Helper()
			h.Run(3 * time.Second)
			mark := h.Server.Tick()
			missing := h.Server.PlayerStats(1).Missing
			h.Run(2 * time.Second)
			if m := h.Server.PlayerStats(1).Missing - missing; m != 0 {
				t.Errorf("%v %s: %d inputs missing after convergence", oneWay, phase, m)
			}
			for _, a := range h.Ages(mark, h.Server.Tick()) {
				if a < target/2 || a > target+3*h.Server.Period() {
					t.Errorf("%v %s: input age %v, want about %v", oneWay, phase, a, target)
					break
				}
			}
			t.Logf("%v %s: %+v", oneWay, phase, c.Client.Stats())
			if d := c.Client.Stats().Dilation; d < -maxDilation || d > maxDilation {
				t.Errorf("dilation %v", d)
			}
		}
		converged("start")
		c.SetPath(netem.Spec{Delay: oneWay + 60*time.Millisecond})
		converged("after +60 ms")
		c.SetPath(netem.Spec{Delay: oneWay})
		converged("after -60 ms")
	}
}

// randomTestInput moves randomly and fires now and then.
func randomTestInput(seed uint64) SampleFunc {
	return func(player uint16, tick uint32, dst []byte) []byte {
		h := splitmix64(seed ^ uint64(tick)<<16 ^ uint64(player))
		var act byte
		if h>>40%16 == 0 {
			act = actFire
		}
		return append(dst, tgInputBytes(int8(h%15)-7, int8(h>>8%15)-7, act, 1)...)
	}
}

// With nobody else touching it, the client's prediction equals the
// server's state tick for tick: no correction at all.
func TestClientPredictionMatchesServer(t *testing.T) {
	h, c := lossless(t, 30*time.Millisecond, ClientConfig{Own: tgOwn(1)}, 1)
	c.input = randomTestInput(1)
	h.Run(2 * time.Second)
	before := c.Client.Stats()
	if before.Rollbacks == 0 || before.Predicted == 0 {
		t.Fatalf("no prediction: %+v", before)
	}
	predicted := map[uint32][]byte{}
	compared := 0
	for range 3000 {
		h.Run(time.Millisecond)
		if w := c.Client.Predicted(); c.Client.predicting {
			if _, ok := predicted[c.Client.simTick]; !ok {
				predicted[c.Client.simTick] = w.AppendCanonical(nil)
			}
		}
		if p, ok := predicted[h.Server.Tick()]; ok {
			if got := h.Server.World().AppendCanonical(nil); string(got) != string(p) {
				t.Fatalf("tick %d: first prediction %x, server %x", h.Server.Tick(), p, got)
			}
			delete(predicted, h.Server.Tick())
			compared++
		}
	}
	st := c.Client.Stats()
	if compared < 150 {
		t.Fatalf("only %d ticks compared", compared)
	}
	if st.Corrections != before.Corrections || st.Visible != 0 {
		t.Errorf("corrections %d -> %d, visible %v", before.Corrections, st.Corrections, st.Visible)
	}
	if st.Resimulated-before.Resimulated < 150*2 {
		t.Errorf("resimulated %d ticks: rollback is not unconditional", st.Resimulated-before.Resimulated)
	}
	t.Logf("%d ticks compared, %+v", compared, st)
}

// TestClientFirstStep: FirstStep sees, for each new authoritative state,
// the world one step after it, as the server computed that tick (a
// single local player alone in the game predicts exactly).
func TestClientFirstStep(t *testing.T) {
	first := map[uint32][]byte{}
	cfg := ClientConfig{Own: tgOwn(1), FirstStep: func(tick uint32, w Game) {
		if _, ok := first[tick]; ok {
			t.Errorf("tick %d stepped first twice", tick)
		}
		first[tick] = w.AppendCanonical(nil)
	}}
	h, c := lossless(t, 30*time.Millisecond, cfg, 1)
	c.input = randomTestInput(1)
	h.Run(time.Second)
	server := map[uint32][]byte{}
	for range 1000 {
		h.Run(time.Millisecond)
		server[h.Server.Tick()] = h.Server.World().AppendCanonical(nil)
	}
	compared := 0
	for tick, p := range first {
		if want, ok := server[tick]; ok {
			if string(want) != string(p) {
				t.Fatalf("tick %d: first step %x, server %x", tick, p, want)
			}
			compared++
		}
	}
	if st := c.Client.Stats(); compared < 50 || uint64(compared) > st.Rollbacks {
		t.Fatalf("%d ticks compared, %d rollbacks", compared, st.Rollbacks)
	}
}

// A correction (the server moves our player behind our back) is added to
// the display offset, so the display does not jump, and then fades with
// the configured half-life.
func TestClientCorrectionSmoothed(t *testing.T) {
	half := 100 * time.Millisecond
	h, c := lossless(t, 20*time.Millisecond, ClientConfig{CorrectionHalfLife: half, Own: tgOwn(1)}, 1)
	c.input = func(player uint16, tick uint32, dst []byte) []byte { return append(dst, tgInputBytes(1, 0, 0, 0)...) }
	h.Run(2 * time.Second)
	shown := func() int32 {
		for _, b := range c.Client.DisplayBodies() {
			if b.ID == tgPlayerID(1) {
				return b.Pos.X
			}
		}
		t.Fatal("own body not shown")
		return 0
	}
	predicted := func() int32 { return c.Client.pred.(*testGame).ents[0].x }
	if c.Client.Stats().Corrections != 0 {
		t.Fatalf("corrections before the teleport: %+v", c.Client.Stats())
	}
	h.Server.World().(*testGame).ents[0].x += 1000
	last := shown()
	for i := 0; c.Client.Stats().Corrections == 0; i++ {
		if i > 1000 {
			t.Fatal("no correction")
		}
		last = shown()
		h.Run(time.Millisecond)
	}
	st := c.Client.Stats()
	if st.Corrections != 1 || st.CorrectionMax != 1000 {
		t.Fatalf("stats %+v, want one correction of 1000", st)
	}
	// The frame with the correction shows the body where it was, plus at
	// most a frame of motion (1 unit per tick).
	if d := shown() - last; d < 0 || d > 2 {
		t.Fatalf("display jumped by %d", d)
	}
	off := func() float64 { return float64(predicted() - shown()) }
	o0 := off()
	if o0 < 990 || st.Visible < 990 {
		t.Fatalf("offset %v visible %v, want about 1000", o0, st.Visible)
	}
	h.Run(half)
	if o := off(); o < o0*0.4 || o > o0*0.6 {
		t.Errorf("offset %v after one half-life, want about %v", o, o0/2)
	}
	h.Run(2 * time.Second)
	if o := off(); o != 0 || c.Client.Stats().Visible != 0 {
		t.Errorf("offset %v after 2 s", o)
	}
}

// Snapping instead of smoothing: a negative half-life, or a correction
// beyond MaxCorrection.
func TestClientCorrectionSnaps(t *testing.T) {
	for _, cfg := range []ClientConfig{{CorrectionHalfLife: -1, Own: tgOwn(1)}, {MaxCorrection: 500, Own: tgOwn(1)}} {
		h, c := lossless(t, 20*time.Millisecond, cfg, 1)
		h.Run(time.Second)
		h.Server.World().(*testGame).ents[0].x += 1000
		for i := 0; c.Client.Stats().Corrections == 0; i++ {
			if i > 1000 {
				t.Fatal("no correction")
			}
			h.Run(time.Millisecond)
		}
		if v := c.Client.Stats().Visible; v != 0 {
			t.Errorf("%+v: visible offset %v, want a snap", cfg, v)
		}
	}
}

// A headless client keeps its clock and inputs just in time but decodes,
// predicts and interpolates nothing.
func TestClientHeadless(t *testing.T) {
	h, c := lossless(t, 20*time.Millisecond, ClientConfig{Headless: true}, 1)
	h.Run(3 * time.Second)
	missing := h.Server.PlayerStats(1).Missing
	h.Run(2 * time.Second)
	if m := h.Server.PlayerStats(1).Missing - missing; m != 0 {
		t.Errorf("%d inputs missing after convergence", m)
	}
	st := c.Client.Stats()
	if st.Snapshots == 0 || st.InputsSampled == 0 {
		t.Fatalf("no states or inputs: %+v", st)
	}
	if st.Rollbacks != 0 || st.InterpFrames != 0 || len(c.Client.DisplayBodies()) != 0 {
		t.Errorf("headless client predicted or interpolated: %+v", st)
	}
	// States are not decoded: a record the game would reject is taken.
	var bad deltacomp.Snapshot
	bad.Reset(h.Server.Tick()+100, 1)
	bad.Append(1, []byte{0})
	if err := c.Client.Authoritative(h.Server.Tick()+100, &bad); err != nil {
		t.Errorf("headless Authoritative decoded the state: %v", err)
	}
}

// TestClientResumeKeepsInputs: the host goes silent after acknowledging
// inputs up to its newest while the predicted clock runs on; sampling
// stops at the prediction limit (half the ring past the newest server
// tick) instead of overwriting the ring. A successor resumes the game
// at tick 185 (its standby's last tick): Resume re-sends every input
// after 185, those up to the acknowledged one exactly as first sampled.
func TestClientResumeKeepsInputs(t *testing.T) {
	c, err := NewClient(&testGame{}, ClientConfig{Players: []uint16{1}})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	c.Start(now, 100, 0)
	gen := byte(1) // which sampling an input comes from
	input := func(player uint16, tick uint32, dst []byte) []byte {
		return append(dst, byte(tick), byte(tick>>8), gen, 0)
	}
	for i := range 90 {
		now = now.Add(c.Period())
		c.PacketReceived(now, 100+uint32(i))
		c.Advance(now, input)
	}
	acked := c.Tick()
	c.InputAck(now, proto.InputAckFrame{Player: 1, Newest: acked, Age: 50}, 189, 0)
	// The host dies: two seconds without a packet.
	gen = 2
	for range 120 {
		now = now.Add(c.Period())
		c.Advance(now, input)
	}
	limit := uint32(189 + c.cfg.InputRing*3/4)
	if c.Tick() != limit || c.Stats().PredictionCapped == 0 {
		t.Fatalf("predicted tick %d after 2 s of silence, want the limit %d (capped %d frames)", c.Tick(), limit, c.Stats().PredictionCapped)
	}
	gen = 3
	c.Resume(now, 185, 20*time.Millisecond)
	now = now.Add(c.Period())
	c.Advance(now, input)
	got := parseFrames(t, c.AppendInputFrames(nil, 1200, 0))
	seen := map[uint32]byte{}
	for _, f := range got {
		for k := range int(f.Count) {
			in := f.Input(k)
			tick := f.FirstTick() + uint32(k)
			if uint32(in[0])|uint32(in[1])<<8 != tick&0xffff {
				t.Fatalf("input for tick %d is %x", tick, in)
			}
			seen[tick] = in[2]
		}
	}
	for tick := uint32(186); int32(tick-c.Tick()) <= 0; tick++ {
		g, ok := seen[tick]
		switch {
		case !ok:
			t.Fatalf("input for tick %d not re-sent (frames %+v)", tick, got)
		case int32(tick-acked) <= 0 && g != 1:
			t.Fatalf("acknowledged input for tick %d re-sampled (generation %d)", tick, g)
		}
	}
	if _, ok := seen[185]; ok || c.Stats().Resumes != 1 {
		t.Fatalf("tick 185 (the successor has it) re-sent, or resumes %d", c.Stats().Resumes)
	}
}

// TestClientRenderBodies: between two frames, the own body is drawn
// blended between the last two predicted ticks by the display time —
// moving on smoothly at a display rate above the tick rate — without
// allocating or changing the engine.
func TestClientRenderBodies(t *testing.T) {
	h, c := lossless(t, 30*time.Millisecond, ClientConfig{Own: tgOwn(1)}, 1)
	c.input = func(player uint16, tick uint32, dst []byte) []byte {
		return append(dst, 10, 0, 0, 0)[:tgInputSize]
	}
	h.Run(2 * time.Second)
	cli := c.Client
	own := func(bs []Body) int32 {
		for _, b := range bs {
			if cli.Own(b.ID) {
				return b.Pos.X
			}
		}
		t.Fatal("no own body rendered")
		return 0
	}
	frame := cli.lastFrame
	var xs []int32
	buf := make([]Body, 0, 64)
	for i := range 5 {
		xs = append(xs, own(cli.RenderBodies(frame.Add(time.Duration(i)*cli.Period()/4), buf[:0])))
	}
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			t.Fatalf("own body drawn at %v over one tick of display time: not moving on", xs)
		}
	}
	t.Logf("own body drawn at %v over one tick of display time", xs)
	if xs[4]-xs[0] < 5 || xs[4]-xs[0] > 10 {
		t.Fatalf("own body drawn at %v: one tick of display time should move it by up to one tick's 10 units", xs)
	}
	if n := testing.AllocsPerRun(100, func() { cli.RenderBodies(frame, buf[:0]) }); n != 0 {
		t.Fatalf("RenderBodies allocates %v times", n)
	}
}
