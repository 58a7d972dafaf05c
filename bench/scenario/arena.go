package scenario

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
	"github.com/tickwire/tickwire/proto"
)

// ArenaConfig configures the arena generator. The zero value is the default.
type ArenaConfig struct {
	// Players moving between random waypoints. Default 16.
	Players int
	// NPCs standing idle, now and then turning. Default 200.
	NPCs int
	// Size is the arena's edge in metres. Default 200.
	Size float32
	// FireInterval is the mean ticks between a player's shots. Default 30.
	FireInterval int
	// ProjectileLife is how many ticks a projectile flies. Default 60.
	ProjectileLife int
	// Seed seeds the generator.
	Seed uint64
}

// Arena record quantisation.
const (
	ArenaStepsPerUnit = 64 // 1/64 m
	arenaPosBits      = 16 // ±512 m
	arenaVelBits      = 10
	arenaMaxVel       = 40 // m/s
	arenaYawBits      = 10
)

// ArenaSchema is the arena's record: position (x, y, z), velocity (x, y),
// yaw, health and a state byte, laid out by significance.
var ArenaSchema = mustSchema(
	deltacomp.Field{Name: "x", Bits: arenaPosBits},
	deltacomp.Field{Name: "y", Bits: arenaPosBits},
	deltacomp.Field{Name: "z", Bits: 12},
	deltacomp.Field{Name: "vx", Bits: arenaVelBits},
	deltacomp.Field{Name: "vy", Bits: arenaVelBits},
	deltacomp.Field{Name: "yaw", Bits: arenaYawBits},
	deltacomp.Field{Name: "health", Bits: 8},
	deltacomp.Field{Name: "state", Bits: 4},
)

// ArenaPredictor extrapolates an arena entity's position on the ground
// (codec 5, deltacomp.Predictor); height, velocity, yaw, health and state
// are predicted unchanged (extrapolating z, the velocity and the yaw as
// well made no difference in BenchmarkBandwidth).
var ArenaPredictor = mustPredictor(ArenaSchema, "x", "y")

// Arena is a shooter-like world: players run between waypoints and fire
// projectiles (spawned with ids in the firing player's spawner range, as
// predicted spawns are), projectiles fly and die, NPCs idle.
type Arena struct {
	cfg     ArenaConfig
	rng     *rand.Rand
	tick    uint32
	ents    []arenaEnt
	nextIdx []uint32 // per player slot
	order   []int
	rec     []byte
	spawned []arenaEnt
}

type arenaEnt struct {
	id        proto.NetworkID
	kind      uint8
	x, y, z   float64
	vx, vy    float64
	yaw       float64
	health    uint32
	state     uint32
	tx, ty    float64 // waypoint
	life      int
	turnTicks int
	turnRate  float64
	dead      bool
	owner     int
}

// NewArena returns the generator.
func NewArena(cfg ArenaConfig) *Arena {
	if cfg.Players <= 0 {
		cfg.Players = 16
	}
	if cfg.NPCs < 0 {
		cfg.NPCs = 0
	} else if cfg.NPCs == 0 {
		cfg.NPCs = 200
	}
	if cfg.Size <= 0 {
		cfg.Size = 200
	}
	if cfg.FireInterval <= 0 {
		cfg.FireInterval = 30
	}
	if cfg.ProjectileLife <= 0 {
		cfg.ProjectileLife = 60
	}
	a := &Arena{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0xA7E4A)), nextIdx: make([]uint32, cfg.Players+1), rec: make([]byte, ArenaSchema.Size())}
	half := float64(cfg.Size) / 2
	for p := 1; p <= cfg.Players; p++ {
		a.ents = append(a.ents, arenaEnt{id: proto.MakeNetworkID(0, uint32(p)), kind: KindPlayer,
			x: (a.rng.Float64()*2 - 1) * half, y: (a.rng.Float64()*2 - 1) * half, health: 100, owner: p})
	}
	for k := 0; k < cfg.NPCs; k++ {
		a.ents = append(a.ents, arenaEnt{id: proto.MakeNetworkID(0, uint32(10000+k)), kind: KindNPC,
			x: (a.rng.Float64()*2 - 1) * half, y: (a.rng.Float64()*2 - 1) * half, yaw: a.rng.Float64() * 2 * math.Pi, health: 50})
	}
	for i := range a.ents {
		a.newWaypoint(&a.ents[i])
	}
	return a
}

