package game

import (
	"bytes"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/netem"
)

// bandsRig starts a game rig serving the arena with its 300 NPCs and its
// interest management (arena.Interest: a 64 m view radius, the far half
// of it in distance bands at 30 and 15 Hz) and confirmations on, over
// links of latency, every socket passed through wrap when set, and dials
// players roaming players
// (testrig.RoamingInputs): their projectiles fly past half the radius.
func bandsRig(t *testing.T, latency time.Duration, wrap func(net.PacketConn, uint64) net.PacketConn, players int) (*gameRig, []*Client, func()) {
	t.Helper()
	world, sched := arena.Interest()
	sched.Confirm = true // UpdatedAt tells unchanged entities from stale ones
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

// TestConfirmedWorldUnderLossVirtual: eight roaming players play the
// arena with distance bands over a 20 ms link losing 5 % of the packets
// each way; for 2,000 ticks, at every tick each client's confirmed world
// (its replica, the state its prediction starts from) reaches, it is
// compared entity by entity with the server's world at that tick. Both
// directions of the definition in docs/GUIDE.md ("Interest") hold: every
// entity whose record differs from the server's, or that the server no
// longer has, is one Client.UpdatedAt reports stale — updated as of an
// older tick, because it is out of view, held back by its band or the
// packet budget, or its last update was lost — and every record is the
// server's at the tick UpdatedAt reports, so an entity reported fresh
// matches. And stale does not just mean old: within half the view radius,
// under 2 % of the entities are unchanged yet reported stale (the
// server confirms the others; without that, 20 %).
func TestConfirmedWorldUnderLossVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := netem.MustParse("loss 5%")
		r, gcs, stop := bandsRig(t, 20*time.Millisecond, func(pc net.PacketConn, seed uint64) net.PacketConn {
			return netem.Wrap(pc, netem.Config{Egress: sp, Seed: seed})
		}, 8)
		defer stop()
		time.Sleep(ConvergeTime)
		const ticks = 2000
		last := make([]uint32, len(gcs))
		var checked, entities, stale, differ, nearHeld, nearUnchangedStale int
		for checked < ticks*len(gcs) {
			time.Sleep(2 * time.Millisecond)
			for i, gc := range gcs {
				var tick uint32
				var state stateCopy
				var at []uint32
				var known []bool
				gc.Do(func(*sim.Client) {
					s := gc.replica.State()
					tick = s.Tick
					if tick == last[i] {
						return
					}
					state = testrig.Copy(s.IDs, s.Records)
					at, known = make([]uint32, s.Len()), make([]bool, s.Len())
					for k, id := range s.IDs {
						at[k], known[k] = gc.updatedAt(id)
					}
				})
				if tick == last[i] {
					continue
				}
				last[i] = tick
				checked++
				// The server's states at the ticks needed, read on its
				// loop (a recorded state does not change).
				hist := map[uint32]stateCopy{}
				r.srv.Do(func() {
					hist[tick] = r.hist[tick]
					for k, a := range at {
						if known[k] {
							hist[a] = r.hist[a]
						}
					}
				})
				now, ok := hist[tick]
				if !ok {
					t.Fatalf("client %d: no server state at tick %d", i+1, tick)
				}
				own, _ := recordOf(now, arena.PlayerID(uint16(i+1)))
				for k, id := range state.IDs {
					entities++
					srvRec, inServer := recordOf(now, id)
					near := own != nil && inServer && nearby(own, srvRec)
					rec := state.Records[k*arena.RecordSize : (k+1)*arena.RecordSize]
					fresh := known[k] && at[k] == tick
					if !fresh {
						stale++
					}
					if near {
						nearHeld++
						if !fresh && bytes.Equal(rec, srvRec) {
							nearUnchangedStale++
						}
					}
					if !inServer || !bytes.Equal(rec, srvRec) {
						differ++
						if fresh {
							t.Errorf("client %d, tick %d: entity %v differs from the server's and is reported fresh", i+1, tick, id)
						}
					}
					if !known[k] {
						continue // updated too long ago to say when: stale
					}
					if srv, ok := recordOf(hist[at[k]], id); !ok || !bytes.Equal(rec, srv) {
						t.Errorf("client %d, tick %d: entity %v is not the server's of tick %d, when UpdatedAt says it was updated", i+1, tick, id, at[k])
					}
				}
			}
		}
		t.Logf("%d client ticks: %d entities held, %d reported stale (%.1f %%), %d of them differing from the server's",
			checked, entities, stale, 100*float64(stale)/float64(entities), differ)
		// Near the player (within half the view radius, band 0: every
		// tick), an unchanged entity is confirmed, not stale, but in the
		// few ticks after a change its baseline is still unacknowledged
		// (0.8 % of them here; 20 % without confirmations).
		t.Logf("within half the view radius: %d entities held, %d unchanged but stale (%.2f %%)",
			nearHeld, nearUnchangedStale, 100*float64(nearUnchangedStale)/float64(nearHeld))
		if nearHeld == 0 || nearUnchangedStale*50 > nearHeld {
			t.Errorf("within half the view radius: %d of %d entities unchanged but reported stale, want under 2 %%", nearUnchangedStale, nearHeld)
		}
		for i, gc := range gcs {
			if st := gc.Stats(); st.Resyncs != 0 || st.Desyncs != 0 {
				t.Errorf("client %d: %d resyncs %v, %d desyncs", i+1, st.Resyncs, st.ResyncCauses, st.Desyncs)
			}
		}
		if differ == 0 || stale == differ {
			t.Errorf("%d stale entities, %d differing: the run exercised no staleness, or no unchanged stale one", stale, differ)
		}
	})
}

// nearby reports whether the arena records a and b (record.go's layout:
// x and y in bytes 0–3) are within half the view radius of each other.
func nearby(a, b []byte) bool {
	pos := func(r []byte) (int64, int64) {
		return int64(r[0]) | int64(r[2])<<8, int64(r[1]) | int64(r[3])<<8
	}
	ax, ay := pos(a)
	bx, by := pos(b)
	const r = arena.ViewRadius / 2
	return (ax-bx)*(ax-bx)+(ay-by)*(ay-by) <= r*r
}

// recordOf is entity id's record in s.
func recordOf(s stateCopy, id proto.NetworkID) ([]byte, bool) {
	k, ok := slices.BinarySearch(s.IDs, id)
	if !ok {
		return nil, false
	}
	return s.Records[k*arena.RecordSize : (k+1)*arena.RecordSize], true
}
