package scenario

import (
	"math"
	"math/rand/v2"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// CubesConfig configures the cubes generator. The zero value is the
// default: the recording's setup (900 cubes on a 30×30 grid and a player
// cube pushing through them).
type CubesConfig struct {
	// Count is the number of cubes besides the player. Default 900.
	Count int
	// Spacing is the grid spacing in metres. Default 1.5.
	Spacing float32
	// PlayerSpeed in m/s. Default 6.
	PlayerSpeed float32
	// PushRadius: cubes closer than this to the player are pushed.
	// Default 2.
	PushRadius float32
	// Agitation is the chance per tick that each resting cube is kicked by
	// something else (explosions, other players): 0.001 keeps about one in
	// a thousand cubes moving. Default 0.
	Agitation float64
	// Seed seeds the generator.
	Seed uint64
}

// Cubes is a cube-pushing simulation with the recording's quantisation:
// a player cube moves along a Lissajous path through a grid of cubes,
// pushing and tumbling those it touches; cubes slide, bounce, spin down
// and come to rest (then their records stop changing).
type Cubes struct {
	cfg    CubesConfig
	rng    *rand.Rand
	tick   uint32
	bodies []cubeBody
	side   float32
	ids    []proto.NetworkID
	rec    []byte
}

type cubeBody struct {
	pos, vel, ang [3]float64
	rot           [4]float64 // x, y, z, w
	asleep        bool
	touching      bool
}

const (
	cubeHalf = 0.5
	cubeDT   = 1.0 / 60
)

// NewCubes returns the generator.
func NewCubes(cfg CubesConfig) *Cubes {
	if cfg.Count <= 0 {
		cfg.Count = 900
	}
	if cfg.Spacing <= 0 {
		cfg.Spacing = 1.5
	}
	if cfg.PlayerSpeed <= 0 {
		cfg.PlayerSpeed = 6
	}
	if cfg.PushRadius <= 0 {
		cfg.PushRadius = 2
	}
	g := &Cubes{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0xC0BE))}
	n := cfg.Count + 1
	g.bodies = make([]cubeBody, n)
	side := int(math.Ceil(math.Sqrt(float64(cfg.Count))))
	g.side = float32(side) * cfg.Spacing
	for i := 1; i < n; i++ {
		k := i - 1
		b := &g.bodies[i]
		b.pos = [3]float64{(float64(k%side) - float64(side)/2) * float64(cfg.Spacing), (float64(k/side) - float64(side)/2) * float64(cfg.Spacing), cubeHalf}
		yaw := g.rng.Float64() * 0.2
		b.rot = [4]float64{0, 0, math.Sin(yaw / 2), math.Cos(yaw / 2)}
		b.asleep = true
	}
	g.bodies[0].rot = [4]float64{0, 0, 0, 1}
	g.ids = make([]proto.NetworkID, n)
	for i := range g.ids {
		g.ids[i] = proto.NetworkID(i + 1)
	}
	g.rec = make([]byte, CubeRecordSize)
	return g
}

func (g *Cubes) Name() string    { return "cubes" }
func (g *Cubes) RecordSize() int { return CubeRecordSize }

// Next steps the simulation and fills f. It never ends.
func (g *Cubes) Next(f *Frame) bool {
	g.step()
	f.reset(g.tick, CubeRecordSize)
	for i := range g.bodies {
		b := &g.bodies[i]
		c := Cube{
			X:           deltacomp.QuantizeFixed(float32(b.pos[0]), CubeStepsPerUnit),
			Y:           deltacomp.QuantizeFixed(float32(b.pos[1]), CubeStepsPerUnit),
			Z:           deltacomp.QuantizeFixed(float32(b.pos[2]), CubeStepsPerUnit),
			Orientation: deltacomp.QuantizeQuat(deltacomp.Quat{X: float32(b.rot[0]), Y: float32(b.rot[1]), Z: float32(b.rot[2]), W: float32(b.rot[3])}, CubeQuatBits),
			Interacting: b.touching,
		}
		PackCube(g.rec, &c)
		f.Snap.Append(g.ids[i], g.rec)
		f.Pos = append(f.Pos, c.Pos())
		kind := uint8(KindCube)
		if i == 0 {
			kind = KindPlayer
		}
		f.Kind = append(f.Kind, kind)
	}
	g.tick++
	return true
}

