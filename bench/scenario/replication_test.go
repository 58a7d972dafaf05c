package scenario_test

import (
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
)

func TestCubesODEBandwidth(t *testing.T) {
	rec := scenario.CubesODEOrSkip(t)
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
	t.Logf("cubes-ode XOR+RLE: %.1f kbit/s over %d ticks (%d frames)", kbps(c.bytes-b0, h.tick-t0), h.tick-t0, c.frames)
	h.drain()
	if err := h.converged(0); err != nil {
		t.Fatal(err)
	}
}
