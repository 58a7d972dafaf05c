package keylog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = [KeySize]byte{0x5f, 0x1c, 0x00, 0xff, 31: 0x01}

// TestLineFormat: the bytes of a line are the documented ones, and Len
// says how many.
func TestLineFormat(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123_456_789, time.FixedZone("CEST", 2*3600))
	for _, c := range []struct {
		l    Line
		want string
	}{
		{Line{Dir: ClientToServer, Conn: 3735928559, Time: at, Key: testKey},
			"tickwire1 c2s 3735928559 2026-05-01T10:00:00.123Z 5f1c00ff00000000000000000000000000000000000000000000000000000001\n"},
		{Line{Dir: ServerToClient, Conn: 0, Time: at, Key: testKey},
			"tickwire1 s2c 0 2026-05-01T10:00:00.123Z 5f1c00ff00000000000000000000000000000000000000000000000000000001\n"},
		{Line{Dir: Mesh, Conn: 42, Time: time.Unix(0, 0), Key: [KeySize]byte{}},
			"tickwire1 mesh 42 1970-01-01T00:00:00.000Z 0000000000000000000000000000000000000000000000000000000000000000\n"},
	} {
		b, err := c.l.Append(nil)
		if err != nil || string(b) != c.want {
			t.Errorf("Append = %q, %v\nwant     %q", b, err, c.want)
		}
		if c.l.Len() != len(b) {
			t.Errorf("Len = %d, Append wrote %d", c.l.Len(), len(b))
		}
		got, n, err := ParseLine(b)
		if err != nil || n != len(b) || got.Dir != c.l.Dir || got.Conn != c.l.Conn || got.Key != c.l.Key ||
			!got.Time.Equal(c.l.Time.Truncate(time.Millisecond)) {
			t.Errorf("ParseLine(%q) = %+v, %d, %v", b, got, n, err)
		}
	}
	if _, err := (&Line{Dir: directionEnd}).Append(nil); !errors.Is(err, ErrDirection) {
		t.Errorf("Append of an invalid direction: %v", err)
	}
}

// TestParseLineErrors: what a reader skips and what it refuses.
func TestParseLineErrors(t *testing.T) {
	good := "tickwire1 c2s 7 2026-05-01T10:00:00.123Z 5f1c00ff00000000000000000000000000000000000000000000000000000001"
	for _, c := range []struct {
		line string
		want error
	}{
		{good, nil},
		{good + "\r", nil},
		{"", ErrSkip},
		{"# a comment", ErrSkip},
		{"tickwire2 c2s 7 whatever", ErrSkip},
		{"CLIENT_RANDOM 00 11", ErrSkip},
		{"tickwire1", ErrMalformed},
		{"tickwire1 c2s 7 2026-05-01T10:00:00.123Z", ErrMalformed},
		{good + " extra", ErrMalformed},
		{strings.Replace(good, " 7 ", "  7 ", 1), ErrMalformed},
		{strings.Replace(good, "c2s", "up", 1), ErrMalformed},
		{strings.Replace(good, " 7 ", " 07 ", 1), ErrMalformed},
		{strings.Replace(good, " 7 ", " -7 ", 1), ErrMalformed},
		{strings.Replace(good, " 7 ", " 4294967296 ", 1), ErrMalformed},
		{strings.Replace(good, ".123Z", ".12Z", 1), ErrMalformed},
		{strings.Replace(good, ".123Z", ".123+00:00", 1), ErrMalformed},
		{strings.Replace(good, ".123Z", ",123Z", 1), ErrMalformed},
		{strings.Replace(good, "5f1c", "5F1C", 1), ErrMalformed},
		{good[:len(good)-2], ErrMalformed},
		{good + "00", ErrMalformed},
	} {
		_, n, err := ParseLine([]byte(c.line + "\nnext line"))
		if err != c.want {
			t.Errorf("ParseLine(%q): %v, want %v", c.line, err, c.want)
		}
		if n != len(c.line)+1 {
			t.Errorf("ParseLine(%q) took %d bytes, want %d", c.line, n, len(c.line)+1)
		}
	}
}
