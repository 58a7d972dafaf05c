// Package session holds the mechanics of one tickwire connection, the part
// both ends share and no application sees: packet numbers and acks, AEAD
// sealing with a replay window, the reliable channel (kcp-go's ARQ core)
// with its loss-driven parity frames and copies, sequenced and unreliable
// message queues,
// keep-alives and timeouts, and the stateless handshake (connect-token
// sealing and opening, challenge cookies, the client's side of the
// exchange).
//
// It does no I/O and reads no clock. A Session is driven by the packets
// and the time it is handed:
//
//	datagram ──► proto.ParseHeader ──► Session.Open (replay window, AEAD)
//	         ──► Session.Receive(now, …) ──► Handler.Message / Handler.Frame
//	                                         (acks: Handler.Delivered / Lost)
//	tick     ──► Session.Tick(now, ticks, …) ──► Handler.AppendFrames
//	         ──► sealed datagrams through Output
//
// The one exception is off by default: when TICKWIRE_KEYLOG names a
// file, the keys of every session (Responder.Use on a server,
// Initiator.Accept on a client) and mesh link (NewMeshLink) are handed
// to internal/keylog once, when they are made, which appends them to
// that file with the time; nothing on the packet path touches it.
//
// The root package tickwire owns the sockets, the loop goroutines and the
// table of connections, and puts its public API (Server, Client, Conn) over
// this package.
package session