func (a *Arena) Name() string    { return "arena" }
func (a *Arena) RecordSize() int { return ArenaSchema.Size() }

func (a *Arena) newWaypoint(e *arenaEnt) {
	half := float64(a.cfg.Size) / 2
	e.tx, e.ty = (a.rng.Float64()*2-1)*half, (a.rng.Float64()*2-1)*half
}

// Next steps the arena and fills f. It never ends.
func (a *Arena) Next(f *Frame) bool {
	a.step()
	f.reset(a.tick, ArenaSchema.Size())
	a.order = a.order[:0]
	for i := range a.ents {
		a.order = append(a.order, i)
	}
	slices.SortFunc(a.order, func(i, j int) int {
		switch {
		case a.ents[i].id < a.ents[j].id:
			return -1
		case a.ents[i].id > a.ents[j].id:
			return 1
		}
		return 0
	})
	var v [8]uint32
	for _, i := range a.order {
		e := &a.ents[i]
		v[0] = deltacomp.Bias(deltacomp.QuantizeFixed(float32(e.x), ArenaStepsPerUnit), arenaPosBits)
		v[1] = deltacomp.Bias(deltacomp.QuantizeFixed(float32(e.y), ArenaStepsPerUnit), arenaPosBits)
		v[2] = uint32(max(0, deltacomp.QuantizeFixed(float32(e.z), ArenaStepsPerUnit)))
		v[3] = deltacomp.QuantizeRange(float32(e.vx), -arenaMaxVel, arenaMaxVel, arenaVelBits)
		v[4] = deltacomp.QuantizeRange(float32(e.vy), -arenaMaxVel, arenaMaxVel, arenaVelBits)
		yaw := math.Mod(e.yaw, 2*math.Pi)
		if yaw < 0 {
			yaw += 2 * math.Pi
		}
		v[5] = deltacomp.QuantizeRange(float32(yaw), 0, 2*math.Pi, arenaYawBits)
		v[6], v[7] = e.health, e.state
		ArenaSchema.Pack(a.rec, v[:])
		f.Snap.Append(e.id, a.rec)
		f.Pos = append(f.Pos, interest.Vec3{X: float32(e.x), Y: float32(e.y), Z: float32(e.z)})
		f.Kind = append(f.Kind, e.kind)
	}
	a.tick++
	return true
}

func (a *Arena) step() {
	const dt = 1.0 / 60
	live := a.ents[:0]
	spawned := a.spawned[:0]
	for i := range a.ents {
		e := a.ents[i]
		switch e.kind {
		case KindPlayer:
			dx, dy := e.tx-e.x, e.ty-e.y
			d := math.Hypot(dx, dy)
			if d < 1 {
				a.newWaypoint(&e)
			} else {
				e.vx, e.vy = dx/d*6, dy/d*6
				e.yaw = math.Atan2(dy, dx)
			}
			e.x += e.vx * dt
			e.y += e.vy * dt
			if a.rng.IntN(a.cfg.FireInterval) == 0 {
				a.nextIdx[e.owner]++
				spawned = append(spawned, arenaEnt{
					id: proto.MakeNetworkID(uint16(e.owner), a.nextIdx[e.owner]), kind: KindProjectile,
					x: e.x, y: e.y, z: 1.5, vx: math.Cos(e.yaw) * 30, vy: math.Sin(e.yaw) * 30, yaw: e.yaw,
					life: a.cfg.ProjectileLife, health: 1,
				})
			}
			if a.rng.IntN(600) == 0 && e.health > 10 {
				e.health -= 10
				e.state = (e.state + 1) & 15
			}
		case KindProjectile:
			e.x += e.vx * dt
			e.y += e.vy * dt
			e.life--
			e.dead = e.life <= 0
		case KindNPC:
			if e.turnTicks > 0 {
				e.yaw += e.turnRate * dt
				e.turnTicks--
			} else if a.rng.IntN(3000) == 0 {
				e.turnTicks = 30 + a.rng.IntN(60)
				e.turnRate = (a.rng.Float64() - 0.5) * 4
			}
		}
		if !e.dead {
			live = append(live, e)
		}
	}
	a.ents = append(live, spawned...)
	a.spawned = spawned
}
