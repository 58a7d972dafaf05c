// Package race says whether the binary was built with the race detector
// (go test -race), for the tests that assert allocation counts: the
// detector's instrumentation allocates, and it makes sync.Pool drop items
// at random, so pooled buffers (kcp-go's segments, zstd's) allocate more.
// Those tests skip or relax their counts when Enabled.
package race
