package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
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
// MaxInterpLag.
func TestClientInterpolation(t *testing.T) {
	n := newToyNet(t, &testGame{}, 30*time.Millisecond, ClientConfig{}, 1, 2)
	n.input = func(player uint16, tick uint32, dst []byte) []byte { return append(dst, tgInputBytes(3, 0, 0, 0)...) }
	n.frame = 7 * time.Millisecond // not a multiple of the tick
	n.run(2 * time.Second)
	before := n.cli.Stats()
	checked := 0
	for range 2000 {
		n.run(time.Millisecond)
		c := n.cli
		v := c.View()
		if int32(c.Tick()-v.To) < 0 || int32(v.To-v.From) < 0 {
			t.Fatalf("view %+v for tick %d", v, c.Tick())
		}
		from, ok1 := n.srv.hist.Get(c.view.From)
		to, ok2 := n.srv.hist.Get(c.view.To)
		if !ok1 || !ok2 {
			t.Fatalf("view %+v not in the server's history", c.view)
		}
		want := InterpolateBodies(nil, from, to, c.view.Blend)
		if !slices.Equal(want, c.InterpolatedBodies()) {
			t.Fatalf("view %+v: client shows %v, server rebuilds %v", c.view, c.InterpolatedBodies(), want)
		}
		checked++
	}
	st := n.cli.Stats()
	t.Logf("%+v", st)
	if st.InterpFrames-before.InterpFrames < 250 || st.InterpStalls != before.InterpStalls {
		t.Errorf("frames %d, stalls %d on a steady link", st.InterpFrames-before.InterpFrames, st.InterpStalls-before.InterpStalls)
	}
	if d := st.InterpDelay - st.InterpTarget; d < -4*time.Millisecond || d > 4*time.Millisecond {
		t.Errorf("interpolation delay %v, target %v", st.InterpDelay, st.InterpTarget)
	}
	if st.InterpTarget < n.srv.Period() || st.InterpTarget > 2*n.srv.Period() {
		t.Errorf("target %v on a jitter-free link", st.InterpTarget)
	}

	// A MaxInterpLag shorter than the path: the view is pulled up, but
	// never closer to the newest snapshot than the interpolation delay
	// (remote entities stay smooth; the server's rewind clamps instead).
	n = newToyNet(t, &testGame{}, 60*time.Millisecond, ClientConfig{MaxInterpLag: 50 * time.Millisecond}, 1)
	n.run(2 * time.Second)
	c := n.cli
	if st := c.Stats(); st.InterpClamps == 0 || st.InterpStalls != 0 {
		t.Errorf("want clamps and no stalls: %+v", st)
	}
	lo := c.clock.tick - (c.clock.ageEMA+0.05)/c.period.Seconds()
	lo = min(lo, float64(c.histNewest)-c.interp.base()/c.period.Seconds())
	if c.InterpTime() < lo-1e-9 {
		t.Errorf("interp time %v, more than the bound behind (%v)", c.InterpTime(), lo)
	}
}
