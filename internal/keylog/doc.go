// Package keylog writes the keys that seal a process's tickwire packets
// to a file, so that a capture of its traffic can be read: the Wireshark
// dissector (proto/wireshark/tickwire.lua) takes the file as its "Key log
// file" preference and decrypts every sealed packet whose key it finds.
// It is tickwire's SSLKEYLOGFILE.
//
// It is off unless the environment variable TICKWIRE_KEYLOG names a file
// (FromEnv). Then every session's two keys (client to server, server to
// client) and every mesh link's keys are appended to that file, one line
// per key, once when the keys are made: nothing is written per packet.
// The line format, version 1, is in docs/PROTOCOL.md ("Key log"):
//
//	tickwire1 c2s 3735928559 2026-05-01T10:00:00.123Z 5f1c…(64 hex digits)
//
// Whoever reads the file can decrypt the traffic of every session it
// names, so a process that opens one logs a warning, the file is created
// with mode 0600, and an existing one that others may read is refused.
// Use it on test and development machines.
//
// internal/session calls it where keys are made (Responder.Use,
// Initiator.Accept, NewMeshLink); it imports nothing of the module. It
// is the one piece of I/O and clock reading under the session layer,
// and only when the environment asks for it.
package keylog
