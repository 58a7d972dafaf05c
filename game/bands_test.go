package game

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
)

// bandsRig starts a game rig serving the arena with its 300 NPCs and its
// interest management (arena.Interest: a 64 m view radius, the far half
// of it in distance bands at 30 and 15 Hz) over links of latency, every
// socket passed through wrap when set, and dials players roaming players
// (testrig.RoamingInputs): their projectiles fly past half the radius.
func bandsRig(t *testing.T, latency time.Duration, wrap func(net.PacketConn, uint64) net.PacketConn, players int) (*gameRig, []*Client, func()) {
	t.Helper()
	world, sched := arena.Interest()
	r := newGameRigLink(t, Config{Interest: world, Scheduler: sched, View: arena.View}, latency, wrap)
	r.npcs = arena.DefaultNPCs
	r.inputs = func(seed uint64) InputFunc { return testrig.RoamingInputs(seed) }
	var stops []func() error
	var gcs []*Client
	for i := range players {
		c, gc := r.dial(uint64(i+1), uint16(i+1), nil)
		stops = append(stops, c.Close)
		gcs = append(gcs, gc)
	}
	return r, gcs, func() {
		for _, stop := range stops {
			stop()
		}
		r.close()
	}
}

// TestPredictionWithBandsVirtual: eight roaming players (their
// projectiles flying into the far bands of their view) play the arena
// with distance bands for 30 s of virtual time on a clean 20 ms link;
// once their clocks have converged no input is late, and prediction,
// re-simulated from every confirmed state, never corrects an own body
// (before the players' own entities were kept out of the bands, a
// projectile beyond half the view radius reached its client a tick or
// three late, and each re-simulation from it moved it by a tick's flight:
// 471 corrections in 60 s).
func TestPredictionWithBandsVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, gcs, stop := bandsRig(t, 20*time.Millisecond, nil, 8)
		defer stop()
		time.Sleep(ConvergeTime + 30*time.Second)
		var frames, corrections, late uint64
		for i, gc := range gcs {
			st := gc.Stats()
			e, s := st.Engine, st.Settled
			frames += e.Rollbacks - s.Rollbacks
			corrections += e.Corrections - s.Corrections
			late += st.LateInputs
			if st.Resyncs != 0 || st.Desyncs != 0 {
				t.Errorf("client %d: %d resyncs %v, %d desyncs", i+1, st.Resyncs, st.ResyncCauses, st.Desyncs)
			}
		}
		t.Logf("%d own-body corrections in %d rollbacks, %d late inputs", corrections, frames, late)
		if frames < 8*25*60 {
			t.Errorf("%d rollbacks in 30 s for eight players: prediction did not run", frames)
		}
		if late != 0 || corrections != 0 {
			t.Errorf("%d own-body corrections and %d late inputs after convergence on a clean link, want none", corrections, late)
		}
	})
}
