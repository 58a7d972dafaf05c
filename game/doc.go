// Package game is tickwire's server-authoritative state-sync mode, built
// on the root's seams: a Host (the server's tickwire.Handler) runs one
// tick engine (package sim) per game id and replicates it; a Client (a
// tickwire.ClientLayer) rebuilds, predicts and shows it.
//
//	client inputs ─► Host: sim.Server steps ─► deltacomp ring ─►
//	per connection: interest.Scheduler ranks ─► deltacomp.Encoder writes
//	XOR+RLE patches within the packet budget ─► tickwire.Conn
//	─► Client: deltacomp.Replica ─► sim.Client (rollback, re-simulation,
//	interpolation) ─► Handler events
//
// Every tick the Host steps each game, and for each connection writes
// its players' input acks (with the input age the client's clock steers
// by), a snapshot delta chosen by the interest scheduler within the
// packet budget, and every ChecksumInterval ticks a checksum of that
// delta's entities. Joins and resyncs get a compressed full snapshot on
// the reliable channel, no faster than a cooldown allows.
//
// A Client asks for a resync on a revision gap, a patch that does not
// apply or a checksum mismatch, and runs the client tick engine on its
// replica: a clock just ahead of the server, the players' inputs for
// every tick it passes (each packet repeats those not yet acknowledged),
// prediction by rollback and re-simulation from every new state,
// smoothed corrections, and interpolation of what the server sent. A
// Handler hears, in tick order, what happens to the game.
//
// A layer above acts on a Host's games through Hooks, which the Host
// calls and never imports: host migration (package peerhost) feeds its
// warm standby and sends its roster there, and resumes an adopted game
// with Host.Adopt.
package game
