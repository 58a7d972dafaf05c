package scenario_test

import (
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
)

// bitsPer is bytes in bits per n entries.
func bitsPer(bytes, n int) float64 { return float64(8*bytes) / float64(max(n, 1)) }

// TestCubesODEBandwidth replays the recording through ring, scheduler,
// encoder and replica with 100 ms RTT (baselines 6 ticks old) and the
// budget lifted, and checks the rate, that every state the client
// decodes is the recording's at that revision, and that the client ends
// with the server's state.
func TestCubesODEBandwidth(t *testing.T) {
	rec, err := scenario.CubesODE()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scenario.Replay{Rec: rec}, netModel{RTT: 6}, 1, 1)
	h.want = func(rev uint32) *deltacomp.Snapshot {
		if rev == 0 || int(rev) > len(rec.Frames) {
			return nil
		}
		return &rec.Frames[rev-1]
	}
	warm := 60
	for h.tick < warm {
		h.step()
	}
	c := h.clients[0]
	b0, e0, eb0 := c.bytes, c.entries, c.entryBytes
	t0 := h.tick
	for h.step() {
	}
	rate := kbps(c.bytes-b0, h.tick-t0)
	t.Logf("cubes-ode XOR+RLE: %.1f kbit/s over %d ticks (%d frames), %.1f bits per changed cube (%.1f a tick); %d states decoded equal to the recording",
		rate, h.tick-t0, c.frames, bitsPer(c.entryBytes-eb0, c.entries-e0), float64(c.entries-e0)/float64(h.tick-t0), h.statesChecked)
	if h.statesChecked < len(rec.Frames)-benchRTT {
		t.Fatalf("%d states checked of %d frames", h.statesChecked, len(rec.Frames))
	}
	// The target is under 200 kbit/s, aiming for 128.
	if rate > 128 {
		t.Fatalf("cubes-ode needs %.1f kbit/s per client, over the 128 aimed for", rate)
	}
	h.drain()
	if err := h.converged(0); err != nil {
		t.Fatal(err)
	}
}
