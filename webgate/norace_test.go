//go:build !race

package webgate

const raceEnabled = false
