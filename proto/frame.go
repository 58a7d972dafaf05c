package proto

// FrameType is the first byte of every frame.
type FrameType uint8

const (
	FrameAckOnly       FrameType = 0x01 // marks an ack-only packet, carries ack delay
	FrameReliable      FrameType = 0x02 // KCP segments of the reliable channel
	FrameMessage       FrameType = 0x03 // an unreliable (optionally sequenced) message
	FrameInput         FrameType = 0x04 // a player's newest inputs, redundantly
	FrameInputAck      FrameType = 0x05 // newest input received + input age
	FrameSnapshotDelta FrameType = 0x06 // per-entity XOR/RLE patches
	FrameFullSnapshot  FrameType = 0x07 // whole compressed state (join, resync response)
	FrameResyncRequest FrameType = 0x08 // client asks for a full snapshot
	FrameChecksum      FrameType = 0x09 // state checksum at a tick
	FrameControl       FrameType = 0x0a // lifecycle events (join, leave, reject, ...)
	FramePathChallenge FrameType = 0x0b // server asks the peer to echo 8 bytes from a new address
	FramePathResponse  FrameType = 0x0c // the echo of a path challenge
	FrameRoster        FrameType = 0x0d // a peer host's players and who can host (migration)
	FrameStandbyAck    FrameType = 0x0e // the warm standby holds the host's steps up to a tick
	FrameStandbyStep   FrameType = 0x0f // the host's record of one tick, to its warm standby
	FrameStandbyState  FrameType = 0x10 // the host's engine state and snapshots, to its warm standby
	FrameSuccessor     FrameType = 0x11 // credentials for the successor's server (key or token)
	FramePeerMessage   FrameType = 0x12 // a peer-hosted game's exactly-once message (host migration)
	FramePeerAck       FrameType = 0x13 // acknowledges a player's peer message stream
	FrameEffect        FrameType = 0x14 // a presentation event of the server's game (tick, kind, player, entity, data)
	FrameCommand       FrameType = 0x15 // commits mode: a command (or a join, a leave) for a tick
	FrameCommitItem    FrameType = 0x16 // commits mode: how far a client's live state got
	FrameCommitSums    FrameType = 0x17 // commits mode: a client's committed-state checksums
	FrameMeshIntro     FrameType = 0x18 // commits mode mesh: a client's hello, the server's introductions of peers
	FrameMeshReport    FrameType = 0x19 // commits mode mesh: how fast a client reaches its peers
	FrameParity        FrameType = 0x1a // a Reed–Solomon parity shard over earlier packets' reliable frames
	FrameStateRequest  FrameType = 0x1b // commits relay: asks a client for its committed state's digest (and bytes) at a tick
	FrameStateSum      FrameType = 0x1c // commits relay: a client's digest of its committed state, and the size of its upload
	FrameStateChunk    FrameType = 0x1d // commits relay: a piece of a committed state's bytes (upload, or sent on to a client)
	FrameStateBegin    FrameType = 0x1e // commits relay: the head of a verified committed state sent to a client
	frameTypeEnd       FrameType = 0x1f
)

var frameNames = [...]string{
	FrameAckOnly:       "ack-only",
	FrameReliable:      "reliable",
	FrameMessage:       "message",
	FrameInput:         "input",
	FrameInputAck:      "input ack",
	FrameSnapshotDelta: "snapshot delta",
	FrameFullSnapshot:  "full snapshot",
	FrameResyncRequest: "resync request",
	FrameChecksum:      "checksum",
	FrameControl:       "control",
	FramePathChallenge: "path challenge",
	FramePathResponse:  "path response",
	FrameRoster:        "roster",
	FrameStandbyAck:    "standby ack",
	FrameStandbyStep:   "standby step",
	FrameStandbyState:  "standby state",
	FrameSuccessor:     "successor",
	FramePeerMessage:   "peer message",
	FramePeerAck:       "peer ack",
	FrameEffect:        "effect",
	FrameCommand:       "command",
	FrameCommitItem:    "commit item",
	FrameCommitSums:    "commit sums",
	FrameMeshIntro:     "mesh intro",
	FrameMeshReport:    "mesh report",
	FrameParity:        "parity",
	FrameStateRequest:  "state request",
	FrameStateSum:      "state sum",
	FrameStateChunk:    "state chunk",
	FrameStateBegin:    "state begin",
}

func (t FrameType) String() string {
	if t > 0 && t < frameTypeEnd {
		return frameNames[t]
	}
	return "unknown"
}

// Valid reports whether t is a frame type this version defines.
func (t FrameType) Valid() bool { return t > 0 && t < frameTypeEnd }

