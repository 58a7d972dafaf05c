// Package arena is tickwire's demo game and the reference example of a
// tickwire game: a 2-D top-down arena where players move, aim and shoot
// (hitscan rays judged with lag compensation, and projectiles whose ids the
// shooter predicts), among a few hundred wandering NPCs.
//
// Everything is integer arithmetic over entities kept sorted by id, with
// pseudo-randomness hashed from entity id and tick, so every machine steps
// the same world to the same bits. Every field of every entity is in its
// networked record, so a client rebuilds the exact simulation state from a
// snapshot and predicts from it.
package arena
