// Package peerhost runs peer-hosted games that survive the loss of
// their host (docs/MIGRATION.md): a Player plays through its game
// client, can host the game on its own socket, and follows the host's
// roster; when the host goes silent, every player runs the same election
// (package migrate) and either dials the successor with a token the host
// handed out in advance, or, elected, promotes its warm standby to a
// game host of its own.
//
//	host:     game.Host ─► Hooks (this package): roster, successor
//	          credentials, StandbyFeed ─► the standby's connection,
//	          message streams held until the standby has them
//	player:   game.Client + roster, standby, stream ─► host lost ─►
//	          migrate election ─► dial the successor, or promote and
//	          host (game.Host.Adopt); alongside, rejoin the host, which
//	          is alive if the player's own path was cut (rejoin.go)
//
// A commits game (Config.Commits) migrates the same way: the host runs
// a commits.Relay, which holds no game code, so hosting is relaying;
// its warm standbys are players whose commits.Client keeps what a relay
// needs, and the relay tells the others of a commit only once every
// standby holds it. Elected, a standby's own relay adopts the game from
// its worlds (commits.Relay.Adopt), and every player resumes on it with
// its own worlds (commits.Client.Resume).
//
// It wires migrate's pure logic to the game and commits packages and
// the root's connections; neither mode imports it.
package peerhost
