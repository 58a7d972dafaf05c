// Package tickwire is the public API of the tickwire engine: Server,
// Client, Config, connect tokens, and the game layer (GameHost on the
// server, GameClient on the client) that runs a Game — the interface game
// code implements (package sim).
//
// It wires the lower packages together (proto for bytes, udp for sockets,
// reliability for acks and the reliable channel, deltacomp and interest for
// replication, sim for the tick engine) and owns the parts that need all of
// them: connect tokens, the stateless handshake, packet sealing and replay
// protection, connections versus players, keep-alives, timeouts and
// disconnect reasons, and the join / leave / resync / desync flows.
//
// # Connections
//
// A lobby mints a ConnectToken with the server's Key (MintToken); the
// client presents it (Dial). The server answers the connection request
// with a stateless challenge cookie bound to the client's address, never
// more bytes than it received, and creates the connection only when the
// client echoes the cookie and proves it holds the token's key. Every
// session packet is sealed with AES-256-GCM, the header as additional
// data, the 64-bit packet number as nonce; a replay window drops repeats.
// One connection (Conn) carries one to four player slots.
//
// Each side sends at most one packet per tick plus what its reliable
// queue needs: Reliable (exactly once, in order; kcp-go's ARQ core,
// repeated once on lossy links), Sequenced (never older after newer) and
// Unreliable messages, optionally postmarked with a tick. Server Handler
// callbacks and ClientHandler callbacks run on the owning loop goroutine.
//
// # Games
//
// A GameHost (the server's Handler) runs one sim engine per game id,
// created the first time a token names it. Every tick it steps each game,
// and for each connection writes its players' input acks (with the input
// age the client's clock steers by), a snapshot delta chosen by the
// interest scheduler within the packet budget, and every ChecksumInterval
// ticks a checksum of that delta's entities. Joins and resyncs get a
// compressed full snapshot on the reliable channel.
//
// A GameClient (Dialer.Game) rebuilds the state with a deltacomp.Replica,
// asks for a resync on a revision gap, a patch that does not apply or a
// checksum mismatch, and runs the client tick engine (sim.Client) on it:
// a clock just far enough ahead of the server, the players' inputs for
// every tick it passes (each packet repeats those not yet acknowledged),
// prediction by rollback and re-simulation from every new state,
// smoothed corrections, and interpolation of what the server sent.
package tickwire
