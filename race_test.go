//go:build race

package tickwire

// raceEnabled: the race detector makes sync.Pool drop items at random,
// so kcp-go's pooled segments allocate more; their count is not asserted.
const raceEnabled = true
