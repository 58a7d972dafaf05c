// Package webgate carries tickwire's sealed packets over the transports a
// browser has — WebTransport datagrams and WebSocket binary messages —
// and hands them to the server through the same seam as UDP.
//
// A browser cannot send UDP. It opens a WebTransport session (QUIC
// datagrams, unreliable and unordered like UDP) or, where that is
// missing, a WebSocket, and sends on it exactly the datagrams a native
// client sends on its socket: connection requests, challenge responses,
// AES-GCM-sealed session packets, one packet per datagram or message.
// The gateway authenticates nothing and understands nothing of them: the
// server's handshake and sessions do, with the same rules as for UDP.
//
// Where it sits:
//
//	browser ──WebTransport──┐
//	browser ──WebSocket─────┤  Link (synthetic address 100::/64)
//	                        ▼
//	  UDP socket ──► Conn (udp.BatchConn) ──► tickwire.Server
//
// Conn wraps the server's UDP socket: ReadBatch returns the socket's
// datagrams and the browsers' packets, each browser connection under a
// synthetic source address of its own in the discard-only prefix
// 100::/64 (RFC 6666), so a packet meant for a browser can never leave
// on the real network by mistake; WriteBatch sends datagrams for those
// addresses to their browser connection and the rest to the socket. The
// server sees one BatchConn and runs one packet path for every transport.
//
// A browser connection is a Link. The WebSocket handler
// (Conn.WebSocketHandler) and the WebTransport server (ServeWebTransport)
// open Links, read packets into them and write what the server sends
// them. Limits — connections in total and per client address, packet
// size, packets queued per link, an idle timeout before the first packet
// — bound what an unauthenticated browser can make the server hold.
package webgate
