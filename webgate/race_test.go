//go:build race

package webgate

// raceEnabled: the race detector's instrumentation allocates, and it
// makes sync.Pool drop items at random: allocation counts are not
// asserted under it.
const raceEnabled = true
