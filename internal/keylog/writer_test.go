package keylog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func readFile(t *testing.T, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func keyOf(conn uint32, d Direction) [KeySize]byte {
	var k [KeySize]byte
	copy(k[:], fmt.Sprintf("%08x-%d", conn, d))
	return k
}

// writeSessions logs n sessions from each of the goroutines, each with
// keys that name its connection and direction.
func writeSessions(w *Writer, base uint32, goroutines, n int) {
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range n {
				conn := base + uint32(g*n+i)
				c2s, s2c := keyOf(conn, ClientToServer), keyOf(conn, ServerToClient)
				w.Session(conn, &c2s, &s2c)
			}
		})
	}
	wg.Wait()
}

// checkSessions: the file holds the header once and, whole, both lines
// of every session in [base, base+n) of each base.
func checkSessions(t *testing.T, path string, n int, bases ...uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(header)) || bytes.Count(b, []byte("# tickwire key log")) != 1 {
		t.Errorf("the file does not start with the header, once:\n%.300s", b)
	}
	lines := readFile(t, path)
	if len(lines) != 2*n*len(bases) {
		t.Fatalf("%d lines, want %d", len(lines), 2*n*len(bases))
	}
	seen := map[[2]uint32]bool{}
	for _, l := range lines {
		if l.Key != keyOf(l.Conn, l.Dir) {
			t.Fatalf("conn %d %v: key %x is another's", l.Conn, l.Dir, l.Key)
		}
		seen[[2]uint32{l.Conn, uint32(l.Dir)}] = true
	}
	for _, base := range bases {
		for c := base; c < base+uint32(n); c++ {
			if !seen[[2]uint32{c, uint32(ClientToServer)}] || !seen[[2]uint32{c, uint32(ServerToClient)}] {
				t.Fatalf("conn %d: a line is missing", c)
			}
		}
	}
}

// TestConcurrentAppends: sessions logged at once from many goroutines
// through two writers on one file (as two processes would) leave every
// line whole; the file is created 0600 with one header.
func TestConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	w1, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { writeSessions(w1, 0, 8, 250) })
	wg.Go(func() { writeSessions(w2, 1<<20, 8, 250) })
	wg.Wait()
	w1.Close()
	w2.Close()
	checkSessions(t, path, 2000, 0, 1<<20)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

// TestOpenRefusesShared: an existing key log that others may read is
// refused, as tickwire refuses such key files; once it is 0600 it is
// appended to, without a second header.
func TestOpenRefusesShared(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits")
	}
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644) // whatever the umask
	if w, err := Open(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Open of a 0644 key log: %v, %v", w, err)
	}
	os.Chmod(path, 0o600)
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	writeSessions(w, 7, 1, 1)
	w.Close()
	checkSessions(t, path, 1, 7)
}

// TestMeshLink: a link logs both keys under the connection each seals;
// the server's check of a mesh address (one connection, one key) logs
// one line.
func TestMeshLink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return at }
	send, recv := keyOf(1, Mesh), keyOf(2, Mesh)
	w.MeshLink(1, &send, 2, &recv)
	w.MeshLink(3, &send, 3, &send)
	w.Close()
	got := readFile(t, path)
	want := []Line{{Mesh, 1, at, send}, {Mesh, 2, at, recv}, {Mesh, 3, at, send}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %v\nwant %v", got, want)
	}
}

// TestOffByDefault: without TICKWIRE_KEYLOG there is no writer, and a
// nil writer logs nothing and does not fail.
func TestOffByDefault(t *testing.T) {
	var logs bytes.Buffer
	if w := openEnv("", slog.New(slog.NewTextHandler(&logs, nil))); w != nil || logs.Len() != 0 {
		t.Errorf("openEnv(\"\") = %v, logged %q", w, logs.String())
	}
	if os.Getenv(Env) == "" && FromEnv() != nil {
		t.Error("FromEnv with the variable unset is not nil")
	}
	var w *Writer
	k := testKey
	w.Session(1, &k, &k)
	w.MeshLink(1, &k, 2, &k)
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	var failed bytes.Buffer
	if w := openEnv(filepath.Join(t.TempDir(), "no", "such", "dir"), slog.New(slog.NewTextHandler(&failed, nil))); w != nil ||
		!strings.Contains(failed.String(), "level=ERROR") {
		t.Errorf("a key log that cannot be opened: %v, logged %q", w, failed.String())
	}
}

// helperEnv makes the test binary a process that logs sessions through
// FromEnv (TestProcessesAppend).
const helperEnv = "TICKWIRE_KEYLOG_TEST_BASE"

// TestProcessesAppend: two processes with TICKWIRE_KEYLOG set append
// their sessions to one file at once, each warns once (however many
// sessions it logs), and every line arrives whole.
func TestProcessesAppend(t *testing.T) {
	if base := os.Getenv(helperEnv); base != "" {
		b, _ := strconv.ParseUint(base, 10, 32)
		for range 3 {
			writeSessions(FromEnv(), uint32(b), 4, 250)
			b += 1000
		}
		return
	}
	path := filepath.Join(t.TempDir(), "keys.log")
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for _, base := range []string{"100000", "200000"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessesAppend$")
		cmd.Env = append(os.Environ(), Env+"="+path, helperEnv+"="+base)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, out)
	}
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		if n := strings.Count(outs[i].String(), "whoever reads it can decrypt"); n != 1 {
			t.Errorf("process %d warned %d times:\n%s", i, n, outs[i])
		}
	}
	checkSessions(t, path, 1000, 100000, 101000, 102000, 200000, 201000, 202000)
}
