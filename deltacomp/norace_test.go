//go:build !race

package deltacomp

const raceEnabled = false
