package e2e

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/keylog"
	"github.com/tickwire/tickwire/internal/tshark"
)

// keyLogged is what a capture read with the dissector shows of one
// datagram.
type keyLogged struct {
	typ, conn     string
	size          int // UDP payload bytes
	sealed        bool
	decrypted     bool
	frames        []string // frame types, decimal
	malformed     string   // tickwire.malformed, _ws.malformed and _ws.lua.error, when any
	undecryptable string   // the expert info's text
}

// readCapture reads the datagrams of c (probes excluded) that match
// filter with the dissector and the extra arguments (a key log
// preference).
func readCapture(t *testing.T, c *tshark.Capture, filter string, extra ...string) []keyLogged {
	t.Helper()
	cols := []string{"tickwire.type", "tickwire.sealed", "tickwire.conn_id", "tickwire.decrypted", "tickwire.frame.type",
		"tickwire.malformed", "_ws.malformed", "_ws.lua.error", "tickwire.undecryptable", "udp.length"}
	args := append([]string{"-X", "lua_script:" + dissector(t)}, extra...)
	args = append(args, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,")
	for _, col := range cols {
		args = append(args, "-e", col)
	}
	var out []keyLogged
	for _, line := range strings.Split(strings.TrimSpace(c.Read(filter, args...)), "\n") {
		r := strings.Split(line, "|")
		if len(r) != len(cols) {
			t.Fatalf("row %q: %d fields, want %d", line, len(r), len(cols))
		}
		d := keyLogged{typ: r[0], sealed: r[1] == "1", conn: r[2], decrypted: r[3] == "1",
			malformed: r[5] + r[6] + r[7], undecryptable: r[8]}
		if n, err := strconv.Atoi(r[9]); err == nil {
			d.size = n - 8
		}
		if r[4] != "" {
			d.frames = strings.Split(r[4], ",")
		}
		out = append(out, d)
	}
	return out
}

func dissector(t *testing.T) string {
	lua, err := filepath.Abs("../../proto/wireshark/tickwire.lua")
	if err != nil {
		t.Fatal(err)
	}
	return lua
}

// readKeyLog reads the key log at path, which must be private (0600).
func readKeyLog(t *testing.T, path string) []keylog.Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key log: %v, mode %v", err, st.Mode().Perm())
	}
	lines, err := keylog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// decryptedShare checks the sealed datagrams among dgs that keep
// returns true for: none malformed, at least 99 % decrypted. It returns
// how many were sealed and decrypted, and the frame types the decrypted
// ones carried.
func decryptedShare(t *testing.T, dgs []keyLogged, keep func(d keyLogged) bool) (sealed, decrypted int, carried map[string]bool) {
	t.Helper()
	carried = map[string]bool{}
	for i, d := range dgs {
		if d.malformed != "" {
			t.Errorf("datagram %d (type %s, conn %s) malformed: %q", i+1, d.typ, d.conn, d.malformed)
		}
		if !d.sealed || !keep(d) {
			continue
		}
		sealed++
		if !d.decrypted {
			t.Logf("datagram %d (type %s, conn %s) not decrypted: %s", i+1, d.typ, d.conn, d.undecryptable)
			continue
		}
		decrypted++
		for _, ft := range d.frames {
			carried[ft] = true
		}
	}
	if decrypted*100 < sealed*99 {
		t.Errorf("%d of %d sealed datagrams decrypted, want 99 %%", decrypted, sealed)
	}
	return sealed, decrypted, carried
}

// TestKeyLogCapture runs the server and two bots on loopback for 3 s
// with TICKWIRE_KEYLOG naming one file, while tshark captures the game
// port, and reads the capture with the dissector, with and without the
// key log. It checks that:
//   - the file is 0600, the server warned once that it writes keys, and
//     every session on the wire has its c2s and s2c lines from both
//     ends (the server and the bot);
//   - with the key log (preference tickwire.keylog_file) at least 99 %
//     of the sealed datagrams decrypt, and their frames include reliable
//     segments, inputs and snapshots, with no datagram malformed and no
//     Lua error;
//   - without it, every sealed datagram shows its header and no frame.
//
// It logs the share decrypted and how fast the Lua decryption went.
func TestKeyLogCapture(t *testing.T) {
	tsharkPath := tshark.Look(t)
	keys := filepath.Join(t.TempDir(), "keys.log")
	t.Setenv(keylog.Env, keys) // the server and the bots inherit it
	srv, c := capturedGame(t, 2, "3s")
	pref := "tickwire.keylog_file:" + keys

	dgs := readCapture(t, c, "", "-o", pref)
	conns := map[string]bool{}
	total := 0
	sealed, decrypted, carried := decryptedShare(t, dgs, func(d keyLogged) bool {
		conns[d.conn] = true
		total += d.size
		return true
	})
	if sealed < 200 {
		t.Fatalf("only %d sealed datagrams captured", sealed)
	}
	if !carried["2"] || !carried["4"] || !carried["6"] && !carried["7"] {
		t.Errorf("the decrypted datagrams carry frame types %v, want reliable (2), input (4) and snapshots (6 or 7)", slices.Sorted(maps.Keys(carried)))
	}

	for i, d := range readCapture(t, c, "") {
		if d.sealed && (d.conn == "" || d.frames != nil || d.decrypted || d.undecryptable != "") {
			t.Errorf("datagram %d without the key log: %+v", i+1, d)
		}
	}

	lines := readKeyLog(t, keys)
	logged := map[string]int{}
	for _, l := range lines {
		logged[fmt.Sprintf("%v %d", l.Dir, l.Conn)]++
	}
	for id := range conns {
		if logged["c2s "+id] != 2 || logged["s2c "+id] != 2 {
			t.Errorf("connection %s: c2s logged %d times, s2c %d, want 2 each (server and bot)", id, logged["c2s "+id], logged["s2c "+id])
		}
	}
	if n := strings.Count(srv.output(), "whoever reads it can decrypt"); n != 1 {
		t.Errorf("the server warned %d times that it writes keys, want once", n)
	}

	cpu := tsharkCPU(t, tsharkPath, c.Path(), "-o", pref) - tsharkCPU(t, tsharkPath, c.Path())
	t.Logf("%d datagrams, %d sealed (%d bytes on average), %d decrypted (%.2f %%) on %d connections, %d key lines; decryption: %v of CPU, %.0f datagrams/s",
		len(dgs), sealed, total/sealed, decrypted, 100*float64(decrypted)/float64(sealed), len(conns), len(lines),
		cpu.Round(time.Millisecond), float64(decrypted)/cpu.Seconds())
}

