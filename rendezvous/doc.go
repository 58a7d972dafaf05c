// Package rendezvous gets two players behind NATs talking UDP directly
// (docs/NAT.md): a reflector tells each player the public mapping of
// its game socket and reports it to the lobby, which hands each pair
// the other's candidates; the host then punches toward its players
// while they dial it.
//
//	player socket ── Request{ticket, role, local addrs} ──► Reflector
//	             ◄── Reply{mapping}                         │ Note (the lobby)
//	lobby: the assignment names the host's candidates in each player's
//	       token (local first when both share a public address, then the
//	       public mapping) and each player's candidates for the host
//	host:  Punch toward every player's candidates (PunchSchedule)
//	player: the handshake to each candidate in turn on the same socket
//	       (tickwire.Dialer.Conn), then the relay's address (package relay)
//
// A request carries a ticket the lobby issued to the seat (an
// unguessable bearer secret) and gets an answer only if the lobby knows
// it; the mapping is the address the request came from, never a field
// of it. Replies are smaller than requests (no amplification) and echo
// the request's random transaction id, which an off-path sender cannot
// guess. Local addresses are the player's own claim: the lobby hands
// them only to a peer behind the same public address, where a wrong one
// costs a handshake attempt. A punch carries nothing; a path counts
// only once the handshake's challenge round trip went over it.
//
// Packets start with 'R' 'v' (tickwire's with 't' 'w', the relay's
// control packets with 'R' 'w'); docs/PROTOCOL.md holds the layout.
package rendezvous
