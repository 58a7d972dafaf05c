package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

func TestViewAtGaps(t *testing.T) {
	c, err := NewClient(&testGame{}, ClientConfig{Players: []uint16{1}})
	if err != nil {
		t.Fatal(err)
	}
	g := &testGame{}
	for _, tick := range []uint32{10, 12, 13} {
		c.record(tick, g)
	}
	for _, tc := range []struct {
		t    float64
		want View
	}{
		{11, View{10, 12, proto.BlendFromFloat(0.5)}},
		{10, View{10, 12, 0}},
		{12.25, View{12, 13, proto.BlendFromFloat(0.25)}},
		{13, View{13, 13, 0}},
		{13.5, View{13, 13, 0}}, // past the newest: hold it
		{5, View{10, 10, 0}},    // before the oldest: hold it
		{-1e6, View{10, 10, 0}},
	} {
		if got := c.viewAt(tc.t); got != tc.want {
			t.Errorf("viewAt(%v) = %+v, want %+v", tc.t, got, tc.want)
		}
		if v := c.viewAt(tc.t); tc.t >= 10 && tc.t <= 13 && math.Abs(viewTime(v)-tc.t) > 1e-4 {
			t.Errorf("viewAt(%v) names moment %v", tc.t, viewTime(v))
		}
	}
}

// The client shows remote state exactly as the server's lag-compensation
// history interpolates it for the view the client reports, the delay
// settles at packet interval + 2 × jitter, and the view stays within
// MaxInterpLag. The jitter starts at initialJitter and decays over about
// two seconds per e-fold: the delay has settled after 5 s.
func TestClientInterpolation(t *testing.T) {
	h, c := lossless(t, 30*time.Millisecond, ClientConfig{}, 1, 2)
	c.input = func(player uint16, tick uint32, dst []byte) []byte { return append(dst, tgInputBytes(3, 0, 0, 0)...) }
	c.frame = 7 * time.Millisecond // not a multiple of the tick
	h.Run(5 * time.Second)
	before := c.Client.Stats()
	checked := 0
	for range 2000 {
		h.Run(time.Millisecond)
		cli := c.Client
		v := cli.View()
		if int32(cli.Tick()-v.To) < 0 || int32(v.To-v.From) < 0 {
			t.Fatalf("view %+v for tick %d", v, cli.Tick())
		}
		from, ok1 := h.Server.hist.Get(cli.view.From)
		to, ok2 := h.Server.hist.Get(cli.view.To)
		if !ok1 || !ok2 {
			t.Fatalf("view %+v not in the server's history", cli.view)
		}
		want := InterpolateBodies(nil, from, to, cli.view.Blend)
		if !slices.Equal(want, cli.InterpolatedBodies()) {
			t.Fatalf("view %+v: client shows %v, server rebuilds %v", cli.view, cli.InterpolatedBodies(), want)
		}
		checked++
	}
	st := c.Client.Stats()
	t.Logf("%+v", st)
	if st.InterpFrames-before.InterpFrames < 250 || st.InterpStalls != before.InterpStalls {
		t.Errorf("frames %d, stalls %d on a steady link", st.InterpFrames-before.InterpFrames, st.InterpStalls-before.InterpStalls)
	}
	if d := st.InterpDelay - st.InterpTarget; d < -4*time.Millisecond || d > 4*time.Millisecond {
		t.Errorf("interpolation delay %v, target %v", st.InterpDelay, st.InterpTarget)
	}
	if st.InterpTarget < h.Server.Period() || st.InterpTarget > 2*h.Server.Period() {
		t.Errorf("target %v on a jitter-free link", st.InterpTarget)
	}

	// A MaxInterpLag shorter than the path: the view is pulled up, but
	// never closer to the newest snapshot than the interpolation delay
	// (remote entities stay smooth; the server's rewind clamps instead).
	h, c = lossless(t, 60*time.Millisecond, ClientConfig{MaxInterpLag: 50 * time.Millisecond}, 1)
	h.Run(2 * time.Second)
	cli := c.Client
	if st := cli.Stats(); st.InterpClamps == 0 || st.InterpStalls != 0 {
		t.Errorf("want clamps and no stalls: %+v", st)
	}
	lo := cli.clock.tick - (cli.clock.ageEMA+0.05)/cli.period.Seconds()
	lo = min(lo, float64(cli.histNewest)-cli.interp.base()/cli.period.Seconds())
	if cli.InterpTime() < lo-1e-9 {
		t.Errorf("interp time %v, more than the bound behind (%v)", cli.InterpTime(), lo)
	}
}