var (
	errFrameTrunc = truncated("frame", "type")
	errFrameType  = malformed("frame", "type")
	errTooMany    = malformed("payload", "frame count")
)

// PeekFrameType returns the type of the frame at the start of b.
func PeekFrameType(b []byte) (FrameType, error) {
	if len(b) == 0 {
		return 0, errFrameTrunc
	}
	t := FrameType(b[0])
	if !t.Valid() {
		return 0, errFrameType
	}
	return t, nil
}

// SkipFrame validates the frame at the start of b and returns its type and
// encoded length, without keeping its fields.
func SkipFrame(b []byte) (FrameType, int, error) {
	t, err := PeekFrameType(b)
	if err != nil {
		return 0, 0, err
	}
	var n int
	switch t {
	case FrameAckOnly:
		_, n, err = ParseAckOnlyFrame(b)
	case FrameReliable:
		_, n, err = ParseReliableFrame(b)
	case FrameMessage:
		_, n, err = ParseMessageFrame(b)
	case FrameInput:
		_, n, err = ParseInputFrame(b)
	case FrameInputAck:
		_, n, err = ParseInputAckFrame(b)
	case FrameSnapshotDelta:
		_, n, err = ParseSnapshotDeltaFrame(b)
	case FrameFullSnapshot:
		_, n, err = ParseFullSnapshotFrame(b)
	case FrameResyncRequest:
		_, n, err = ParseResyncRequestFrame(b)
	case FrameChecksum:
		_, n, err = ParseChecksumFrame(b)
	case FrameControl:
		_, n, err = ParseControlFrame(b)
	case FramePathChallenge:
		_, n, err = ParsePathChallengeFrame(b)
	case FramePathResponse:
		_, n, err = ParsePathResponseFrame(b)
	case FrameRoster:
		n, err = skipRosterFrame(b)
	case FrameStandbyAck:
		_, n, err = ParseStandbyAckFrame(b)
	case FrameStandbyStep:
		n, err = skipStandbyStepFrame(b)
	case FrameStandbyState:
		n, err = skipStandbyStateFrame(b)
	case FrameSuccessor:
		_, n, err = ParseSuccessorFrame(b)
	case FramePeerMessage:
		_, n, err = ParsePeerMessageFrame(b)
	case FramePeerAck:
		_, n, err = ParsePeerAckFrame(b)
	case FrameEffect:
		_, n, err = ParseEffectFrame(b)
	case FrameCommand:
		_, n, err = ParseCommandFrame(b)
	case FrameCommitItem:
		_, n, err = ParseCommitItemFrame(b)
	case FrameCommitSums:
		_, _, n, err = scanCommitSums(b)
	case FrameMeshIntro:
		_, n, err = parseMeshIntro(b, false)
	case FrameMeshReport:
		_, n, err = scanMeshReport(b)
	case FrameParity:
		_, n, err = ParseParityFrame(b)
	case FrameStateRequest:
		_, n, err = ParseStateRequestFrame(b)
	case FrameStateSum:
		_, n, err = ParseStateSumFrame(b)
	case FrameStateChunk:
		_, n, err = ParseStateChunkFrame(b)
	case FrameStateBegin:
		n, err = skipStateBeginFrame(b)
	}
	return t, n, err
}

// FrameReader walks the frames of an opened payload:
//
//	r := proto.FrameReader{Payload: p}
//	for r.Next() {
//		switch r.Type() { case proto.FrameInput: f, _, err := proto.ParseInputFrame(r.Frame()) ... }
//	}
//	if r.Err() != nil { drop the packet }
//
// Next validates each frame before returning it and enforces
// MaxFramesPerPacket.
type FrameReader struct {
	Payload []byte
	cur     []byte
	typ     FrameType
	count   int
	err     error
}

// Next advances to the next frame; it returns false at the end of the
// payload or on the first error.
func (r *FrameReader) Next() bool {
	if r.err != nil || len(r.Payload) == 0 {
		return false
	}
	if r.count == MaxFramesPerPacket {
		r.err = errTooMany
		return false
	}
	t, n, err := SkipFrame(r.Payload)
	if err != nil {
		r.err = err
		return false
	}
	r.typ, r.cur, r.Payload = t, r.Payload[:n], r.Payload[n:]
	r.count++
	return true
}

// Type is the current frame's type.
func (r *FrameReader) Type() FrameType { return r.typ }

// Frame is the current frame's bytes, type byte included.
func (r *FrameReader) Frame() []byte { return r.cur }

// Err is the error that stopped Next, if any.
func (r *FrameReader) Err() error { return r.err }
