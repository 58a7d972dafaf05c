// Package tickwire is the public API of the tickwire engine: Server,
// Client, Config and the Game interface that game code implements.
//
// It wires the lower packages together (proto for bytes, udp for sockets,
// reliability for acks and the reliable channel, deltacomp and interest for
// replication, sim for the tick engine) and owns the parts that need all of
// them: connect tokens, the stateless handshake, packet sealing and replay
// protection, connections versus players, and the join / leave / resync /
// heartbeat / host-migration flows.
package tickwire
