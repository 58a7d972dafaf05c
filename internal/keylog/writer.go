package keylog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"
)

// Env is the environment variable that names the key log file.
const Env = "TICKWIRE_KEYLOG"

// header opens a new key log file.
const header = "# tickwire key log, format " + Label + " (docs/PROTOCOL.md, \"Key log\").\n" +
	"# Whoever reads this file can decrypt the traffic of the sessions it names.\n"

// Writer appends key lines to a file. Each call writes its lines with a
// single write to a file opened for appending, so the lines of
// concurrent sessions, and of other processes appending to the same
// file, never interleave within a line. A nil *Writer logs nothing.
// Safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	buf    []byte
	now    func() time.Time
	failed bool // a write failed: logged once, nothing more is written
}

// Open opens the key log at path for appending, creating it with mode
// 0600 and a header of two comment lines. An existing file whose mode
// gives group or other users access is refused, as tickwire refuses
// such key files (Windows has no such mode bits and is not checked).
func Open(path string) (*Writer, error) {
	// Only the process that creates the file writes the header, so two
	// processes that start at once write it once.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if _, err := f.WriteString(header); err != nil {
			f.Close()
			return nil, err
		}
		return &Writer{f: f, now: time.Now}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if perm := st.Mode().Perm(); st.Mode().IsRegular() && perm&0o077 != 0 && runtime.GOOS != "windows" {
		f.Close()
		return nil, fmt.Errorf("keylog: %s has mode %04o, which gives group or other users access to session keys: run chmod 600 %s", path, perm, path)
	}
	return &Writer{f: f, now: time.Now}, nil
}

var fromEnv = sync.OnceValue(func() *Writer { return openEnv(os.Getenv(Env), slog.Default()) })

// FromEnv returns the process's key log: the file the environment
// variable TICKWIRE_KEYLOG names, opened by the first call, or nil when
// the variable is unset or empty (the default) or the file cannot be
// opened. Opening it logs a warning, once per process, on the default
// slog logger; failing to open it logs an error.
func FromEnv() *Writer { return fromEnv() }

func openEnv(path string, log *slog.Logger) *Writer {
	if path == "" {
		return nil
	}
	w, err := Open(path)
	if err != nil {
		log.Error("tickwire: cannot open the key log: session keys are not logged", "env", Env, "file", path, "err", err)
		return nil
	}
	log.Warn("tickwire: writing session keys to the key log: whoever reads it can decrypt this process's traffic", "env", Env, "file", path)
	return w
}

// Session logs a session's keys: connection conn's client-to-server and
// server-to-client keys, two lines written together.
func (w *Writer) Session(conn uint32, c2s, s2c *[KeySize]byte) {
	if w == nil {
		return
	}
	now := w.now()
	w.write(Line{Dir: ClientToServer, Conn: conn, Time: now, Key: *c2s},
		Line{Dir: ServerToClient, Conn: conn, Time: now, Key: *s2c})
}

// MeshLink logs a mesh link's keys: send seals the mesh packets that
// name self (ours), recv opens those that name peer. A link whose two
// sides are one (the server's check of a client's mesh address: one
// connection, one key) is one line.
func (w *Writer) MeshLink(self uint32, send *[KeySize]byte, peer uint32, recv *[KeySize]byte) {
	if w == nil {
		return
	}
	now := w.now()
	sent := Line{Dir: Mesh, Conn: self, Time: now, Key: *send}
	if self == peer && *send == *recv {
		w.write(sent)
		return
	}
	w.write(sent, Line{Dir: Mesh, Conn: peer, Time: now, Key: *recv})
}

// write appends lines to the file in one write.
func (w *Writer) write(lines ...Line) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed {
		return
	}
	w.buf = w.buf[:0]
	for i := range lines {
		w.buf, _ = lines[i].Append(w.buf) // the callers' directions are valid
	}
	if _, err := w.f.Write(w.buf); err != nil {
		w.failed = true
		slog.Error("tickwire: writing the key log failed: session keys are no longer logged", "file", w.f.Name(), "err", err)
	}
}

// Close closes the file.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// Read reads a key log and returns its key lines in order, skipping
// comments, blank lines and lines of other versions. A malformed
// version 1 line is an error naming its line number.
func Read(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		l, _, err := ParseLine(sc.Bytes())
		switch err {
		case nil:
			out = append(out, l)
		case ErrSkip:
		default:
			return out, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return out, sc.Err()
}
