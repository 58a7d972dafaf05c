// Package bench holds tickwire's end-to-end and comparative benchmarks
// (go test -bench), the scenario generators they share, and the reports
// they produce. See bench/README.md.
package bench
