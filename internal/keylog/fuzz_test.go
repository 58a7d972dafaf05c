package keylog

import (
	"bytes"
	"testing"
	"time"
)

// FuzzParseLine: a line either does not parse or parses to a value that
// Append writes back as a line of Len bytes, which parses to the same
// value; a line that Append wrote is given back byte for byte.
func FuzzParseLine(f *testing.F) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 123e6, time.UTC)
	for _, l := range []Line{
		{Dir: ClientToServer, Conn: 1, Time: at, Key: testKey},
		{Dir: ServerToClient, Conn: 4294967295, Time: at, Key: testKey},
		{Dir: Mesh, Conn: 0, Time: time.Unix(0, 0), Key: [KeySize]byte{}},
	} {
		b, _ := l.Append(nil)
		f.Add(b)
	}
	f.Add([]byte(header))
	f.Add([]byte("tickwire1 c2s 07 2026-05-01T10:00:00.123Z 00\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, n, err := ParseLine(b)
		if n < 0 || n > len(b) || (len(b) > 0 && n == 0) {
			t.Fatalf("took %d of %d bytes", n, len(b))
		}
		if err != nil {
			return
		}
		out, err := l.Append(nil)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if len(out) != l.Len() {
			t.Fatalf("Len %d, Append wrote %d", l.Len(), len(out))
		}
		l2, n2, err := ParseLine(out)
		if err != nil || n2 != len(out) || l2.Dir != l.Dir || l2.Conn != l.Conn || l2.Key != l.Key || !l2.Time.Equal(l.Time) {
			t.Fatalf("%q parsed to %+v, re-encoded %q parsed to %+v (%v)", b[:n], l, out, l2, err)
		}
		line := bytes.TrimSuffix(b[:n], []byte("\n"))
		if !bytes.HasSuffix(line, []byte("\r")) && !bytes.Equal(append(line, '\n'), out) {
			t.Fatalf("%q re-encoded as %q", b[:n], out)
		}
	})
}
