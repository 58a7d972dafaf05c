// Package udp owns tickwire's sockets: every datagram marked DSCP EF,
// batched reads and writes, pooled buffers and socket buffer sizes.
//
// It knows nothing of the protocol: it moves byte slices between the
// kernel and the layers above.
//
//	server / client loop
//	      │  ReadBatch / WriteBatch ([]Message, caller-owned buffers)
//	      ▼
//	  BatchConn ── *Conn: a real socket, DSCP-marked, recvmmsg/sendmmsg
//	            └─ FromPacketConn(pc): any net.PacketConn, one datagram a call
//	               (udptest's in-memory network, a netem-impaired conn)
//
// # Marking
//
// Listen marks every socket DSCP EF (46) unless Config.DSCP says
// otherwise (DSCPOff: unmarked). The byte written is TrafficClass(dscp,
// ecn) = dscp<<2 | ecn for the IPv4 TOS and the IPv6 traffic class alike;
// a dual-stack socket gets both, and Conn.Info reports which the kernel
// accepted.
//
// # Batching
//
// On Linux, WriteBatch sends through x/net's WriteBatch (sendmmsg), with
// each destination's net.UDPAddr owned by the Conn and rewritten in place.
// ReadBatch calls recvmmsg itself through syscall.RawConn with headers,
// iovecs and sockaddrs it owns, decoding sources straight into
// netip.AddrPort: x/net's ReadBatch allocates a net.UDPAddr and a net.IP
// per datagram (TestXNetReadBatchAllocates measures it). Neither path
// allocates (TestZeroAllocsPerDatagram). Elsewhere each call moves one
// datagram (conn_default.go).
//
// Datagrams larger than the buffer they are read into are dropped and
// counted (Stats().Read.Dropped), never delivered truncated.
//
// # Buffers
//
// BufferPool hands out fixed-size Buffers (BufferSize bytes, a whole
// Ethernet MTU) so receive and send loops reuse memory.
package udp
