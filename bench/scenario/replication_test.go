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
// budget lifted, in codec 4 and in codec 5 (scenario.CubePredictor), and
// checks the rate, that every state the client decodes is the
// recording's at that revision, and that the client ends with the
// server's state.
func TestCubesODEBandwidth(t *testing.T) {
	rec, err := scenario.CubesODE()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pred *deltacomp.Predictor
		// The target is under 200 kbit/s, aiming for 128; codec
		// 5's is 80, which it misses (bench/README.md): this bounds it
		// where it stands.
		limit float64
	}{{nil, 128}, {scenario.CubePredictor, 97}} {
		h := newHarness(t, &scenario.Replay{Rec: rec}, netModel{RTT: 6}, 1, 1, c.pred)
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
		cl := h.clients[0]
		b0, e0, eb0 := cl.bytes, cl.entries, cl.entryBytes
		t0 := h.tick
		for h.step() {
		}
		rate := kbps(cl.bytes-b0, h.tick-t0)
		t.Logf("cubes-ode, codec %v: %.1f kbit/s over %d ticks (%d frames), %.1f bits per changed cube (%.1f a tick); %d states decoded equal to the recording",
			h.ring.Codec(), rate, h.tick-t0, cl.frames, bitsPer(cl.entryBytes-eb0, cl.entries-e0), float64(cl.entries-e0)/float64(h.tick-t0), h.statesChecked)
		if h.statesChecked < len(rec.Frames)-benchRTT {
			t.Fatalf("%d states checked of %d frames", h.statesChecked, len(rec.Frames))
		}
		if rate > c.limit {
			t.Fatalf("cubes-ode in codec %v needs %.1f kbit/s per client, over %v", h.ring.Codec(), rate, c.limit)
		}
		h.drain()
		if err := h.converged(0); err != nil {
			t.Fatal(err)
		}
	}
}
