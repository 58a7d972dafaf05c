package arena

import (
	"slices"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim/fixed"
)

// Units: positions in 1/256 m, velocities in 1/256 m per tick (60 Hz).
const (
	Unit       = 256           // units per metre
	Size       = 256 * Unit    // the arena is 256 m square: coordinates fit 16 bits
	maxCoord   = Size - 1      //
	PlayerR    = Unit / 2      // player radius 0.5 m
	NPCR       = Unit * 6 / 10 // NPC radius 0.6 m
	playerVMax = 25            // 6 m/s
	npcV       = 9             // ~2 m/s
	projV      = 85            // 20 m/s
	projTTL    = 90            // ticks (1.5 s, 30 m)
	projDamage = 20
	rayDamage  = 34
	RayRange   = 40 * Unit // hitscan range
	fireCool   = 15        // ticks between shots
	npcTurn    = 64        // an NPC picks a new heading every 64 ticks
	npcRespawn = 180       // ticks an NPC stays dead
	fullHP     = 100
)

// Kind is what an entity is.
type Kind uint8

const (
	KindPlayer     Kind = 1
	KindProjectile Kind = 2
	KindNPC        Kind = 3
)

// Entity ids: players are (server, slot), NPCs (server, npcBase+n),
// projectiles (owner slot, owner's spawn counter) so the shooter predicts
// the id of every projectile it fires.
const npcBase = 1 << 16

// PlayerID is the entity id of the player in slot.
func PlayerID(slot uint16) proto.NetworkID { return proto.MakeNetworkID(0, uint32(slot)) }

// Owner returns the player slot that owns the entity id: the player of an
// avatar, the shooter of a projectile, 0 for NPCs.
func Owner(id proto.NetworkID) uint16 {
	if id.Spawner() == 0 && id.Index() < npcBase {
		return uint16(id.Index())
	}
	return id.Spawner()
}

// KindOf is the kind of entity id names: the ids say it (a server id
// below npcBase is an avatar, above it an NPC; any other a projectile).
func KindOf(id proto.NetworkID) Kind {
	switch {
	case id.Spawner() != 0:
		return KindProjectile
	case id.Index() < npcBase:
		return KindPlayer
	}
	return KindNPC
}

// NPCID is the entity id of the n-th NPC.
func NPCID(n int) proto.NetworkID { return proto.MakeNetworkID(0, npcBase+uint32(n)) }

// Entity is one thing in the arena. Every field is networked (see
// record.go), so a client can rebuild exactly the server's simulation
// state from a snapshot and predict from it.
type Entity struct {
	ID    proto.NetworkID
	Kind  Kind
	X, Y  int32 // 0..maxCoord
	VX    int32 // -127..127
	VY    int32
	Aim   uint8 // heading, 256 steps per turn
	HP    uint8 // 0: dead (NPCs wait Timer ticks to respawn)
	Timer uint8 // player: fire cooldown; projectile: ticks to live; NPC: respawn countdown
	Owner uint16
	Spawn uint32 // player: its next projectile index (proto.IndexBits wide)
	Score uint8  // player: kills (wraps)
}

// Input is one player's input for one tick.
type Input struct {
	MoveX, MoveY int8   // stick, -127..127 each
	Aim          uint16 // 0 = +x, 16384 = +y
	Buttons      uint8
}

// Buttons.
const (
	FireRay        = 1 << 0 // hitscan, judged with lag compensation
	FireProjectile = 1 << 1 // spawns a (predicted) projectile
)

// InputSize is the encoded size of an Input.
const InputSize = 8

// AppendInput encodes in.
func AppendInput(b []byte, in Input) []byte {
	return append(b, byte(in.MoveX), byte(in.MoveY), byte(in.Aim), byte(in.Aim>>8), in.Buttons, 0, 0, 0)
}

// ParseInput decodes an input; short input decodes as idle.
func ParseInput(b []byte) Input {
	if len(b) < 5 {
		return Input{}
	}
	return Input{MoveX: int8(b[0]), MoveY: int8(b[1]), Aim: uint16(b[2]) | uint16(b[3])<<8, Buttons: b[4] & (FireRay | FireProjectile)}
}

// RayTester judges a hitscan shot. The tick engine implements it with its
// lag-compensation history so the shot is tested against the world the
// shooter saw; nil tests against the present.
type RayTester interface {
	Raycast(shooter uint16, ox, oy, dx, dy, reach int32) (proto.NetworkID, bool)
}

