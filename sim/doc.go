// Package sim is the tick engine: the fixed-step loop (TickClock),
// per-player input buffers, input-age clock sync with time dilation,
// interpolation delay from jitter, prediction with unconditional rollback
// and re-simulation, predicted spawn ids, correction smoothing,
// lag-compensation history and checksums.
//
// A game is a World (its state and rules) in one of two forms. A Game
// plays in state sync: Server and Client are its two engines, which
// game.Host and game.Client run over the network. A CommitGame plays in
// commits mode: Lockstep holds its committed and live worlds over a
// tick-indexed command buffer, which commits.Host and commits.Client
// run. CanonicalWriter and CanonicalReader encode a world's canonical
// state; package sim/fixed has the integer helpers of deterministic game
// code.
//
// It performs no I/O and reads no clock: callers pass now in.
package sim