// TestInterpStallsBounded: on a 100 ms path losing 20 % of packets each
// way the default MaxInterpLag (200 ms) leaves the interpolation delay
// no room for the cover of lost packets, and the stalls that follow are
// counted as the bound's (InterpStallsBounded); with a bound of a second
// the cover is whole and no stall is the bound's.
func TestInterpStallsBounded(t *testing.T) {
	path, err := netem.Parse("delay 100ms 10ms loss 20%")
	if err != nil {
		t.Fatal(err)
	}
	for _, lag := range []time.Duration{0, time.Second} {
		h := NewHarness(t, &testGame{}, 1)
		c := h.Connect(1, path, 5, ClientConfig{MaxInterpLag: lag}, nil)
		h.Run(30 * time.Second)
		st := c.Client.Stats()
		t.Logf("MaxInterpLag %v: frames %d, stalls %d (bounded %d), clamps %d, delay %v, target %v",
			lag, st.InterpFrames, st.InterpStalls, st.InterpStallsBounded, st.InterpClamps, st.InterpDelay, st.InterpTarget)
		switch {
		case st.InterpFrames < 3000:
			t.Errorf("%d frames", st.InterpFrames)
		case lag == 0 && (st.InterpStallsBounded == 0 || 2*st.InterpStallsBounded < st.InterpStalls):
			t.Errorf("default bound: %d stalls, %d of them the bound's; want most", st.InterpStalls, st.InterpStallsBounded)
		case lag != 0 && (st.InterpStallsBounded != 0 || st.InterpStalls*1000 > st.InterpFrames):
			t.Errorf("bound %v: %d stalls, %d of them the bound's; want none the bound's and at most 0.1 %%", lag, st.InterpStalls, st.InterpStallsBounded)
		}
	}
}

// TestInterpCadence: snapshots every other tick (a game host's
// SnapshotInterval 2) are a cadence, not lost packets: the delay's target
// settles at two ticks, and a lost snapshot adds one interval of cover
// (two ticks), as a lost one adds one tick at every tick's cadence.
func TestInterpCadence(t *testing.T) {
	p := time.Second / 60
	for _, step := range []uint32{1, 2, 4} {
		var k interpClock
		k.reset(p)
		now := time.Unix(1000, 0)
		tick := uint32(100)
		for range 600 { // 10 s at cadence 1: the jitter has decayed
			now = now.Add(time.Duration(step) * p)
			tick += step
			k.packet(now, tick)
		}
		if k.gap != 0 {
			t.Fatalf("cadence %d: %d packets counted lost on a lossless path", step, k.gap)
		}
		want := float64(step) * p.Seconds()
		if got := k.target(); got < want || got > want+0.002 {
			t.Fatalf("cadence %d: target %.1f ms, want %.1f", step, got*1e3, want*1e3)
		}
		// One snapshot lost.
		now = now.Add(2 * time.Duration(step) * p)
		tick += 2 * step
		k.packet(now, tick)
		if k.gap != 1 {
			t.Fatalf("cadence %d: a lost snapshot counted as %d", step, k.gap)
		}
		if got := k.target() - k.base(); math.Abs(got-want) > 1e-9 {
			t.Fatalf("cadence %d: a lost snapshot adds %.1f ms of cover, want %.1f", step, got*1e3, want*1e3)
		}
	}
}