// World is the whole arena state. Entities are kept sorted by id.
type World struct {
	Tick     uint32
	Entities []Entity

	spawned []Entity // scratch: projectiles fired this tick
	targets targetGrid
	// bruteHits makes projectiles test every entity instead of the
	// grid's (tests compare the two).
	bruteHits bool
}

// targetGrid holds the entities a projectile can hit by cell of a
// uniform grid over the arena, rebuilt in each step that has projectiles
// once the avatars and NPCs have moved: a projectile tests the few
// entities of the cells under it instead of every entity.
type targetGrid struct {
	start []int32 // cell -> first position in idx; len cells+1
	idx   []int32 // entity indices by cell, ascending within a cell
	cell  []int32 // scratch: each entity's cell, -1 for projectiles
}

const (
	targetShift = 10 // 4 m cells: wider than any target's diameter
	targetSide  = maxCoord>>targetShift + 1
	maxTargetR  = max(NPCR, PlayerR) // a projectile's reach
)

func targetCell(v int32) int32 { return max(0, min(v>>targetShift, targetSide-1)) }

// build sorts the world's avatars and NPCs into cells (a counting sort).
func (g *targetGrid) build(es []Entity) {
	g.start = slices.Grow(g.start[:0], targetSide*targetSide+1)[:targetSide*targetSide+1]
	clear(g.start)
	g.cell = slices.Grow(g.cell[:0], len(es))[:len(es)]
	for i := range es {
		e := &es[i]
		if e.Kind == KindProjectile {
			g.cell[i] = -1
			continue
		}
		c := targetCell(e.Y)*targetSide + targetCell(e.X)
		g.cell[i] = c
		g.start[c+1]++
	}
	for c := 1; c < len(g.start); c++ {
		g.start[c] += g.start[c-1]
	}
	g.idx = slices.Grow(g.idx[:0], int(g.start[len(g.start)-1]))[:g.start[len(g.start)-1]]
	// Place in ascending index order; start[c] is the cursor, restored
	// after.
	for i, c := range g.cell {
		if c >= 0 {
			g.idx[g.start[c]] = int32(i)
			g.start[c]++
		}
	}
	for c := len(g.start) - 1; c > 0; c-- {
		g.start[c] = g.start[c-1]
	}
	g.start[0] = 0
}

// NewWorld returns an arena with npcs wandering NPCs.
func NewWorld(npcs int) *World {
	w := &World{}
	for n := range npcs {
		x, y := spawnPoint(uint64(NPCID(n)), 0)
		h := fixed.Mix(uint64(NPCID(n)), 1)
		w.Entities = append(w.Entities, Entity{ID: NPCID(n), Kind: KindNPC, X: x, Y: y, HP: fullHP, Aim: uint8(h)})
	}
	return w
}

// CopyFrom makes w an exact copy of o, reusing w's memory.
func (w *World) CopyFrom(o *World) {
	w.Tick = o.Tick
	w.Entities = append(w.Entities[:0], o.Entities...)
}

