package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// The file's layout is docs/DEBUGGING.md's table "The replay file"; keep
// the two in step. Every integer is little-endian.
var le = binary.LittleEndian

// Magic opens every replay file.
const Magic = "TWREPLAY"

// Version is the format version this package writes; it reads it and
// no other.
const Version = 1

// Sizes and offsets of the format.
const (
	// headerPrefix is the magic, the version (u16) and the length of the
	// header's body (u32).
	headerPrefix = len(Magic) + 2 + 4
	// headerFixed is the body's fixed part: role u8, tick rate u16,
	// input size u16, action bytes u16, record size u16, spawns per
	// tick u16, history ticks u16, key interval u32, game id u64,
	// started i64 (Unix milliseconds), segment u32.
	headerFixed = 1 + 2 + 2 + 2 + 2 + 2 + 2 + 4 + 8 + 8 + 4
	// segmentOffset is where the segment number sits in the file.
	segmentOffset = headerPrefix + headerFixed - 4
	// maxHeaderBody bounds the header's body (players and a name of at
	// most 255 each, and room for fields a later version adds).
	maxHeaderBody = 1 << 12
	// recordHeader is a record's type u8, tick u32 and body length u32.
	recordHeader = 1 + 4 + 4
	// blockHeader is a block's length u32 (of what follows it), codec
	// u8 and raw length u32.
	blockHeader = 4 + 1 + 4
	// MaxBlock bounds a block's raw (decompressed) size, and so any one
	// record: a full state larger than this cannot be recorded.
	MaxBlock = proto.MaxSnapshotSize
)

// Role says whose recording a file is.
type Role uint8

// The roles.
const (
	// RoleServer is a state-sync server's game (game.Host): every
	// player's input as each step took it, full states with the
	// lag-compensation past, the checksums it sent.
	RoleServer Role = 1
	// RoleClient is a state-sync client (game.Client): its players'
	// inputs, the first step its game code made from each
	// authoritative state (its own entities), confirmed states, the
	// checksums it checked.
	RoleClient Role = 2
	// RoleCommitsServer is a commits-mode server with the game
	// (commits.Host): the committed commands, every committed tick's
	// checksum, committed states.
	RoleCommitsServer Role = 3
	// RoleCommitsClient is a commits-mode client (commits.Client): the
	// same as the server's, plus the committed states it held before a
	// desync was found.
	RoleCommitsClient Role = 4
	roleEnd           Role = 5
)

var roleNames = [roleEnd]string{"", "state-sync server", "state-sync client", "commits server", "commits client"}

func (r Role) String() string { return name(roleNames[:], uint8(r), "role") }

// name is value v's name in names, or what for a value without one.
func name(names []string, v uint8, what string) string {
	if v > 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s %d", what, v)
}

// MarshalText writes the role by name (in JSON reports).
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	for i, n := range roleNames {
		if i > 0 && n == string(b) {
			*r = Role(i)
			return nil
		}
	}
	return fmt.Errorf("replay: unknown role %q", b)
}

// Commits reports whether r is a commits-mode seat.
func (r Role) Commits() bool { return r == RoleCommitsServer || r == RoleCommitsClient }

// Header opens a replay file: what was recorded, by whom, with which
// game and layout. A new segment (Config.SegmentBytes) repeats it with
// the next Segment.
type Header struct {
	Role Role
	// Game is the game's name (at most 255 bytes), by which
	// tickwire-replay finds its code: "arena", "swarm".
	Game     string
	GameID   uint64
	TickRate int
	// Schema is the game's: input size, action bytes and (state sync)
	// record size.
	Schema sim.Schema
	// SpawnsPerTick and HistoryTicks are the state-sync server engine's
	// (sim.ServerConfig.SpawnsPerTick, and History in ticks), which a
	// re-run needs to step and rewind exactly as it did; 0 elsewhere.
	SpawnsPerTick, HistoryTicks int
	// KeyEvery is how many ticks apart the recorder wrote full states.
	KeyEvery int
	// Started is when the recording began (to the millisecond).
	Started time.Time
	// Segment counts the segments of the recording before this file.
	Segment uint32
	// Players are a client's local players (none for a server).
	Players []uint16
}

