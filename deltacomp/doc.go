// Package deltacomp encodes world state compactly: snapshots as sorted
// (NetworkID, fixed-size record) arrays, a ring of recent snapshots, XOR
// patches against the baseline each client acknowledged, run-length coding
// of those patches, and lz4 / zstd / s2 codecs for full snapshots.
//
// It decides how entities are encoded, not which ones a client sees.
package deltacomp
