//go:build race

package deltacomp

// raceEnabled: the race detector makes sync.Pool drop items, so pooled
// library buffers (zstd) allocate; allocation counts are not asserted.
const raceEnabled = true