// find returns the index of id, or -1. The avatars come first, by
// slot: with the slots below its own all taken (as they are when
// players fill the arena in order), an avatar is at slot-1, which is
// tried before the search.
func (w *World) find(id proto.NetworkID) int {
	if id.Spawner() == 0 && id.Index()-1 < uint32(len(w.Entities)) && w.Entities[id.Index()-1].ID == id {
		return int(id.Index() - 1)
	}
	i, ok := slices.BinarySearchFunc(w.Entities, id, func(e Entity, id proto.NetworkID) int {
		switch {
		case e.ID < id:
			return -1
		case e.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// Entity returns the entity with id, or nil.
func (w *World) Entity(id proto.NetworkID) *Entity {
	if i := w.find(id); i >= 0 {
		return &w.Entities[i]
	}
	return nil
}

func (w *World) insert(e Entity) {
	i, _ := slices.BinarySearchFunc(w.Entities, e.ID, func(a Entity, id proto.NetworkID) int {
		switch {
		case a.ID < id:
			return -1
		case a.ID > id:
			return 1
		}
		return 0
	})
	w.Entities = slices.Insert(w.Entities, i, e)
}

// AddPlayer puts the player in slot into the arena (a no-op if present).
func (w *World) AddPlayer(slot uint16) {
	if w.find(PlayerID(slot)) >= 0 {
		return
	}
	x, y := spawnPoint(uint64(PlayerID(slot)), w.Tick)
	w.insert(Entity{ID: PlayerID(slot), Kind: KindPlayer, X: x, Y: y, HP: fullHP, Owner: slot, Spawn: 1})
}

// RemovePlayer takes the player and its projectiles out of the arena.
func (w *World) RemovePlayer(slot uint16) {
	w.Entities = slices.DeleteFunc(w.Entities, func(e Entity) bool {
		return e.ID == PlayerID(slot) || (e.Kind == KindProjectile && e.Owner == slot)
	})
}

func spawnPoint(seed uint64, tick uint32) (int32, int32) {
	h := fixed.Mix(seed, uint64(tick))
	m := uint64(Size - 4*Unit)
	return int32(2*Unit + h%m), int32(2*Unit + (h>>32)%m)
}

// Step advances the world by one tick. input(slot) returns the input of
// the player in slot for this tick. Entities are visited in id order, so
// the result depends only on the world and the inputs.
func (w *World) Step(input func(slot uint16) Input, rays RayTester) {
	w.Tick++
	w.spawned = w.spawned[:0]
	for i := range w.Entities {
		e := &w.Entities[i]
		switch e.Kind {
		case KindPlayer:
			w.stepPlayer(e, input(e.Owner), rays)
		case KindNPC:
			w.stepNPC(e)
		}
	}
	built := w.bruteHits // the grid is built at the first projectile
	for i := range w.Entities {
		if e := &w.Entities[i]; e.Kind == KindProjectile {
			if !built {
				w.targets.build(w.Entities)
				built = true
			}
			w.stepProjectile(e)
		}
	}
	// Remove spent projectiles, add new ones (still sorted: a player's
	// spawn counter only grows).
	w.Entities = slices.DeleteFunc(w.Entities, func(e Entity) bool { return e.Kind == KindProjectile && e.Timer == 0 })
	for _, p := range w.spawned {
		w.insert(p)
	}
}

func (w *World) stepPlayer(e *Entity, in Input, rays RayTester) {
	if e.HP == 0 { // respawn
		e.X, e.Y = spawnPoint(uint64(e.ID), w.Tick)
		e.VX, e.VY, e.HP = 0, 0, fullHP
		return
	}
	tx, ty := fixed.Limit(int32(in.MoveX)*playerVMax/127, int32(in.MoveY)*playerVMax/127, playerVMax)
	e.VX += (tx - e.VX) / 4
	e.VY += (ty - e.VY) / 4
	e.X = clamp(e.X+e.VX, PlayerR, maxCoord-PlayerR)
	e.Y = clamp(e.Y+e.VY, PlayerR, maxCoord-PlayerR)
	e.Aim = uint8(in.Aim >> 8)
	if e.Timer > 0 {
		e.Timer--
		return
	}
	dx, dy := dir(in.Aim)
	switch {
	case in.Buttons&FireRay != 0:
		e.Timer = fireCool
		var hit proto.NetworkID
		var ok bool
		if rays != nil {
			hit, ok = rays.Raycast(e.Owner, e.X, e.Y, dx, dy, RayRange)
		} else {
			hit, ok = w.Raycast(e.Owner, e.X, e.Y, dx, dy, RayRange)
		}
		if ok {
			w.damage(hit, rayDamage, e.Owner)
		}
	case in.Buttons&FireProjectile != 0:
		e.Timer = fireCool
		id := proto.MakeNetworkID(e.Owner, e.Spawn)
		e.Spawn = e.Spawn%proto.MaxIndex + 1
		w.spawned = append(w.spawned, Entity{
			ID: id, Kind: KindProjectile, Owner: e.Owner, Timer: projTTL, Aim: e.Aim,
			X: e.X + dx*PlayerR/trigOne, Y: e.Y + dy*PlayerR/trigOne,
			VX: dx * projV / trigOne, VY: dy * projV / trigOne,
		})
	}
}

func (w *World) stepNPC(e *Entity) {
	if e.HP == 0 {
		if e.Timer > 0 {
			e.Timer--
			return
		}
		e.X, e.Y = spawnPoint(uint64(e.ID), w.Tick)
		e.HP = fullHP
	}
	if (w.Tick+uint32(e.ID))%npcTurn == 0 {
		h := fixed.Mix(uint64(e.ID), uint64(w.Tick))
		e.Aim = uint8(h)
		if h>>8&3 == 0 { // a quarter of the time, stand still
			e.VX, e.VY = 0, 0
		} else {
			dx, dy := dir(uint16(e.Aim) << 8)
			e.VX, e.VY = dx*npcV/trigOne, dy*npcV/trigOne
		}
	}
	e.X += e.VX
	e.Y += e.VY
	if e.X < NPCR || e.X > maxCoord-NPCR {
		e.VX = -e.VX
		e.X = clamp(e.X, NPCR, maxCoord-NPCR)
	}
	if e.Y < NPCR || e.Y > maxCoord-NPCR {
		e.VY = -e.VY
		e.Y = clamp(e.Y, NPCR, maxCoord-NPCR)
	}
}

func (w *World) stepProjectile(e *Entity) {
	e.X += e.VX
	e.Y += e.VY
	e.Timer--
	if e.X < 0 || e.X > maxCoord || e.Y < 0 || e.Y > maxCoord {
		e.Timer = 0
		return
	}
	if w.bruteHits {
		for i := range w.Entities {
			if w.hits(e, i) {
				w.hit(&w.Entities[i], projDamage, e.Owner)
				e.Timer = 0
				return
			}
		}
		return
	}
	// The first entity in id order that the projectile touches, from
	// the cells its reach (the largest target radius) overlaps.
	first := int32(-1)
	g := &w.targets
	for cy := targetCell(e.Y - maxTargetR); cy <= targetCell(e.Y+maxTargetR); cy++ {
		for cx := targetCell(e.X - maxTargetR); cx <= targetCell(e.X+maxTargetR); cx++ {
			c := cy*targetSide + cx
			for _, i := range g.idx[g.start[c]:g.start[c+1]] {
				if first >= 0 && i >= first {
					break // ascending within the cell
				}
				if w.hits(e, int(i)) {
					first = i
				}
			}
		}
	}
	if first >= 0 {
		w.hit(&w.Entities[first], projDamage, e.Owner)
		e.Timer = 0
	}
}

// hits reports whether projectile e touches entity i, a live avatar or NPC
// other than the shooter's own avatar.
func (w *World) hits(e *Entity, i int) bool {
	t := &w.Entities[i]
	if t.HP == 0 || t.Kind == KindProjectile || (t.Kind == KindPlayer && t.Owner == e.Owner) {
		return false
	}
	return dist2(e.X-t.X, e.Y-t.Y) <= int64(radius(t.Kind))*int64(radius(t.Kind))
}

// damage applies a hit to the entity id (if it still exists).
func (w *World) damage(id proto.NetworkID, dmg uint8, by uint16) {
	if t := w.Entity(id); t != nil && t.HP > 0 {
		w.hit(t, dmg, by)
	}
}

func (w *World) hit(t *Entity, dmg uint8, by uint16) {
	if t.HP > dmg {
		t.HP -= dmg
		return
	}
	t.HP = 0
	if t.Kind == KindNPC {
		t.Timer = npcRespawn
		t.VX, t.VY = 0, 0
	}
	if p := w.Entity(PlayerID(by)); p != nil {
		p.Score++
	}
}

// Raycast tests a hitscan shot from (ox, oy) along the unit vector (dx, dy)
// (trigOne fixed point) against the live players (except the shooter) and
// NPCs of this world, and returns the nearest hit within reach.
func (w *World) Raycast(shooter uint16, ox, oy, dx, dy, reach int32) (proto.NetworkID, bool) {
	var best proto.NetworkID
	bestT := int64(reach) + 1
	for i := range w.Entities {
		t := &w.Entities[i]
		if t.HP == 0 || t.Kind == KindProjectile || (t.Kind == KindPlayer && t.Owner == shooter) {
			continue
		}
		if d, ok := RayCircle(ox, oy, dx, dy, t.X, t.Y, radius(t.Kind)); ok && d < bestT {
			best, bestT = t.ID, d
		}
	}
	return best, bestT <= int64(reach)
}

// RayCircle returns the distance along the ray (ox,oy)+s·(dx,dy)/trigOne to
// the nearest point of the circle (cx, cy, r), if the ray meets it ahead.
func RayCircle(ox, oy, dx, dy, cx, cy, r int32) (int64, bool) {
	px, py := int64(cx-ox), int64(cy-oy)
	along := (px*int64(dx) + py*int64(dy)) / trigOne // projection onto the ray
	if along < 0 {
		return 0, false
	}
	qx, qy := px-along*int64(dx)/trigOne, py-along*int64(dy)/trigOne
	miss2 := qx*qx + qy*qy
	r2 := int64(r) * int64(r)
	if miss2 > r2 {
		return 0, false
	}
	return along - int64(fixed.Isqrt(uint64(r2-miss2))), true
}

func radius(k Kind) int32 {
	if k == KindNPC {
		return NPCR
	}
	return PlayerR
}

func dist2(dx, dy int32) int64 { return int64(dx)*int64(dx) + int64(dy)*int64(dy) }

func clamp(v, lo, hi int32) int32 { return max(lo, min(v, hi)) }
