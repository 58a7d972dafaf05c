package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/botproto"
)

// bin holds the binaries TestMain built.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tickwire-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "../tickwire-server", "../tickwire-bot", "../tickwire-netem")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running binary whose output is kept and scanned.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// start runs a built binary until the test ends (it is interrupted then).
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(filepath.Join(bin, name), args...))
}

// startCmd runs cmd (its own directory and environment, if set) until
// the test ends, as start does.
func startCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	name := filepath.Base(cmd.Path)
	p := &proc{cmd: cmd, done: make(chan struct{})}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.Write(sc.Bytes())
			p.out.WriteByte('\n')
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// seen returns a channel that receives the time the output first
// matches re (polled every 10 ms), and is closed without one if the
// process exits before.
func (p *proc) seen(re string) <-chan time.Time {
	rx := regexp.MustCompile(re)
	ch := make(chan time.Time, 1)
	go func() {
		defer close(ch)
		for !rx.MatchString(p.output()) {
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond): // polling the output for a line
			}
		}
		ch <- time.Now()
	}()
	return ch
}

// await waits until the output matches re and returns the first
// submatch.
func (p *proc) await(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if m := rx.FindStringSubmatch(p.output()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing /%s/:\n%s", p.cmd.Path, p.err, re, p.output())
		case <-time.After(10 * time.Millisecond): // polling the output for a line
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never printed /%s/:\n%s", p.cmd.Path, re, p.output())
		}
	}
}

// serverAddrs are where a tickwire-server started by server listens.
type serverAddrs struct {
	udp, http, admin string
}

// server starts tickwire-server on loopback with free ports and the
// bots' token endpoint (-dev-join), and returns it with its UDP, HTTP and
// operator addresses.
func server(t *testing.T, args ...string) (*proc, serverAddrs) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "server.key")
	p := start(t, "tickwire-server", append([]string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-key-file", key, "-dev-join"}, args...)...)
	return p, serverAddrs{
		udp:   p.await(t, `msg="serving game traffic" udp=(\S+)`),
		http:  p.await(t, `msg="serving HTTP" addr=(\S+)`),
		admin: p.await(t, `msg="serving admin" addr=(\S+)`),
	}
}

// bots runs tickwire-bot to completion and returns its summary.
func bots(t *testing.T, args ...string) (botproto.Summary, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "tickwire-bot"), append([]string{"-json", "-progress", "0"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var s botproto.Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("bot output (exit %d): %v\nstdout: %s\nstderr: %s", code, err, stdout.String(), stderr.String())
	}
	if code != 0 {
		t.Logf("tickwire-bot exit %d, stderr:\n%s", code, stderr.String())
	}
	return s, code
}
