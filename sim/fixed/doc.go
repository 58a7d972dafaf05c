// Package fixed holds the integer helpers a deterministic simulation
// needs (the determinism rules of sim.Game): a square root, the length
// of a vector and its limit to a speed, and a hash for pseudo-random
// choices. Each is a pure function of its arguments and gives the same
// bits on every machine, whatever its architecture or compiler, because
// it uses integer operations only. The demo games (examples/arena,
// examples/swarm) use them; so can any game.
//
// What Go guarantees and these helpers build on: integer overflow wraps
// around (two's complement, never a trap), division truncates toward
// zero (-7/2 is -3) while an arithmetic shift rounds down (-7>>1 is -4),
// and a conversion between integer types keeps the low bits. Each
// helper says how it rounds and for which inputs it cannot overflow.
//
// The results are part of every world that uses them: a game whose
// peers ran two versions of a helper that round differently would
// desynchronise, so the tests pin the values, not only their
// properties.
package fixed
