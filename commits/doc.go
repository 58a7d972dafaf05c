// Package commits is tickwire's commits mode (docs/COMMITS.md), built on
// the root's seams: clients send commands instead of receiving state.
// Every client runs the game itself, with a committed world that moves
// only when the server commits a tick and a live world that runs ahead
// on the commands known so far and rolls back when late ones arrive.
//
//	Client.Issue ─► command frame ─► Host orders it at a tick (the lead
//	ahead of the slowest path) ─► every client ─► sim.Lockstep: live world
//	now, committed world once every counted client reached the tick
//	(commit items) ─► Host commits ─► checksums compared
//
// The Host counts the clients' commit items, commits, kicks a client
// that falls more than the buffer behind (and sends it a fresh
// committed state), and compares the committed checksums. Clients that
// take part in the mesh also send each command straight to the others
// over sealed UDP links the Host introduces (unreliable shortcuts, DSCP
// EF); the committed world runs only the server's copy.
package commits
