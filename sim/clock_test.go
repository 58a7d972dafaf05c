package sim

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/udp/netem"
)

// When the path gets 100 ms longer each way the clock jumps, and the acks
// for the inputs sampled before the jump, still on their way, top the
// jump up to the lag they show: within a second of the step the inputs
// arrive the target age early again, and only the inputs in flight at
// the jump are late, about a round trip's worth. (The first ack that
// found the clock behind came before the gap had grown to its full 6
// ticks: jumping by what it showed plus the target left the clock 2
// ticks short, and every input was late for 1.1 s, 56 at 5 ms, 63 at
// 40 ms.)
func TestClientClockStepUp(t *testing.T) {
	for _, oneWay := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond} {
		h, c := lossless(t, oneWay, ClientConfig{}, 1)
		period := h.Server.Period()
		target := period // rttVar is 0 here
		h.Run(3 * time.Second)
		before := c.Client.Stats()
		c.SetPath(netem.Spec{Delay: oneWay + 100*time.Millisecond})
		h.Run(time.Second)
		mark := h.Server.Tick()
		h.Run(2 * time.Second)
		st := c.Client.Stats()
		late := st.LateInputs - before.LateInputs
		rtt := 2 * (oneWay + 100*time.Millisecond)
		t.Logf("%v +100 ms: %d inputs late, %d jumps; %+v", oneWay, late, st.ClockJumps-before.ClockJumps, st)
		if st.ClockJumps == before.ClockJumps {
			t.Errorf("%v: the clock did not jump", oneWay)
		}
		if limit := uint64(2 * rtt / period); late > limit {
			t.Errorf("%v: %d inputs late after the step, want at most %d (two round trips)", oneWay, late, limit)
		}
		for _, a := range h.Ages(mark, h.Server.Tick()) {
			if a < target/2 || a > target+period {
				t.Errorf("%v: from 1 s after the step, input age %v, want about %v", oneWay, a, target)
				break
			}
		}
	}
}

// The acks for inputs sampled before a jump describe the clock before it:
// they do not steer the clock after it. A jump sized with a target the
// lengthening swelled (here 120 ms) already runs ahead; taking the
// in-flight inputs' missing acks as a lagging clock sped it up at full
// dilation, further ahead (TestGameClockVirtual's 150 ms step).
func TestPredClockStaleAcksAfterJump(t *testing.T) {
	k := predClock{period: time.Second / 60}
	now := t0
	k.start(now, 100, 80*time.Millisecond)
	rttVar := 10 * time.Millisecond
	// Settled: the inputs arrive about the target age early.
	for range 120 {
		now = now.Add(k.period)
		k.advance(now)
		server := uint32(k.tick) - 6
		k.ack(now, ageUnits(time.Duration(k.target*float64(time.Second))), server+2, server, rttVar)
	}
	if k.dilation < -0.02 || k.dilation > 0.02 {
		t.Fatalf("settled dilation %.3f", k.dilation)
	}
	// The path lengthens: the round-trip variation swells and the inputs
	// stop arriving.
	rttVar = 55 * time.Millisecond
	server := uint32(k.tick) - 6
	before := k.tick
	if _, jumped := k.ack(now, proto.InputAgeMissing, server-3, server, rttVar); !jumped {
		t.Fatal("no jump")
	}
	jumpedTo := k.tick
	if d := jumpedTo - before; d < 9 || d > 11 {
		t.Fatalf("jumped %.1f ticks, want 3 missing + the 7.6-tick target", d)
	}
	// The inputs sampled before the jump (up to server+6) keep arriving
	// late, up to 5 ticks behind (less than the jump made up).
	for i := range 6 {
		now = now.Add(k.period)
		k.advance(now)
		server++
		k.ack(now, proto.InputAgeMissing, server-3-uint32(min(i, 2)), server, rttVar)
		if k.dilation != 0 {
			t.Fatalf("after stale ack %d: dilation %.3f, want 0 (the acks describe the clock before the jump)", i, k.dilation)
		}
	}
	if ahead := k.tick - jumpedTo; ahead > 6.01 {
		t.Fatalf("clock moved %.2f ticks in 6 ticks after the jump", ahead)
	}
}
