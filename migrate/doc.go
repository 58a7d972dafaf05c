// Package migrate is the pure logic of host migration in peer-hosted
// games (docs/MIGRATION.md): the roster a host keeps its players informed
// of, the order of succession and the election every player computes
// alike from it, epochs (terms) that make an old host's traffic stale,
// the monitor that declares a silent host lost, and the warm standby that
// replays the host's recorded steps (sim.StepRecord) so it can take over
// at any tick.
//
// It does no I/O and reads no clock: every call that depends on time
// takes now. Package peerhost wires it to connections:
//
//	host:    roster ──► players          step records ──► standby
//	player:  packets from host ──► HostMonitor ──► lost? ──► Election
//	         ──► winner: dial its address with the successor token
//	standby: Standby.Load / Step (replay) ──► lost, elected ──► Promote
//	         ──► a game.Host over the promoted sim.Server, epoch + 1
package migrate
