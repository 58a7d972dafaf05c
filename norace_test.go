//go:build !race

package tickwire

const raceEnabled = false