func (g *Cubes) step() {
	t := float64(g.tick) * cubeDT
	half := float64(g.side) / 2 * 0.9
	p := &g.bodies[0]
	// Lissajous path, speed scaled to PlayerSpeed on average.
	w := float64(g.cfg.PlayerSpeed) / (half * 2)
	p.pos = [3]float64{half * math.Sin(w*t*1.3), half * math.Sin(w*t*0.7+1), cubeHalf}
	r2 := float64(g.cfg.PushRadius) * float64(g.cfg.PushRadius)
	for i := 1; i < len(g.bodies); i++ {
		b := &g.bodies[i]
		dx, dy := b.pos[0]-p.pos[0], b.pos[1]-p.pos[1]
		d2 := dx*dx + dy*dy
		b.touching = d2 < r2
		if b.touching {
			d := math.Sqrt(d2) + 1e-3
			push := 3 * (1 - d2/r2)
			b.vel[0] += dx / d * push
			b.vel[1] += dy / d * push
			b.vel[2] += push * 0.5
			for k := range b.ang {
				b.ang[k] += (g.rng.Float64() - 0.5) * push * 2
			}
			b.asleep = false
		} else if b.asleep && g.cfg.Agitation > 0 && g.rng.Float64() < g.cfg.Agitation {
			b.vel = [3]float64{(g.rng.Float64() - 0.5) * 4, (g.rng.Float64() - 0.5) * 4, 2 + g.rng.Float64()*3}
			b.ang = [3]float64{(g.rng.Float64() - 0.5) * 8, (g.rng.Float64() - 0.5) * 8, (g.rng.Float64() - 0.5) * 8}
			b.asleep = false
		}
		if !b.asleep {
			integrate(b)
		}
	}
}

func integrate(b *cubeBody) {
	b.vel[2] -= 9.81 * cubeDT
	for k := 0; k < 3; k++ {
		b.pos[k] += b.vel[k] * cubeDT
	}
	ground := b.pos[2] <= cubeHalf
	if ground {
		b.pos[2] = cubeHalf
		if b.vel[2] < 0 {
			b.vel[2] = -b.vel[2] * 0.3
		}
		b.vel[0] *= 0.92
		b.vel[1] *= 0.92
		for k := range b.ang {
			b.ang[k] *= 0.9
		}
	}
	// q += 0.5 * (ω, 0) ⊗ q * dt
	x, y, z, w := b.rot[0], b.rot[1], b.rot[2], b.rot[3]
	ax, ay, az := b.ang[0], b.ang[1], b.ang[2]
	h := 0.5 * cubeDT
	b.rot[0] += h * (ax*w + ay*z - az*y)
	b.rot[1] += h * (ay*w + az*x - ax*z)
	b.rot[2] += h * (az*w + ax*y - ay*x)
	b.rot[3] += h * (-ax*x - ay*y - az*z)
	n := math.Sqrt(b.rot[0]*b.rot[0] + b.rot[1]*b.rot[1] + b.rot[2]*b.rot[2] + b.rot[3]*b.rot[3])
	for k := range b.rot {
		b.rot[k] /= n
	}
	speed := math.Abs(b.vel[0]) + math.Abs(b.vel[1]) + math.Abs(b.vel[2]-0)
	spin := math.Abs(b.ang[0]) + math.Abs(b.ang[1]) + math.Abs(b.ang[2])
	if ground && speed < 0.1 && spin < 0.1 {
		b.vel, b.ang = [3]float64{}, [3]float64{}
		b.asleep = true
	}
}