// TestKeyLogMesh plays swarm (the commits mode) with three bots whose
// mesh links all come up, with TICKWIRE_KEYLOG set, while tshark
// captures the game port and every tickwire mesh datagram on loopback.
// With the key log, at least 99 % of the sealed datagrams of the
// sessions and of the mesh links the key log names decrypt (the
// capture may hold other tests' mesh traffic, whose keys it has not),
// none malformed; the mesh datagrams carry path probes and commands,
// the sessions reliable segments (where commands travel) and commit
// items.
func TestKeyLogMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("mesh end to end in -short mode")
	}
	tshark.Look(t)
	keys := filepath.Join(t.TempDir(), "keys.log")
	t.Setenv(keylog.Env, keys)
	_, a := server(t, "-game", "swarm", "-tick", "30")
	_, port, _ := net.SplitHostPort(a.udp)
	// The game port, and the mesh: tickwire's prefix and type 9.
	c := tshark.Start(t, tshark.Options{Filter: "udp port " + port + " or (udp[8:2] = 0x7477 and udp[11] & 0x3f = 9)"})
	s, code := bots(t, "-server", "http://"+a.http, "-game", "swarm", "-n", "3", "-duration", "5s")
	if code != 0 || s.Connected != 3 || s.Commits == nil || s.Commits.Mesh == nil || s.Commits.Mesh.Reachable != 6 {
		t.Fatalf("bots: exit %d, %+v, commits %+v", code, s, s.Commits)
	}
	ours := map[string]bool{}
	for _, l := range readKeyLog(t, keys) {
		ours[fmt.Sprintf("%v %d", l.Dir, l.Conn)] = true
	}
	dgs := readCapture(t, c, "", "-o", "tickwire.keylog_file:"+keys)
	meshSealed, meshDecrypted, meshFrames := decryptedShare(t, dgs, func(d keyLogged) bool { return d.typ == "9" && ours["mesh "+d.conn] })
	sessSealed, sessDecrypted, sessFrames := decryptedShare(t, dgs, func(d keyLogged) bool { return d.typ != "9" })
	if meshSealed < 50 {
		t.Fatalf("only %d sealed mesh datagrams of this game captured", meshSealed)
	}
	// 0x0b path challenge, 0x0c path response, 0x15 command; 0x02
	// reliable, 0x16 commit item.
	if !meshFrames["11"] || !meshFrames["12"] || !meshFrames["21"] {
		t.Errorf("the decrypted mesh datagrams carry frame types %v, want path probes (11, 12) and commands (21)", slices.Sorted(maps.Keys(meshFrames)))
	}
	if !sessFrames["2"] || !sessFrames["22"] {
		t.Errorf("the decrypted session datagrams carry frame types %v, want reliable segments (2: commands travel there) and commit items (22)", slices.Sorted(maps.Keys(sessFrames)))
	}
	t.Logf("mesh: %d of %d sealed datagrams decrypted; sessions: %d of %d", meshDecrypted, meshSealed, sessDecrypted, sessSealed)
}

// tsharkCPU is the processor time tshark takes to read a capture with the
// dissector and the extra arguments: the cost of decrypting shows in it,
// not in the wall-clock time of a busy machine.
func tsharkCPU(t *testing.T, tsharkPath, capture string, extra ...string) time.Duration {
	t.Helper()
	args := append([]string{"-r", capture, "-X", "lua_script:" + dissector(t)}, extra...)
	cmd := exec.Command(tsharkPath, append(args, "-T", "fields", "-e", "tickwire.decrypted")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
