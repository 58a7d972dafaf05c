package proto

// NetworkID names a replicated entity on every peer. The upper SpawnerBits
// bits hold the player slot that spawned it (0 for the server) and the rest
// a per-spawner index, so a client can predict the id of an entity it
// spawns and match it to the server's confirmed entity.
// Zero is never a valid entity id.
type NetworkID uint32

const (
	SpawnerBits = 12
	IndexBits   = 32 - SpawnerBits
	// MaxSpawner is the largest player slot that can own spawned ids.
	MaxSpawner = 1<<SpawnerBits - 1
	// MaxIndex is the largest per-spawner index; allocators wrap to 1.
	MaxIndex = 1<<IndexBits - 1
)

// MakeNetworkID combines a spawner slot and an index (both masked).
func MakeNetworkID(spawner uint16, index uint32) NetworkID {
	return NetworkID(uint32(spawner)&MaxSpawner<<IndexBits | index&MaxIndex)
}

// Spawner is the slot of the player that spawned the entity (0: server).
func (id NetworkID) Spawner() uint16 { return uint16(id >> IndexBits) }

// Index is the per-spawner index.
func (id NetworkID) Index() uint32 { return uint32(id) & MaxIndex }
