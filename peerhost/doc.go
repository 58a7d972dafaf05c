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
// It wires migrate's pure logic to the game package and the root's
// connections; game never imports it.
package peerhost
