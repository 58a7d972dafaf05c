// Package proto is tickwire's wire format: the packet prefix, the session
// header, the handshake packets, the frames carried inside session packets,
// and the varint helpers they share.
//
// It sits at the bottom of the pipeline:
//
//	udp (bytes off the socket)
//	  -> proto.ParsePrefix / ParseHeader / Parse*Frame
//	  -> reliability, deltacomp, interest, sim (meaning)
//	  -> proto.(*X).Append
//	  -> udp (bytes onto the socket)
//
// proto does no I/O, reads no clock, starts no goroutines and performs no
// cryptography beyond hashing server addresses (ServerAddrHash): sealing and
// opening payloads and deriving keys is internal/session's job; proto only
// says where the bytes go and which nonce and additional data they use. Every type follows the same pattern:
//
//	func (x *X) Len() int                      // exact encoded size
//	func (x *X) Append(b []byte) ([]byte, error) // appends len == Len() bytes
//	func ParseX(b []byte) (X, int, error)      // value, bytes consumed, error
//
// Parsers never panic and never allocate: truncated or malformed input gives
// a *ParseError that wraps ErrTruncated or ErrMalformed. Byte slices inside a
// parsed value alias the input buffer and are valid only as long as it is.
//
// All multi-byte integers are little-endian. docs/PROTOCOL.md holds the byte
// layout of every packet and frame; proto/wireshark/tickwire.lua dissects it,
// and TestDissectorAgrees proves the two agree.
package proto
