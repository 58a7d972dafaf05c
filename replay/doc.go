// Package replay records a game as it is played and reads the recording
// back: the file format (docs/DEBUGGING.md, "The replay file"), the
// Writer that puts a recording on disk off the tick's hot path, one
// recorder per seat in a game (ServerRecorder for a state-sync server,
// ClientRecorder for a state-sync client, CommitRecorder for either end
// of commits mode), the Reader, and what tickwire-replay does with two
// recordings: re-running one with the game's code (Check), finding the
// first tick where two disagree and naming what differs (Bisect), and
// drawing their timeline (Timeline).
//
// Where it sits:
//
//	game.Host ──► ServerRecorder ─┐
//	game.Client ─► ClientRecorder ─┼─► Writer ─► chunk channel ─► writer goroutine ─► zstd blocks ─► file
//	commits ─────► CommitRecorder ─┘   (the tick appends to a preallocated chunk)
//
//	file ─► Reader ─► Check, Bisect, Timeline (cmd/tickwire-replay)
//
// A recorder is called by the goroutine that steps its game, with what
// the engine already computed (sim.StepRecord, the snapshot, the
// committed world's canonical bytes): it only copies bytes into the
// Writer's chunk, allocates nothing per tick in steady state, and reads
// no clock. The Writer's goroutine compresses and writes. The package
// imports the engine (sim) and the formats it records (deltacomp,
// proto), never a connection.
package replay
