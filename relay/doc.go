// Package relay forwards tickwire datagrams between two players whom no
// direct path joins (both behind symmetric NATs, say), as TURN does, in
// a format of its own. It reads none of them: tickwire packets are
// sealed with session keys the relay never holds. It sees addresses,
// sizes and timing.
//
//	joiner (side 0)                 relay                     host (side 1)
//	     │ bind request ──► control address
//	     │ ◄── bind reply: port P0
//	     │ bind request ──► P0 (binds the joiner's address)
//	     │                                    P1 ◄── bind request
//	     │ tickwire ──► P0 ───────────────► P1 ──► tickwire
//	     │ tickwire ◄── P0 ◄─────────────── P1 ◄── tickwire
//
// # Grants
//
// An allocation is authorized by grants that whoever holds the relay's
// Key (the lobby) mints: MintPair makes the two of a new allocation, one
// per side. A grant (GrantSize bytes, HMAC-SHA-256 under a key derived
// from Key) names the allocation, the side its holder may bind, its
// expiry and the allocation's byte budget; its holder can read it
// (ReadGrant) but neither alter nor forge it.
//
// # Binding
//
// A side sends a bind request (AppendBindRequest: the grant behind a
// four-byte prefix) from its game socket to the relay's control address,
// which opens the allocation if it is new (one UDP port per side) and
// answers with the side's relayed port. The side sends the same request
// to that port: the relay binds the address it comes from, which also
// opens the side's NAT toward exactly that port. Repeated every
// KeepAliveInterval, it keeps both alive. Once both sides are bound,
// each datagram arriving on one side's port from its bound address is
// sent from the other side's port to the other side's bound address: a
// host sees a relayed player as an ordinary client at the relay's
// address. Bind does all of this for a plain socket.
//
// The rules:
//   - A grant binds only until it expires, only its own side (sent to
//     the other side's port it is dropped), and one address at a time:
//     a request from a second address takes the side over only when the
//     bound address has been silent for Config.RebindQuiet (a NAT that
//     remapped the player), else it is refused with StatusInUse. The
//     bound address's keep-alives go on being answered after the expiry.
//   - A datagram on a relayed port from any other address than the
//     side's bound one is dropped and counted (DropUnbound), never
//     forwarded; so is one from the bound address that does not start
//     with tickwire's magic bytes or is larger than MaxDatagram.
//   - An allocation forwards at most Config.Rate bytes a second (a token
//     bucket) and its grant's budget in all; an allocation that forwarded
//     nothing and heard no bind for Config.IdleTimeout is closed. Its
//     grants may open it again while they bind, with what is left of its
//     budget.
//   - The relay holds at most Config.MaxAllocations allocations.
//
// # Attack surface
//
// A datagram without a valid grant gets no answer: it is counted as
// dropped, and checking it allocates nothing. An authenticated bind
// request gets a reply of BindReplySize bytes, smaller than the request:
// the relay never answers an address with more than it sent
// (reflection at most 1×). Forwarded datagrams go only to an address
// that bound with a valid grant, within the allocation's rate and
// budget.
//
// # Control packets
//
// Control packets start with the bytes 'R' 'w', tickwire packets with
// 't' 'w': IsControl tells them apart on a socket that carries both.
// docs/PROTOCOL.md, "Relay control packets", holds the layout.
package relay
