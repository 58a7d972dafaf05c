// Package tshark is a test helper that captures live traffic with tshark
// and reads fields back, for tests that check what actually went on the
// wire (DSCP marks, the Wireshark dissector on real packets).
//
// Policy for the external tool: without tshark a test skips, unless the
// environment variable TICKWIRE_REQUIRE_TOOLS is set (./test.sh sets it
// and installs tshark), in which case it fails.
//
//	c := tshark.Start(t, tshark.Options{Filter: "udp port 7777"})
//	... send traffic over loopback ...
//	rows := c.Fields("ip.dsfield.dscp == 46", "ip.src", "udp.dstport")
//
// Start returns only once tshark is really capturing: it sends probe
// datagrams over loopback until tshark reports one. Stop (called by
// Fields, and by t.Cleanup) sends a final probe, waits until tshark has
// seen it, so everything sent before is in the capture file, then stops
// tshark. Probes never appear in Fields' results.
package tshark

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing tool from a
// skip into a failure.
const RequireEnv = "TICKWIRE_REQUIRE_TOOLS"

// Look returns tshark's path, or skips (fails under RequireEnv) the test.
func Look(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("tshark not found and %s is set: %v", RequireEnv, err)
		}
		t.Skip("tshark not installed; ./test.sh installs it")
	}
	return path
}

// Options configures a capture.
type Options struct {
	// Interface to capture on; it must carry 127.0.0.1 traffic, which the
	// readiness probes use. Empty selects "lo".
	Interface string
	// Filter is a capture (BPF) filter for the traffic under test, e.g.
	// "udp port 7777"; empty captures everything.
	Filter string
	// Timeout bounds waiting for tshark to start or to see the final
	// probe; zero selects 30 s.
	Timeout time.Duration
}

// Capture is a running or finished tshark capture.
type Capture struct {
	t       testing.TB
	tshark  string
	path    string
	timeout time.Duration

	cmd     *exec.Cmd
	stderr  bytes.Buffer
	exited  chan struct{} // closed when tshark has exited
	waitErr error

	probe, sink *net.UDPConn
	seen        chan int // udp.length of each probe tshark printed
	stopped     bool
}

// Probe payloads; tshark reports them by UDP length (8 + payload).
const (
	readyProbe = "tickwire-tshark-ready"
	stopProbe  = "tickwire-tshark-stop"
	udpHeader  = 8
)

// Start begins a capture and returns once tshark is capturing. It calls
// t.Fatal if tshark cannot start, and skips if it is missing (see Look).
func Start(t testing.TB, opt Options) *Capture {
	t.Helper()
	c := &Capture{t: t, tshark: Look(t), timeout: opt.Timeout}
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	iface := opt.Interface
	if iface == "" {
		iface = "lo"
	}
	var err error
	if c.sink, err = listenLoopback(); err != nil {
		t.Fatal(err)
	}
	if c.probe, err = listenLoopback(); err != nil {
		c.sink.Close()
		t.Fatal(err)
	}
	c.path = filepath.Join(t.TempDir(), "capture.pcapng")

	filter := c.probeFilter()
	if opt.Filter != "" {
		filter = "(" + opt.Filter + ") or (" + filter + ")"
	} else {
		filter = ""
	}
	args := []string{"-i", iface, "-w", c.path, "-P", "-l",
		"-T", "fields", "-E", "separator=/t", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "udp.length"}
	if filter != "" {
		args = append(args, "-f", filter)
	}
	c.cmd = exec.Command(c.tshark, args...)
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start tshark: %v", err)
	}
	c.exited = make(chan struct{})
	c.seen = make(chan int, 1024)
	go c.scan(stdout)
	t.Cleanup(c.Stop)

	if err := c.await(readyProbe); err != nil {
		c.kill()
		t.Fatalf("tshark %s did not start capturing: %v\n%s", strings.Join(args, " "), err, c.stderr.String())
	}
	return c
}

func listenLoopback() (*net.UDPConn, error) {
	return net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
}

func (c *Capture) probeFilter() string {
	return fmt.Sprintf("udp and src port %d and dst port %d", port(c.probe), port(c.sink))
}

func (c *Capture) probeDisplayFilter() string {
	return fmt.Sprintf("udp.srcport == %d && udp.dstport == %d", port(c.probe), port(c.sink))
}

func port(uc *net.UDPConn) int { return uc.LocalAddr().(*net.UDPAddr).Port }

// scan reads tshark's per-packet lines and reports probes.
func (c *Capture) scan(stdout io.Reader) {
	src, dst := strconv.Itoa(port(c.probe)), strconv.Itoa(port(c.sink))
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 || f[0] != src || f[1] != dst {
			continue
		}
		if n, err := strconv.Atoi(f[2]); err == nil {
			select {
			case c.seen <- n:
			default: // nobody waiting for this many probes
			}
		}
	}
	io.Copy(io.Discard, stdout)
	c.waitErr = c.cmd.Wait()
	close(c.exited)
}

// await sends the probe until tshark reports it.
func (c *Capture) await(payload string) error {
	want := udpHeader + len(payload)
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	resend := time.NewTicker(50 * time.Millisecond)
	defer resend.Stop()
	for {
		if _, err := c.probe.WriteTo([]byte(payload), c.sink.LocalAddr()); err != nil {
			return err
		}
		for waiting := true; waiting; {
			select {
			case n := <-c.seen:
				if n == want {
					return nil
				}
			case <-resend.C:
				waiting = false
			case <-c.exited:
				return fmt.Errorf("tshark exited: %v", c.waitErr)
			case <-deadline.C:
				return fmt.Errorf("no probe seen within %v", c.timeout)
			}
		}
	}
}

// Path is the capture file (pcapng), complete after Stop.
func (c *Capture) Path() string { return c.path }

// Stop makes sure everything sent so far is captured, then stops tshark.
// It is idempotent.
func (c *Capture) Stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	defer c.sink.Close()
	defer c.probe.Close()
	if err := c.await(stopProbe); err != nil {
		c.kill()
		c.t.Errorf("tshark did not see the final probe: %v\n%s", err, c.stderr.String())
		return
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
	case <-time.After(c.timeout):
		c.kill()
		c.t.Errorf("tshark did not exit on SIGINT\n%s", c.stderr.String())
	}
}

func (c *Capture) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

// Fields stops the capture if needed and returns, for every captured
// packet matching the display filter (empty: all), one row with the
// values of the named fields. A field that occurs several times in a
// packet gives all occurrences joined by commas (-E occurrence=a); an
// absent field gives "". Probe datagrams are excluded.
func (c *Capture) Fields(displayFilter string, fields ...string) [][]string {
	c.t.Helper()
	args := []string{"-T", "fields", "-E", "occurrence=a", "-E", "separator=/t"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out := c.Read(displayFilter, args...)
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// Read stops the capture if needed and runs tshark over the capture file
// with the display filter (probes excluded) and the extra arguments (for
// example "-X", "lua_script:dissector.lua", "-V"), returning its output.
func (c *Capture) Read(displayFilter string, args ...string) string {
	c.t.Helper()
	c.Stop()
	filter := "!(" + c.probeDisplayFilter() + ")"
	if displayFilter != "" {
		filter = "(" + displayFilter + ") && " + filter
	}
	full := append([]string{"-r", c.path, "-Y", filter}, args...)
	cmd := exec.Command(c.tshark, full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || stderr.Len() > 0 {
			c.t.Fatalf("tshark %s: %v\n%s", strings.Join(full, " "), err, stderr.String())
		}
		c.t.Fatal(err)
	}
	return string(out)
}
