// Package sim is the tick engine: the fixed-step loop, per-player input
// buffers, input-age clock sync with time dilation, interpolation delay
// from jitter, prediction with unconditional rollback and re-simulation,
// predicted spawn ids, correction smoothing, lag-compensation history,
// checksums, and the committed/live command buffer of lockstep mode.
//
// It performs no I/O and reads no clock: callers pass now in.
package sim
