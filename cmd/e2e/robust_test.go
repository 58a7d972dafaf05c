package e2e

import (
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// run runs a built binary to completion and returns its exit code and
// output.
func runBin(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, name), args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestServerBadInput: bad flags, a key file that cannot be read or
// created, and a port in use end the server with a clear message; random
// garbage at the game port is counted and dropped while the server keeps
// serving.
func TestServerBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-tick", "0"}, 2, "-tick 0 out of range"},
		{[]string{"-listen", "nowhere"}, 2, "-listen"},
		{[]string{"-game", "chess"}, 2, "not embedded"},
		{[]string{"-npcs", "-1"}, 2, "-npcs"},
		{[]string{"stray"}, 2, "unexpected argument"},
		// A key file in a directory that does not exist.
		{[]string{"-listen", "127.0.0.1:0", "-http", "", "-admin", "", "-key-file", filepath.Join(dir, "missing", "k.key")}, 1, "k.key"},
	} {
		code, out := runBin(t, "tickwire-server", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("tickwire-server %v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, out)
		}
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Errorf("tickwire-server %v crashed:\n%s", tc.args, out)
		}
	}
	// A key file that is not a key.
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not a key\n"), 0o600)
	if code, out := runBin(t, "tickwire-server", "-listen", "127.0.0.1:0", "-http", "", "-admin", "", "-key-file", bad); code != 1 || !strings.Contains(out, "bad.key") {
		t.Errorf("bad key file: exit %d:\n%s", code, out)
	}

	// A port in use.
	_, a := server(t)
	if code, out := runBin(t, "tickwire-server", "-listen", a.udp, "-http", "", "-admin", "", "-key-file", filepath.Join(dir, "k2.key")); code != 1 || !strings.Contains(out, "address already in use") {
		t.Errorf("UDP port in use: exit %d:\n%s", code, out)
	}

	// Garbage at the game port: every datagram is dropped and counted, or
	// (a garbage connection request that parses) answered with a denial;
	// the server stays up.
	c, err := net.Dial("udp", a.udp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1500)
	const n = 2000
	for i := range n {
		k := 1 + i%1400
		rand.Read(buf[:k])
		if i%3 == 0 && k > 4 {
			copy(buf, "tw\x01") // a valid prefix, garbage after it
		}
		c.Write(buf[:k])
	}
	// The bots' own check: a real client still connects and plays.
	s, code := bots(t, "-server", "http://"+a.http, "-n", "2", "-duration", "1s")
	if code != 0 || s.Connected != 2 {
		t.Fatalf("after garbage: bots exit %d, %+v", code, s)
	}
	resp, err := http.Get("http://" + a.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	var dropped float64
	for _, match := range regexp.MustCompile(`(?m)^tickwire_(?:dropped_packets_total\{reason="[a-z_]+"\}|handshakes_denied_total) (\S+)$`).FindAllStringSubmatch(string(m), -1) {
		v, _ := strconv.ParseFloat(match[1], 64)
		dropped += v
	}
	if dropped < n {
		t.Fatalf("%v datagrams counted as dropped or denied, sent %d of garbage:\n%s", dropped, n, m)
	}
}
