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
// # Segmentation offload
//
// With Config.GSO, on Linux 4.18 and later, WriteBatch hands each run of
// datagrams to one address, all of one size but the last (which may be
// shorter), to the kernel as one message with a UDP_SEGMENT control
// message: the datagrams are its iovecs, and the stack is walked once
// for the run, which is cut apart below it. On loopback that is most of
// a small datagram's cost (BenchmarkSend). The receiver sees ordinary
// datagrams; a capture on the sending host or on loopback holds a run as
// one frame. A kernel that refuses a segmented message (EIO: a device
// without checksum offload) gets its datagrams one by one, and the
// socket writes without GSO from then on (SocketInfo.GSO).
// Stats().Write.Segmented counts the datagrams written in runs.
//
// # Buffers
//
// BufferPool hands out fixed-size Buffers (BufferSize bytes, a whole
// Ethernet MTU) so receive and send loops reuse memory.
package udp
