// Package udp owns tickwire's sockets: every datagram marked DSCP EF,
// batched reads and writes (recvmmsg/sendmmsg through x/net on Linux, one
// datagram per call elsewhere), pooled buffers and socket buffer sizes.
//
// It knows nothing of the protocol: it moves byte slices between the
// kernel and the layers above.
package udp