// Errors of the format.
var (
	// ErrNotReplay: the file does not start with Magic.
	ErrNotReplay = errors.New("replay: not a replay file (no TWREPLAY magic)")
	// ErrVersion: the file is of a format version this package does
	// not read.
	ErrVersion = errors.New("replay: unsupported format version")
)

// FormatError is a malformed replay file: what is wrong, and where.
type FormatError struct {
	// Offset is the byte offset in the file of the header or block
	// concerned (for a record, of its block).
	Offset int64
	What   string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("replay: malformed file at byte %d: %s", e.Offset, e.What)
}

func (h *Header) validate() error {
	switch {
	case h.Role == 0 || h.Role >= roleEnd:
		return fmt.Errorf("replay: %v", h.Role)
	case len(h.Game) > 255:
		return errors.New("replay: game name longer than 255 bytes")
	case len(h.Players) > 255:
		return errors.New("replay: more than 255 local players")
	case h.TickRate < 1 || h.TickRate > 0xffff:
		return fmt.Errorf("replay: tick rate %d out of 1..65535", h.TickRate)
	case h.Schema.InputSize < 1 || h.Schema.InputSize > proto.MaxInputBytes:
		return fmt.Errorf("replay: input size %d out of 1..%d", h.Schema.InputSize, proto.MaxInputBytes)
	case h.Schema.ActionBytes < 0 || h.Schema.ActionBytes > h.Schema.InputSize:
		return fmt.Errorf("replay: action bytes %d out of 0..%d", h.Schema.ActionBytes, h.Schema.InputSize)
	case h.Schema.RecordSize < 0 || h.Schema.RecordSize > 0xffff:
		return fmt.Errorf("replay: record size %d out of 0..65535", h.Schema.RecordSize)
	case h.Schema.RecordSize == 0 && !h.Role.Commits():
		return fmt.Errorf("replay: a %v's recording with no record size", h.Role)
	case h.SpawnsPerTick < 0 || h.SpawnsPerTick > 0xffff || h.HistoryTicks < 0 || h.HistoryTicks > 0xffff:
		return errors.New("replay: spawns per tick or history out of 0..65535")
	case h.KeyEvery < 1 || h.KeyEvery > 1<<30:
		return fmt.Errorf("replay: key interval %d out of range", h.KeyEvery)
	}
	return nil
}

// Append appends the header's encoding to b.
func (h *Header) Append(b []byte) ([]byte, error) {
	if err := h.validate(); err != nil {
		return b, err
	}
	b = append(b, Magic...)
	b = le.AppendUint16(b, Version)
	b = le.AppendUint32(b, uint32(headerFixed+1+2*len(h.Players)+1+len(h.Game)))
	b = append(b, byte(h.Role))
	b = le.AppendUint16(b, uint16(h.TickRate))
	b = le.AppendUint16(b, uint16(h.Schema.InputSize))
	b = le.AppendUint16(b, uint16(h.Schema.ActionBytes))
	b = le.AppendUint16(b, uint16(h.Schema.RecordSize))
	b = le.AppendUint16(b, uint16(h.SpawnsPerTick))
	b = le.AppendUint16(b, uint16(h.HistoryTicks))
	b = le.AppendUint32(b, uint32(h.KeyEvery))
	b = le.AppendUint64(b, h.GameID)
	b = le.AppendUint64(b, uint64(h.Started.UnixMilli()))
	b = le.AppendUint32(b, h.Segment)
	b = append(b, byte(len(h.Players)))
	for _, p := range h.Players {
		b = le.AppendUint16(b, p)
	}
	b = append(b, byte(len(h.Game)))
	return append(b, h.Game...), nil
}

