package arena

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tickwire/tickwire/deltacomp"
)

func randomInputs(r *rand.Rand) func(uint16) Input {
	return func(slot uint16) Input {
		return Input{MoveX: int8(r.IntN(255) - 127), MoveY: int8(r.IntN(255) - 127), Aim: uint16(r.Uint32()), Buttons: uint8(r.IntN(4))}
	}
}

// A world rebuilt from its own snapshot must step exactly like the
// original: that is what makes client prediction from snapshots work.
func TestSnapshotRebuildStepsIdentically(t *testing.T) {
	w := NewWorld(200)
	for s := uint16(1); s <= 8; s++ {
		w.AddPlayer(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var snap deltacomp.Snapshot
	for range 600 {
		snap.Reset(w.Tick, RecordSize)
		w.AppendSnapshot(&snap)
		var c World
		if err := c.SetSnapshot(&snap); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Entities, w.Entities) || c.Tick != w.Tick {
			t.Fatalf("tick %d: rebuilt world differs", w.Tick)
		}
		seed := r.Uint64()
		w.Step(randomInputs(rand.New(rand.NewPCG(seed, 0))), nil)
		c.Step(randomInputs(rand.New(rand.NewPCG(seed, 0))), nil)
		if !reflect.DeepEqual(c.Entities, w.Entities) {
			t.Fatalf("tick %d: rebuilt world stepped differently", w.Tick)
		}
	}
	var projectiles, deadNPCs int
	for _, e := range w.Entities {
		if e.Kind == KindProjectile {
			projectiles++
		}
		if e.Kind == KindNPC && e.HP == 0 {
			deadNPCs++
		}
		if e.X < 0 || e.X > maxCoord || e.Y < 0 || e.Y > maxCoord {
			t.Fatalf("entity %v out of bounds: %d,%d", e.ID, e.X, e.Y)
		}
	}
	if projectiles == 0 {
		t.Error("600 ticks of random firing left no projectile in flight")
	}
	for i := 1; i < len(w.Entities); i++ {
		if w.Entities[i-1].ID >= w.Entities[i].ID {
			t.Fatal("entities not sorted by id")
		}
	}
}

func TestRayCircle(t *testing.T) {
	// Along +x from the origin, circle at 10 m with radius 1 m: hit at 9 m.
	d, ok := RayCircle(0, 0, trigOne, 0, 10*Unit, 0, Unit)
	if !ok || d != 9*Unit {
		t.Fatalf("RayCircle = %d, %v", d, ok)
	}
	if _, ok := RayCircle(0, 0, trigOne, 0, -10*Unit, 0, Unit); ok {
		t.Error("hit behind the ray")
	}
	if _, ok := RayCircle(0, 0, trigOne, 0, 10*Unit, 2*Unit, Unit); ok {
		t.Error("hit a circle 2 m off the ray")
	}
}

func TestRayKillsAndScores(t *testing.T) {
	w := &World{}
	w.AddPlayer(1)
	w.AddPlayer(2)
	a, b := w.Entity(PlayerID(1)), w.Entity(PlayerID(2))
	a.X, a.Y, b.X, b.Y = 10*Unit, 10*Unit, 20*Unit, 10*Unit
	shots := 0
	for b := w.Entity(PlayerID(2)); b.HP > 0 && shots < 100; shots++ {
		w.Step(func(s uint16) Input {
			if s == 1 {
				return Input{Aim: 0, Buttons: FireRay}
			}
			return Input{}
		}, nil)
		b = w.Entity(PlayerID(2))
	}
	if got := w.Entity(PlayerID(1)).Score; got != 1 {
		t.Fatalf("score %d after %d ticks", got, shots)
	}
}

func TestInputRoundTrip(t *testing.T) {
	in := Input{MoveX: -5, MoveY: 127, Aim: 40000, Buttons: FireProjectile}
	b := AppendInput(nil, in)
	if len(b) != InputSize || ParseInput(b) != in {
		t.Fatalf("round trip %v -> %x -> %v", in, b, ParseInput(b))
	}
}

func TestRejectBadRecord(t *testing.T) {
	var s deltacomp.Snapshot
	s.Reset(1, RecordSize)
	s.Append(PlayerID(1), make([]byte, RecordSize)) // kind 0
	var w World
	if err := w.SetSnapshot(&s); err == nil {
		t.Fatal("record of kind 0 accepted")
	}
}

// TestProjectileGridHitsAsBruteForce: projectiles find their target
// through the grid of avatars and NPCs exactly as by testing every
// entity in id order — the same target when several overlap, so clients
// and servers stepping either way agree. A crowd fires for 20 s in a
// corner of the arena, where targets overlap and cells' edges are crossed.
func TestProjectileGridHitsAsBruteForce(t *testing.T) {
	grid, brute := NewWorld(300), NewWorld(300)
	brute.bruteHits = true
	for _, w := range []*World{grid, brute} {
		for p := uint16(1); p <= 200; p++ {
			w.AddPlayer(p)
			e := w.Entity(PlayerID(p))
			e.X, e.Y = int32(p%15)*2*Unit+Unit, int32(p/15)*2*Unit+Unit
		}
		for i := range w.Entities { // NPCs into the crowd too
			if e := &w.Entities[i]; e.Kind == KindNPC && i%3 == 0 {
				e.X, e.Y = int32(i%30)*Unit+Unit/3, int32(i%29)*Unit+Unit/5
			}
		}
	}
	input := func(tick uint32) func(uint16) Input {
		return func(s uint16) Input {
			h := uint32(s)*2654435761 ^ tick*40503
			return Input{MoveX: int8(h), MoveY: int8(h >> 8), Aim: uint16(h >> 3), Buttons: FireProjectile}
		}
	}
	hits := 0
	for tick := uint32(0); tick < 800; tick++ {
		grid.Step(input(tick), nil)
		brute.Step(input(tick), nil)
		if !slices.Equal(grid.Entities, brute.Entities) {
			t.Fatalf("tick %d: the grid's world differs from the brute force's", tick)
		}
	}
	for _, e := range grid.Entities {
		if e.Kind == KindPlayer {
			hits += int(e.Score)
		}
	}
	projectiles := 0
	for _, e := range grid.Entities {
		if e.Kind == KindProjectile {
			projectiles++
		}
	}
	if hits < 100 || projectiles == 0 {
		t.Fatalf("%d kills and %d projectiles in flight: the crowd did not fight, the test proves little", hits, projectiles)
	}
	t.Logf("%d kills, %d projectiles in flight at the end", hits, projectiles)
}

// TestKindOfAndFind: every entity's id names its kind (KindOf, which
// EntityKind answers with), and Entity finds every entity — avatars with
// their slots in order (tried at slot-1) and with gaps (searched) — and
// nothing that is not there.
func TestKindOfAndFind(t *testing.T) {
	w := NewWorld(20)
	for _, s := range []uint16{1, 2, 3, 5, 9, 10} { // 4 and 6..8 not taken
		w.AddPlayer(s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 60 {
		w.Step(randomInputs(r), nil)
	}
	g := &Game{W: w}
	kinds := map[Kind]int{}
	for i := range w.Entities {
		e := &w.Entities[i]
		kinds[e.Kind]++
		if got := KindOf(e.ID); got != e.Kind {
			t.Fatalf("KindOf(%v) = %d, the entity is a %d", e.ID, got, e.Kind)
		}
		if got := g.EntityKind(e.ID); got != uint8(e.Kind) {
			t.Fatalf("EntityKind(%v) = %d, want %d", e.ID, got, e.Kind)
		}
		if got := w.Entity(e.ID); got != e {
			t.Fatalf("Entity(%v) = %p, want entity %d at %p", e.ID, got, i, e)
		}
	}
	if kinds[KindPlayer] != 6 || kinds[KindNPC] != 20 || kinds[KindProjectile] == 0 {
		t.Fatalf("entities by kind %v: want 6 avatars, 20 NPCs and projectiles", kinds)
	}
	for _, s := range []uint16{0, 4, 6, 7, 8, 11, 1000} {
		if e := w.Entity(PlayerID(s)); e != nil {
			t.Errorf("slot %d has no avatar, Entity found %v", s, e.ID)
		}
	}
}

// TestRecordFields: a record's named fields are the entity's values,
// and any bytes of a record's size decode without a panic.
func TestRecordFields(t *testing.T) {
	g := NewGame(3)
	g.W.AddPlayer(5)
	e := g.W.Entity(PlayerID(5))
	e.X, e.Y, e.VX, e.VY, e.HP, e.Score = 4000, 513, -7, 9, 42, 3
	var r [RecordSize]byte
	encodeRecord(&r, e)
	got := map[string]int64{}
	for _, f := range g.AppendRecordFields(nil, r[:]) {
		got[f.Name] = f.Value
	}
	want := map[string]int64{"x": 4000, "y": 513, "vx": -7, "vy": 9, "aim": int64(e.Aim), "hp": 42, "timer": 0,
		"kind": int64(KindPlayer), "owner": 5, "spawn": int64(e.Spawn), "score": 3}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		if n := len(g.AppendRecordFields(nil, r[:])); n != len(want) {
			t.Fatalf("%d fields of a random record", n)
		}
	}
	if n := len(g.AppendRecordFields(nil, r[:5])); n != 0 {
		t.Fatalf("%d fields of a short record", n)
	}
}
