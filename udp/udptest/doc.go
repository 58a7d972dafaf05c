// Package udptest is an in-memory network of UDP-like net.PacketConns for
// tests: per-link one-way latency and MTU, bounded receive queues,
// deadlines and net.ErrClosed, all driven by Go timers so that inside a
// testing/synctest bubble it runs in virtual time and deterministically.
//
//	n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 20 * time.Millisecond}})
//	a, _ := n.Listen("10.0.0.1:0")
//	b, _ := n.Listen("10.0.0.2:7777")
//	a.WriteTo(pkt, b.LocalAddr())    // arrives at b 20 ms later
//
// Semantics, chosen to match a real UDP socket where it matters:
//   - A datagram larger than the link MTU (counting 28 bytes of IPv4+UDP
//     header, 48 for IPv6) is not sent: WriteTo returns an error wrapping
//     ErrTooLarge, like EMSGSIZE from a socket with PMTU discovery on.
//   - A datagram to an address nobody listens on is dropped silently, as
//     is one that arrives at a full receive queue (Config.QueueLen);
//     Network.Stats counts both.
//   - Reading into a buffer shorter than the datagram truncates it, like
//     recvfrom.
//   - After Close, reads and writes fail with an error for which
//     errors.Is(err, net.ErrClosed) holds; past a deadline with one for
//     which errors.Is(err, os.ErrDeadlineExceeded) holds.
//   - Datagrams on one link arrive in the order sent; datagrams due at the
//     same instant are delivered in send order.
//
// A Network and its conns must be created inside the synctest bubble
// that uses them.
package udptest
