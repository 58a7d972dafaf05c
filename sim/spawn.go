package sim

import (
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// SpawnIDs allocates NetworkIDs so that a client predicting a spawn and
// the server confirming it pick the same id without talking to each
// other.
//
// A player's ids carry its slot in the upper proto.SpawnerBits bits
// (proto.MakeNetworkID); the index below is derived from the tick and the
// spawn's position among that player's spawns in that tick:
//
//	index = 1 + (tick×SpawnsPerTick + k) mod proto.MaxIndex
//
// so the allocator state both sides must agree on is just "how many
// spawns has this player made in this tick so far", which a deterministic
// Step reproduces exactly. Nothing has to be networked, a resync cannot
// desynchronise it, and mispredicting one spawn does not shift the ids of
// later ones.
//
// Wrap-around: with the default 4 spawns per tick an index comes back
// after 2^20/4 ticks (72 minutes at 60 Hz). If the id is still in use by
// a long-lived entity of the same spawner (or of a previous player in the
// same slot), the allocator skips to the next k: it checks the sorted ids
// of the latest snapshot it was given (the server's previous tick; the
// client's authoritative state). Both sides see the same set unless
// interest management hid that old entity from the client, in which case
// the client's predicted spawn is cancelled and the confirmed entity
// arrives with the server's id (a visible but correct outcome).
//
// Spawner 0 (the server) is not predicted: it uses a plain counter that
// also skips live ids. Clients cannot predict spawner-0 spawns.
type SpawnIDs struct {
	perTick uint32
	tick    uint32
	counts  []spawnCount
	live    []proto.NetworkID
	server  uint32

	// Collisions counts ids skipped because they were still in use.
	Collisions uint64
	// Exhausted counts spawns refused because the spawner used all its
	// ids for the tick.
	Exhausted uint64
}

type spawnCount struct {
	spawner uint16
	k       uint32
}

// NewSpawnIDs returns an allocator for perTick spawns per player per
// tick (0: 4).
func NewSpawnIDs(perTick int) *SpawnIDs {
	if perTick <= 0 {
		perTick = 4
	}
	return &SpawnIDs{perTick: uint32(perTick), counts: make([]spawnCount, 0, 8)}
}

// SetLive sets the ids currently in use (ascending; the slice is kept,
// not copied, until the next SetLive).
func (a *SpawnIDs) SetLive(ids []proto.NetworkID) { a.live = ids }

// Begin starts a new tick (forgets per-tick counts).
func (a *SpawnIDs) Begin(tick uint32) {
	a.tick = tick
	a.counts = a.counts[:0]
}

func (a *SpawnIDs) inUse(id proto.NetworkID) bool {
	_, found := slices.BinarySearch(a.live, id)
	return found
}

// Next returns the id for spawner's next spawn in the current tick.
func (a *SpawnIDs) Next(spawner uint16) (proto.NetworkID, bool) {
	if spawner > proto.MaxSpawner {
		return 0, false
	}
	if spawner == 0 {
		for range 1 << 10 {
			a.server = a.server%proto.MaxIndex + 1
			id := proto.MakeNetworkID(0, a.server)
			if !a.inUse(id) {
				return id, true
			}
			a.Collisions++
		}
		a.Exhausted++
		return 0, false
	}
	c := a.count(spawner)
	for c.k < a.perTick {
		k := c.k
		c.k++
		idx := 1 + uint32((uint64(a.tick)*uint64(a.perTick)+uint64(k))%proto.MaxIndex)
		id := proto.MakeNetworkID(spawner, idx)
		if !a.inUse(id) {
			return id, true
		}
		a.Collisions++
	}
	a.Exhausted++
	return 0, false
}

func (a *SpawnIDs) count(spawner uint16) *spawnCount {
	for i := range a.counts {
		if a.counts[i].spawner == spawner {
			return &a.counts[i]
		}
	}
	a.counts = append(a.counts, spawnCount{spawner: spawner})
	return &a.counts[len(a.counts)-1]
}

// spawnContext connects Tick.Spawn to the allocator.
type spawnContext struct {
	ids *SpawnIDs
}

func (s *spawnContext) spawn(tick uint32, spawner uint16, fx *effectLog, predicted bool) (proto.NetworkID, bool) {
	if predicted && spawner == 0 {
		return 0, false
	}
	if s.ids.tick != tick {
		s.ids.Begin(tick)
	}
	id, ok := s.ids.Next(spawner)
	if ok && fx != nil {
		fx.emit(Effect{Tick: tick, Kind: EffectSpawn, Entity: id, Player: spawner}, predicted)
	}
	return id, ok
}
