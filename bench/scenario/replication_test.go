package scenario_test

import (
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
)

// TestCubesODEBandwidth replays the recording through ring, scheduler,
// encoder and replica with 100 ms RTT (baselines 6 ticks old) and the
// budget lifted, and checks the rate and that the client ends with the
// server's state.
func TestCubesODEBandwidth(t *testing.T) {
	rec, err := scenario.CubesODE()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scenario.Replay{Rec: rec}, netModel{RTT: 6}, 1, 1)
	warm := 60
	for h.tick < warm {
		h.step()
	}
	c := h.clients[0]
	b0 := c.bytes
	t0 := h.tick
	for h.step() {
	}
	rate := kbps(c.bytes-b0, h.tick-t0)
	t.Logf("cubes-ode XOR+RLE: %.1f kbit/s over %d ticks (%d frames)", rate, h.tick-t0, c.frames)
	// The target is under 200 kbit/s, aiming for 128.
	if rate > 128 {
		t.Fatalf("cubes-ode needs %.1f kbit/s per client, over the 128 aimed for", rate)
	}
	h.drain()
	if err := h.converged(0); err != nil {
		t.Fatal(err)
	}
}
