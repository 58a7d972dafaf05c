package sim_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/netem"
)

// The arena over sim.Harness: clock sync, prediction and lag
// compensation of a real game on impaired paths.

// path parses a netem spec.
func path(t testing.TB, spec string) netem.Spec {
	t.Helper()
	p, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// meanAge is the mean of input ages, and how many of them were missing or
// late.
func meanAge(ages []time.Duration) (mean time.Duration, late int) {
	if len(ages) == 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, a := range ages {
		sum += a
		if a < 0 {
			late++
		}
	}
	return sum / time.Duration(len(ages)), late
}

func randomArenaInput(seed uint64, fire bool) sim.SampleFunc {
	return func(player uint16, tick uint32, dst []byte) []byte {
		r := rand.New(rand.NewPCG(seed, uint64(tick)<<16|uint64(player)))
		in := arena.Input{MoveX: int8(r.IntN(255) - 127), MoveY: int8(r.IntN(255) - 127), Aim: uint16(r.Uint32())}
		if fire {
			in.Buttons = uint8(r.IntN(4))
		}
		return arena.AppendInput(dst, in)
	}
}

// Clock sync and interpolation over a 25 ± 5 ms, 2 % loss link that
// steps to 75 ± 5 ms (150 ms round trip): the lead converges within 3 s
// of the start and of the step, fewer than 1 % of inputs are late after
// convergence, and interpolation runs out of snapshots in fewer than
// 0.1 % of frames.
func TestHarnessClockAndInterpolation(t *testing.T) {
	h := sim.NewHarness(t, arena.NewGame(50), 1, 2)
	h.Bots[2] = func(tick uint32) []byte { return randomArenaInput(9, false)(2, tick, nil) }
	c := h.Connect(1, path(t, "delay 25ms 5ms loss 2%"), 1, sim.ClientConfig{}, randomArenaInput(3, true))
	period := h.Server.Period()

	phase := func(name string, oneWay time.Duration) {
		t.Helper()
		start := h.Server.Tick()
		h.Run(3 * time.Second)
		// Converged: over the next second the inputs arrive on average
		// within a tick of the target age, and the lead is a round trip
		// plus the target age (within 1.5 ticks).
		mark := h.Server.Tick()
		h.Run(time.Second)
		st := c.Client.Stats()
		mean, _ := meanAge(h.Ages(mark, h.Server.Tick()))
		if d := mean - st.TargetAge; d < -period || d > period {
			t.Errorf("%s: mean input age %v 3 s after the change, target %v", name, mean, st.TargetAge)
		}
		// The lead over the newest server tick received is a round trip
		// plus the target age.
		wantLead := (2*oneWay + st.TargetAge).Seconds() / period.Seconds()
		if math.Abs(st.Lead-wantLead) > 1.5 {
			t.Errorf("%s: lead %.2f ticks, want %.2f", name, st.Lead, wantLead)
		}
		// Steady state: late inputs and interpolation stalls.
		before := c.Client.Stats()
		sBefore := h.Server.Stats()
		h.Run(20 * time.Second)
		after := c.Client.Stats()
		sAfter := h.Server.Stats()
		ages := h.Ages(mark, h.Server.Tick())
		_, late := meanAge(ages)
		n := len(ages)
		missing := sAfter.InputsMissing - sBefore.InputsMissing
		frames := after.InterpFrames - before.InterpFrames
		stalls := after.InterpStalls - before.InterpStalls
		t.Logf("%s: from tick %d: late %d/%d acks, server missing %d (bot included), stalls %d/%d frames, interp clamps %d, rewinds clamped %d, %+v",
			name, start, late, n, missing, stalls, frames, after.InterpClamps-before.InterpClamps, sAfter.RewindsClamped-sBefore.RewindsClamped, after)
		if float64(late) > 0.01*float64(n) {
			t.Errorf("%s: %d of %d inputs late after convergence", name, late, n)
		}
		if float64(stalls) > 0.001*float64(frames) {
			t.Errorf("%s: interpolation stalled in %d of %d frames", name, stalls, frames)
		}
		if name == "start, 25 ms" && after.InterpClamps != before.InterpClamps {
			t.Errorf("%s: interpolation clamped to MaxInterpLag %d times", name, after.InterpClamps-before.InterpClamps)
		}
		// A view at the edge of MaxRewind whose first packet was lost
		// arrives a frame later and may be clamped; that must stay rare.
		if cl := sAfter.RewindsClamped - sBefore.RewindsClamped; float64(cl) > 0.005*float64(n) {
			t.Errorf("%s: %d of %d rewinds clamped by the server", name, cl, n)
		}
	}
	phase("start, 25 ms", 25*time.Millisecond)
	c.SetPath(path(t, "delay 75ms 5ms loss 2%"))
	phase("after the step to 75 ms", 75*time.Millisecond)
}

func arenaOwn(slot uint16) func(proto.NetworkID) bool {
	return func(id proto.NetworkID) bool { return id == arena.PlayerID(slot) || id.Spawner() == slot }
}

// With nobody else touching it, the client's own avatar (and its
// projectiles) shows zero correction over 60 s of random inputs, firing
// included, on a 25 ± 5 ms, 2 % loss link.
func TestHarnessNoCorrectionOwnEntity(t *testing.T) {
	h := sim.NewHarness(t, arena.NewGame(0), 1)
	c := h.Connect(1, path(t, "delay 25ms 5ms loss 2%"), 11, sim.ClientConfig{Own: arenaOwn(1)}, randomArenaInput(13, true))
	h.Run(3 * time.Second)
	before, sBefore := c.Client.Stats(), h.Server.Stats()
	maxVisible := 0.0
	for range 60 * 1000 / 8 {
		h.Run(8 * time.Millisecond)
		maxVisible = max(maxVisible, c.Client.Stats().Visible)
	}
	after, sAfter := c.Client.Stats(), h.Server.Stats()
	t.Logf("%+v", after)
	if m := sAfter.InputsMissing - sBefore.InputsMissing; m != 0 {
		t.Fatalf("%d inputs missed their tick on the server: this seed cannot show zero corrections", m)
	}
	if n := after.Corrections - before.Corrections; n != 0 || maxVisible != 0 {
		t.Errorf("%d corrections (max %.1f units), visible offset up to %.1f", n, after.CorrectionMax, maxVisible)
	}
	if after.Rollbacks-before.Rollbacks < 3000 || after.Resimulated-before.Resimulated < 3*3000 {
		t.Errorf("rollbacks %d, resimulated %d: not rolling back every update", after.Rollbacks-before.Rollbacks, after.Resimulated-before.Resimulated)
	}
	// It did move and fire.
	var projectiles int
	for _, b := range c.Client.DisplayBodies() {
		if b.ID.Spawner() == 1 {
			projectiles++
		}
	}
	if projectiles == 0 {
		t.Error("no predicted projectile in flight")
	}
}

// judged wraps the arena to record, for every tick in which player 1's
// input fires a ray, whether the step took hit points from player 2: the
// shot's judgement on that machine.
type judged struct {
	*arena.Game
	judgements map[uint32][]bool // by tick, every judgement of that tick in order
}

func (j *judged) Clone() sim.Game {
	return &judged{Game: j.Game.Clone().(*arena.Game), judgements: map[uint32][]bool{}}
}

func (j *judged) CopyFrom(src sim.Game) { j.Game.CopyFrom(src.(*judged).Game) }

func (j *judged) Step(t *sim.Tick) {
	shooter := j.W.Entity(arena.PlayerID(1))
	fires := false
	if in := t.Input(1); in != nil && shooter != nil && shooter.Timer == 0 {
		fires = arena.ParseInput(in.Data).Buttons&arena.FireRay != 0
	}
	hp := func() uint8 {
		if e := j.W.Entity(arena.PlayerID(2)); e != nil {
			return e.HP
		}
		return 0
	}
	before := hp()
	j.Game.Step(t)
	if fires && before > 0 {
		j.judgements[t.Tick] = append(j.judgements[t.Tick], hp() < before)
	}
	// The target heals at once (on every machine alike), so that it never
	// dies and respawns elsewhere.
	if e := j.W.Entity(arena.PlayerID(2)); e != nil && e.HP > 0 {
		e.HP = 100
	}
}

// A shot at a moving target fired at 150 ms round trip: the client's
// prediction (judged in the view it rendered when it sampled the shot)
// and the server's lag-compensated judgement agree on every shot,
// including near misses aimed at the target's edge.
func TestHarnessShotAtMovingTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		path  string
		lossy bool
	}{{"steady", "delay 75ms 2ms", false}, {"jitter and loss", "delay 75ms 5ms loss 2%", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := &judged{Game: arena.NewGame(0), judgements: map[uint32][]bool{}}
			h := sim.NewHarness(t, g, 1, 2)
			w := g.W
			p1, p2 := w.Entity(arena.PlayerID(1)), w.Entity(arena.PlayerID(2))
			p1.X, p1.Y = 100*arena.Unit, 100*arena.Unit
			p2.X, p2.Y = 110*arena.Unit, 100*arena.Unit
			// The target strafes up and down at full speed.
			h.Bots[2] = func(tick uint32) []byte {
				in := arena.Input{MoveY: 127}
				if tick/40%2 == 1 {
					in.MoveY = -127
				}
				return arena.AppendInput(nil, in)
			}
			var c *sim.HarnessClient
			var offsets = []int32{0, arena.PlayerR - 4, -(arena.PlayerR - 4), arena.PlayerR + 4, -(arena.PlayerR + 4), arena.PlayerR / 2}
			shots := 0
			aim := func(player uint16, tick uint32, dst []byte) []byte {
				in := arena.Input{}
				if tick%20 == 0 && tick > 300 {
					// Aim at the target where this frame shows it, offset
					// sideways to make close calls both ways.
					for _, b := range c.Client.InterpolatedBodies() {
						if b.ID != arena.PlayerID(2) {
							continue
						}
						me := c.Client.Predicted().(*judged).W.Entity(arena.PlayerID(1))
						off := offsets[int(tick/20)%len(offsets)]
						dx, dy := float64(b.Pos.X-me.X), float64(b.Pos.Y+off-me.Y)
						a := math.Atan2(dy, dx)
						if a < 0 {
							a += 2 * math.Pi
						}
						in.Aim = uint16(a / (2 * math.Pi) * 65536)
						in.Buttons = arena.FireRay
						shots++
					}
				}
				return arena.AppendInput(dst, in)
			}
			c = h.Connect(1, path(t, tc.path), 21, sim.ClientConfig{Own: arenaOwn(1)}, aim)
			h.Run(30 * time.Second)
			client := c.Client.Predicted().(*judged).judgements
			var hits, misses, differ, compared int
			for tick, js := range g.judgements {
				if len(js) != 1 {
					t.Fatalf("server judged tick %d %d times", tick, len(js))
				}
				cj, ok := client[tick]
				if !ok {
					continue
				}
				for _, j := range cj {
					if j != cj[0] {
						t.Errorf("tick %d: the client's re-simulations judged the shot differently: %v", tick, cj)
						break
					}
				}
				compared++
				if cj[0] != js[0] {
					differ++
					t.Logf("tick %d: client judged %v, server %v", tick, cj[0], js[0])
				}
				if js[0] {
					hits++
				} else {
					misses++
				}
			}
			st := h.Server.Stats()
			t.Logf("%d shots, %d compared: %d hits, %d misses, %d differ; server rewinds clamped %d; client %+v",
				shots, compared, hits, misses, differ, st.RewindsClamped, c.Client.Stats())
			if compared < 50 || hits < 10 || misses < 10 {
				t.Fatalf("too few shots to judge: %d compared, %d hits, %d misses", compared, hits, misses)
			}
			if !tc.lossy && differ != 0 {
				t.Errorf("%d of %d shots judged differently", differ, compared)
			}
			if tc.lossy && float64(differ) > 0.03*float64(compared) {
				t.Errorf("%d of %d shots judged differently", differ, compared)
			}
		})
	}
}
