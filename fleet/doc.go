// Package fleet is the directory of game servers beyond one machine: game
// servers announce themselves on NATS, lobbies watch the announcements
// and allocate each new game to the least-loaded healthy server that runs
// its type, and a server run by Agones reports to its SDK sidecar.
//
// A game server joins with Join and keeps a Member: every Interval it
// publishes its Status (game types, UDP addresses, capacity, players,
// seats reserved, games, tick p99) on "<prefix>.servers.<id>", and it
// answers reservation requests on "<prefix>.alloc.<id>.<lobby id>". A
// lobby keeps a Directory: it reads the announcements, and Allocate
// sends a Request to the best candidate, which reserves the seats before
// it answers with a Grant (its addresses and its connect-token key,
// sealed to the lobby, so that the lobby mints tokens only that server
// accepts); Release gives back the seats of a room that went away. A server whose heartbeats stop for
// StaleAfter, or that does not answer a request, is not chosen again
// until it announces itself anew.
//
// Each connection has Credentials: an nkey, whose public key is its
// fleet id, and a role (RoleServer, RoleLobby) whose NATS permissions
// (PermissionsFor) let a server announce and answer only as itself and
// a lobby ask only in its own name. A server seals its token key to the
// key of the lobby that asked, so no other reader of the bus learns it.
// Across machines run NATS with TLS.
//
// For one machine, package fleet/embedded runs a NATS server inside the
// process, with or without a TCP listener; Dial connects to an external
// one.
package fleet
