// Package sim is the tick engine: the fixed-step loop (TickClock),
// per-player input buffers, input-age clock sync with time dilation,
// interpolation delay from jitter, prediction with unconditional rollback
// and re-simulation, predicted spawn ids, correction smoothing,
// lag-compensation history and checksums. Server and Client are the two engines; the root package's
// game.Host and game.Client run them over the network. (Lockstep mode, with
// committed and live worlds over a tick-indexed command buffer, is not
// built yet; the wire format reserves its frames.)
//
// It performs no I/O and reads no clock: callers pass now in.
package sim
