package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{}, "-listen is required"},
		{[]string{"-listen", ":0"}, "-upstream is required"},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-spec", "delay 50xs"}, `-spec: netem spec "delay 50xs": token 2 "50xs"`},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-up-spec", "loss 200%"}, `-up-spec: netem spec "loss 200%": token 2 "200%"`},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-down-spec", "reorder 5%"}, `-down-spec`},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-stats-interval", "-1s"}, "-stats-interval -1s is negative"},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-seed", "-3"}, "-seed -3 is negative"},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "delay", "50ms"}, `unexpected argument "delay"`},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-spec", "loss 1%", "-up-spec", "loss 2%", "-down-spec", "loss 3%"}, "-spec is unused"},
		{[]string{"-listen", ":0", "-upstream", "127.0.0.1:1", "-stats-interval", "soon"}, `invalid value "soon" for flag -stats-interval`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
	} {
		var out, errb strings.Builder
		if code := run(tc.args, &out, &errb, nil); code != 2 {
			t.Errorf("%q: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%q: stderr %q, want %q", tc.args, errb.String(), tc.msg)
		}
	}
	var out, errb strings.Builder
	if code := run([]string{"-listen", "127.0.0.1:0", "-upstream", "no-such-host.invalid:1"}, &out, &errb, nil); code != 1 || !strings.Contains(errb.String(), "upstream") {
		t.Errorf("bad upstream: exit %d, %q", code, errb.String())
	}
}

// syncBuffer is a goroutine-safe line source over run's stdout.
type syncBuffer struct {
	mu sync.Mutex
	w  *io.PipeWriter
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func TestProxyRunsAndReports(t *testing.T) {
	srv, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()

	pr, pw := io.Pipe()
	stop := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-upstream", srv.LocalAddr().String(),
			"-spec", "delay 5ms", "-down-spec", "delay 10ms duplicate 100%", "-seed", "42", "-stats-interval", "0"},
			&syncBuffer{w: pw}, io.Discard, stop)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	first := next()
	m := regexp.MustCompile(`listening on (\S+), forwarding to \S+, seed 42$`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q", first)
	}
	if up, down := next(), next(); !strings.Contains(up, "up   (client → upstream): delay 5ms") ||
		!strings.Contains(down, "down (upstream → client): delay 10ms duplicate 100%") {
		t.Fatalf("spec lines %q, %q", up, down)
	}

	cli, err := net.Dial("udp4", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := cli.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	for range 2 { // the reply is duplicated
		if n, err := cli.Read(buf); err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("reply %q: %v", buf[:n], err)
		}
	}

	stop <- syscall.SIGINT
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	out := strings.Join(rest, "\n")
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"interrupt, stopping", "final stats", "up   offered=1 forwarded=1 ", "down offered=1 forwarded=2 dropped=0 overlimit=0 duplicated=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("final output lacks %q:\n%s", want, out)
		}
	}
}
