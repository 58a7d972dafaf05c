// Package tickwire is the transport of the tickwire engine: a UDP
// protocol for real-time games, its Server and Client, and the seam on
// which the game modes are built.
//
//	udp (sockets, batches) ─► internal/session (one connection: packet
//	numbers, sealing, acks, the reliable channel, keep-alives) ─►
//	tickwire (Server, Conn, Client, ClientGroup: handshakes, loops,
//	ticks, messages) ─► a FrameHandler (a mode: game, commits)
//
// # Connections
//
// A lobby mints a ConnectToken with the server's Key (MintToken); the
// client presents it (Dial). The server answers the connection request
// with a stateless challenge cookie bound to the client's address, never
// more bytes than it received, and creates the connection only when the
// client echoes the cookie and proves it holds the token's key. Every
// session packet is sealed with AES-256-GCM, the header as additional
// data, the 64-bit packet number as nonce; a replay window drops
// repeats. A connection moves to a new address only once that address
// answers a path challenge (ConnStats.AddressChanges). One connection
// (Conn) carries one to four player slots: Connection ≠ Player.
//
// Each side sends at most one packet per tick plus what its reliable
// queue needs: Reliable (exactly once, in order; kcp-go's ARQ core,
// repeated once on lossy links), Sequenced (never older after newer) and
// Unreliable messages, optionally postmarked with a tick. Server Handler
// callbacks and ClientHandler callbacks run on the owning loop
// goroutine. A Server runs its own goroutines (Serve) or the caller's
// loop (Drive, Receive, Step).
//
// # Layers on a connection
//
// A protocol layer rides on a connection through one exported seam, the
// FrameHandler: it receives the frames the connection does not handle
// itself, adds its frames to the first packet of every tick and names
// the header ticks; PacketFates, Pacer, Ticker and Ender are what it
// may also implement. A server's Handler attaches one per connection
// with Conn.SetFrameHandler; a ClientLayer (Dialer.Game) attaches one
// once the server accepted. The modes are packages built only on these
// seams, as quic-go's http3 is built on its connections:
//
//   - game: server-authoritative state sync (game.Host, game.Client):
//     snapshots as XOR+RLE deltas chosen by interest, inputs, prediction,
//     interpolation, events.
//   - commits: the committed/live lockstep mode (commits.Host,
//     commits.Client) with its mesh of unreliable shortcuts.
//   - peerhost: a player's process that hosts a game and survives the
//     loss of its host (host migration).
//
// The root imports none of the replication, simulation or migration
// packages (docs/ARCHITECTURE.md, kept true by a test).
package tickwire
