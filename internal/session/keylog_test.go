package session

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/keylog"
	"github.com/tickwire/tickwire/proto"
)

// logKeysTo sends the keys of the sessions and mesh links the test makes
// to a key log file, and returns a function that reads its lines.
func logKeysTo(t *testing.T) func() []keylog.Line {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.log")
	w, err := keylog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	keyLog = func() *keylog.Writer { return w }
	t.Cleanup(func() {
		keyLog = keylog.FromEnv
		w.Close()
	})
	return func() []keylog.Line {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lines, err := keylog.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
}

// TestKeyLog: the server logs a session's two keys when its token is used
// (before the accept, the first packet they seal, goes out), the client
// logs the same two once the accept opened, and a mesh link logs the key
// of each direction under the connection that sends with it. A handshake
// that fails logs nothing.
func TestKeyLog(t *testing.T) {
	lines := logKeysTo(t)
	key := testKey(t)
	h, _ := NewResponder(ResponderConfig{Keys: []*[proto.KeySize]byte{&key}, CookieLifetime: time.Second})
	tok := mint(t, &key)
	const conn = 3735928559
	ini, c2s, s2c, _ := handshake(t, h, tok, netip.MustParseAddrPort("192.0.2.1:5000"), conn)
	want := []keylog.Line{{Dir: keylog.ClientToServer, Conn: conn, Key: c2s}, {Dir: keylog.ServerToClient, Conn: conn, Key: s2c}}
	check := func(what string, want []keylog.Line) {
		t.Helper()
		got := lines()
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, want %d: %+v", what, len(got), len(want), got)
		}
		for i := range got {
			if got[i].Dir != want[i].Dir || got[i].Conn != want[i].Conn || got[i].Key != want[i].Key {
				t.Errorf("%s: line %d is %v %d %x, want %v %d %x", what, i+1,
					got[i].Dir, got[i].Conn, got[i].Key, want[i].Dir, want[i].Conn, want[i].Key)
			}
			if d := time.Since(got[i].Time); d < 0 || d > time.Minute {
				t.Errorf("%s: line %d made at %v", what, i+1, got[i].Time)
			}
		}
	}
	check("server", want)

	srv, err := New(Config{ID: conn, MaxPacket: 1200, TxKey: &s2c, RxKey: &c2s, Heartbeat: time.Second, Timeout: time.Minute, Handler: &tickSink{}}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	body := proto.AcceptBody{ClientID: tok.priv.ClientID, TickRate: 60, HeartbeatMs: 1000, TimeoutMs: 10000, MaxPacket: 1200, PlayerCount: 1, Players: [4]uint16{1}}
	b, _ := body.Append(nil)
	accept := srv.AppendControl(make([]byte, 0, 1200), testNow, proto.PacketAccept, TickOnly(1), b)
	bad := append([]byte(nil), accept...)
	bad[len(bad)-1]++
	if _, _, ok := ini.Accept(bad, testNow, Config{Handler: &tickSink{}}); ok {
		t.Fatal("an altered accept opened")
	}
	check("altered accept", want)
	if _, why, ok := ini.Accept(accept, testNow, Config{Handler: &tickSink{}}); !ok {
		t.Fatalf("accept: %v", why)
	}
	check("client", append(want, want...))

	var ab, ba [proto.KeySize]byte
	ab[0], ba[0] = 1, 2
	if _, err := NewMeshLink(10, 20, &ab, &ba); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMeshLink(30, 30, &ab, &ab); err != nil {
		t.Fatal(err)
	}
	check("mesh", append(append(want, want...),
		keylog.Line{Dir: keylog.Mesh, Conn: 10, Key: ab}, keylog.Line{Dir: keylog.Mesh, Conn: 20, Key: ba},
		keylog.Line{Dir: keylog.Mesh, Conn: 30, Key: ab}))
}
