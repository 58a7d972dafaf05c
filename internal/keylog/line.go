package keylog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// Label opens every line of version 1 of the format. A reader skips the
// lines whose first field it does not know (a later version), comment
// lines (#) and blank lines.
const Label = "tickwire1"

// TimeLayout is the time field's layout: UTC, milliseconds, always 24
// bytes.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Direction says which packets a key seals.
type Direction uint8

const (
	// ClientToServer: the session packets (types 4, 6, 7, 8) a client
	// sends on the connection.
	ClientToServer Direction = iota + 1
	// ServerToClient: the session packets the server sends on it.
	ServerToClient
	// Mesh: the mesh packets (type 9) whose header names the connection,
	// their sender's. A sender with several peers has a key per peer, so
	// a connection id may have several mesh lines.
	Mesh
	directionEnd
)

var directionNames = [directionEnd]string{ClientToServer: "c2s", ServerToClient: "s2c", Mesh: "mesh"}

func (d Direction) String() string {
	if d == 0 || d >= directionEnd {
		return "invalid"
	}
	return directionNames[d]
}

// Line is one line of the key log: the key that seals Dir's packets of
// connection Conn, made at Time.
type Line struct {
	Dir  Direction
	Conn uint32
	// Time is when the keys were made, by the clock of the process that
	// logged them; the line keeps milliseconds, in UTC. Two sessions
	// with one connection id (two servers, a restarted one) are told
	// apart by it, and by which key opens a packet.
	Time time.Time
	Key  [KeySize]byte
}

// Errors of ParseLine.
var (
	// ErrSkip: the line holds no key of this version (a comment, a blank
	// line, a line of another version); a reader goes on.
	ErrSkip = errors.New("keylog: not a key line of version 1")
	// ErrMalformed: a version 1 line that does not follow the format.
	ErrMalformed = errors.New("keylog: malformed line")
	// ErrDirection: a Line whose Dir is not one of the directions.
	ErrDirection = errors.New("keylog: invalid direction")
)

// Len is the length of the line Append writes, its newline included.
func (l *Line) Len() int {
	return len(Label) + 1 + len(l.Dir.String()) + 1 + len(strconv.FormatUint(uint64(l.Conn), 10)) + 1 +
		len(TimeLayout) + 1 + hex.EncodedLen(KeySize) + 1
}

// Append appends the line, newline included, to b.
func (l *Line) Append(b []byte) ([]byte, error) {
	if l.Dir == 0 || l.Dir >= directionEnd {
		return b, ErrDirection
	}
	b = append(b, Label...)
	b = append(b, ' ')
	b = append(b, l.Dir.String()...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(l.Conn), 10)
	b = append(b, ' ')
	b = l.Time.UTC().AppendFormat(b, TimeLayout)
	b = append(b, ' ')
	b = hex.AppendEncode(b, l.Key[:])
	return append(b, '\n'), nil
}

// ParseLine parses the first line of b and returns it with the bytes it
// took (its newline included; a carriage return before it is ignored).
// A comment, a blank line or a line of another version gives ErrSkip
// with its length, so that a reader can go on; a version 1 line that
// breaks the format gives ErrMalformed.
func ParseLine(b []byte) (Line, int, error) {
	n := len(b)
	for i, c := range b {
		if c == '\n' {
			n = i + 1
			b = b[:i]
			break
		}
	}
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if first, _, _ := bytes.Cut(b, []byte{' '}); string(first) != Label {
		return Line{}, n, ErrSkip
	}
	fields, ok := splitFields(b)
	if !ok {
		return Line{}, n, ErrMalformed
	}
	var l Line
	for d := ClientToServer; d < directionEnd; d++ {
		if fields[1] == directionNames[d] {
			l.Dir = d
		}
	}
	conn, err := strconv.ParseUint(fields[2], 10, 32)
	canonical := len(fields[2]) > 0 && (fields[2][0] != '0' || fields[2] == "0")
	if l.Dir == 0 || err != nil || !canonical {
		return Line{}, n, ErrMalformed
	}
	l.Conn = uint32(conn)
	// Only the layout's own spelling: time.Parse also takes a comma
	// before the milliseconds.
	l.Time, err = time.Parse(TimeLayout, fields[3])
	if err != nil || l.Time.Format(TimeLayout) != fields[3] {
		return Line{}, n, ErrMalformed
	}
	if len(fields[4]) != hex.EncodedLen(KeySize) || !lowerHex(fields[4]) {
		return Line{}, n, ErrMalformed
	}
	hex.Decode(l.Key[:], []byte(fields[4]))
	return l, n, nil
}

// splitFields splits a line into its five fields, separated by single
// spaces; ok is false for any other shape.
func splitFields(b []byte) (f [5]string, ok bool) {
	k, start := 0, 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != ' ' {
			continue
		}
		if k == len(f) || i == start {
			return f, false
		}
		f[k] = string(b[start:i])
		k++
		start = i + 1
	}
	return f, k == len(f)
}

// lowerHex reports whether s is made of lowercase hexadecimal digits.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
