// Package tickwire is the public API of the tickwire engine: Server,
// Client, Config, connect tokens, and the game layer (GameHost on the
// server, GameClient on the client) that runs a Game — the interface game
// code implements (package sim).
//
// It is the API over the lower packages: proto for bytes, udp for
// sockets, internal/session for the mechanics of one connection (packet
// numbers, sealing and the replay window, acks, the reliable channel,
// keep-alives and timeouts, the stateless handshake), deltacomp and
// interest for replication, sim for the tick engine. The root holds what
// users call: Server and Client with their loops and sockets, Conn (one
// client's connection; Connection ≠ Player), connect tokens and keys,
// and the game layer with the join / leave / resync / desync flows.
//
// # Layers on a connection
//
// A protocol layer rides on a connection through one exported seam, the
// FrameHandler: it receives the frames the connection does not handle
// itself, adds its frames to the first packet of every tick, names the
// header ticks and hears which of its packets were delivered or lost.
// GameHost attaches one per connection with Conn.SetFrameHandler;
// GameClient is a ClientLayer that Dialer.Game attaches once the server
// accepted. Neither uses anything a third-party layer could not.
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
// smoothed corrections, and interpolation of what the server sent. A
// GameHandler hears, in tick order, what happens to the game: ready to
// play, players joined and left (with the reason), each action accepted
// or rejected (acceptance read from the input acks, which count the
// game frames the server sent, so no input costs a message), postmarked
// messages that came too late, resyncs, desyncs and the disconnect.
// A postmarked message runs as the player that sent it
// (Client.SendPlayerAt names one of a connection's players).
package tickwire
