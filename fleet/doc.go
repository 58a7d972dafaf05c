// Package fleet is the directory of game servers beyond one machine: game
// servers announce themselves on NATS, lobbies watch the announcements
// and allocate each new game to the least-loaded healthy server that runs
// its type, and a server run by Agones reports to its SDK sidecar.
//
// A game server joins with Join and keeps a Member: every Interval it
// publishes its Status (game types, UDP addresses, capacity, players,
// seats reserved, games, tick p99) on "<prefix>.servers.<id>", and it
// answers reservation requests on "<prefix>.alloc.<id>". A lobby keeps a
// Directory: it reads the announcements, and Allocate sends a Request to
// the best candidate, which reserves the seats before it answers with a
// Grant (its addresses and its connect-token key, so that the lobby mints
// tokens only that server accepts). A server whose heartbeats stop for
// StaleAfter, or that does not answer a request, is not chosen again
// until it announces itself anew.
//
// The NATS connection is the trust boundary: whoever may publish on
// "<prefix>.alloc.*" receives the servers' token keys. Run NATS with
// authentication (package embedded takes a token) and, across machines,
// TLS.
//
// For one machine, package fleet/embedded runs a NATS server inside the
// process, with or without a TCP listener; Dial connects to an external
// one.
package fleet