// parseHeaderPrefix checks the magic and the version and returns the
// length of the header's body.
func parseHeaderPrefix(b []byte) (int, error) {
	if len(b) < headerPrefix || string(b[:len(Magic)]) != Magic {
		return 0, ErrNotReplay
	}
	if v := le.Uint16(b[len(Magic):]); v != Version {
		return 0, fmt.Errorf("%w %d (this reader reads %d)", ErrVersion, v, Version)
	}
	n := int(le.Uint32(b[len(Magic)+2:]))
	if n < headerFixed+2 || n > maxHeaderBody {
		return 0, &FormatError{0, fmt.Sprintf("header length %d", n)}
	}
	return n, nil
}

// parseHeaderBody decodes the header's body. Bytes after the name are
// a later version's and are skipped.
func parseHeaderBody(b []byte) (Header, error) {
	bad := func(what string) (Header, error) { return Header{}, &FormatError{0, "header: " + what} }
	if len(b) < headerFixed+2 {
		return bad("truncated")
	}
	h := Header{
		Role:     Role(b[0]),
		TickRate: int(le.Uint16(b[1:])),
		Schema: sim.Schema{InputSize: int(le.Uint16(b[3:])), ActionBytes: int(le.Uint16(b[5:])),
			RecordSize: int(le.Uint16(b[7:]))},
		SpawnsPerTick: int(le.Uint16(b[9:])),
		HistoryTicks:  int(le.Uint16(b[11:])),
		KeyEvery:      int(le.Uint32(b[13:])),
		GameID:        le.Uint64(b[17:]),
		Started:       time.UnixMilli(int64(le.Uint64(b[25:]))),
		Segment:       le.Uint32(b[33:]),
	}
	rest := b[headerFixed:]
	n := int(rest[0])
	if len(rest) < 1+2*n+1 {
		return bad("players truncated")
	}
	for i := range n {
		h.Players = append(h.Players, le.Uint16(rest[1+2*i:]))
	}
	rest = rest[1+2*n:]
	if len(rest) < 1+int(rest[0]) {
		return bad("game name truncated")
	}
	h.Game = string(rest[1 : 1+int(rest[0])])
	if err := h.validate(); err != nil {
		return bad(err.Error())
	}
	return h, nil
}

// RecordType says what a record holds (docs/DEBUGGING.md, "Records").
type RecordType uint8

// The record types.
const (
	// RecordState is a state-sync server's full state: the engine state
	// and the snapshot of the tick, with the snapshots of the ticks
	// before it that lag compensation may rewind to (at the start of a
	// file, and after a gap).
	RecordState RecordType = 1
	// RecordStep is what one server step consumed (sim.StepRecord), as a
	// standby step frame (docs/PROTOCOL.md).
	RecordStep RecordType = 2
	// RecordChecksum is the checksum of the whole state at the tick: a
	// state-sync server's sim.Checksummer.SnapshotSum when one was due,
	// every committed tick's WorldSum in commits mode.
	RecordChecksum RecordType = 3
	// RecordInput is one of a state-sync client's players' input for
	// the tick, as sampled.
	RecordInput RecordType = 4
	// RecordPredicted is a state-sync client's own entities in the
	// world its game code stepped to the tick from the authoritative
	// state of the tick before (sim.ClientConfig.FirstStep).
	RecordPredicted RecordType = 5
	// RecordConfirmed is a state-sync client's confirmed state (its
	// replica of the server's) at the tick.
	RecordConfirmed RecordType = 6
	// RecordCheck is a checksum a state-sync client received for the
	// tick, and whether its replica matched it.
	RecordCheck RecordType = 7
	// RecordCommands are the commands the committed world ran at the
	// tick, in execution order (joins and leaves first).
	RecordCommands RecordType = 8
	// RecordCommitted is a commits-mode committed state (the bytes of
	// sim.Lockstep.AppendState), with why it was written.
	RecordCommitted RecordType = 9
	// RecordEvent is something that happened at the tick (Event).
	RecordEvent   RecordType = 10
	recordTypeEnd RecordType = 11
)

var recordNames = [recordTypeEnd]string{"", "state", "step", "checksum", "input", "predicted", "confirmed",
	"check", "commands", "committed", "event"}

func (t RecordType) String() string { return name(recordNames[:], uint8(t), "record type") }
