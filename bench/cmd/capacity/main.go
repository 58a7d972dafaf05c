// Command capacity finds how many players one tickwire-server holds: it
// starts the server and tickwire-bot processes on loopback, adds players
// in steps, and after each step measures, over a hold period, the
// server's tick duration (p50/p99 from its Prometheus histogram), its CPU
// and memory, bandwidth per client and desyncs. It stops at the first
// step whose p99 tick duration exceeds the tick budget (16.7 ms at 60 Hz)
// or that desyncs, and prints the highest count held.
//
//	go run ./bench/cmd/capacity                      # 100, 200, ... up to 1000
//	go run ./bench/cmd/capacity -start 400 -step 50 -hold 30s
//
// On a machine with at least two cores the server is pinned to CPU 0 and
// the bots to the others (taskset), so the bots cannot take the server's
// CPU; the table shows the bots' CPU use too, so a run in which the bots
// saturate their cores is recognisable.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	start, step, max int
	hold, warmup     time.Duration
	tick             int
	npcs             int
	binDir           string
}

func main() {
	o := options{}
	flag.IntVar(&o.start, "start", 100, "players in the first step")
	flag.IntVar(&o.step, "step", 100, "players added per step")
	flag.IntVar(&o.max, "max", 1000, "stop after this many players")
	flag.DurationVar(&o.hold, "hold", 30*time.Second, "measurement window per step (the count must hold this long)")
	flag.DurationVar(&o.warmup, "warmup", 10*time.Second, "settling time after adding players, before measuring")
	flag.IntVar(&o.tick, "tick", 60, "server tick rate")
	flag.IntVar(&o.npcs, "npcs", 300, "NPCs in the arena")
	flag.StringVar(&o.binDir, "bin", "", "directory holding tickwire-server and tickwire-bot (default: build them)")
	flag.Parse()
	if o.start < 1 || o.step < 1 || o.max < o.start || o.hold < time.Second || o.tick < 1 {
		fmt.Fprintln(os.Stderr, "capacity: bad flags (need start ≥ 1, step ≥ 1, max ≥ start, hold ≥ 1s)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.binDir == "" {
		dir, err := os.MkdirTemp("", "tickwire-capacity")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/tickwire-server", "./cmd/tickwire-bot")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building (run from the repository root): %w", err)
		}
		o.binDir = dir
	}
	pin := runtime.NumCPU() >= 2
	if _, err := exec.LookPath("taskset"); err != nil {
		pin = false
	}
	botCPUs := fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	keyFile := filepath.Join(os.TempDir(), fmt.Sprintf("tickwire-capacity-%d.key", os.Getpid()))
	defer os.Remove(keyFile)

	srv, err := startProc(pin, "0", filepath.Join(o.binDir, "tickwire-server"),
		"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-key-file", keyFile, "-log-level", "info",
		"-dev-join", "-join-rate", "10000", "-join-burst", "10000", // the bots' tokens, all from loopback
		"-max-players", strconv.Itoa(o.max+o.step), "-tick", strconv.Itoa(o.tick), "-npcs", strconv.Itoa(o.npcs))
	if err != nil {
		return err
	}
	defer srv.stop()
	httpAddr, err := srv.await(`msg="serving HTTP" addr=(\S+)`, 10*time.Second)
	if err != nil {
		return err
	}
	adminAddr, err := srv.await(`msg="serving admin" addr=(\S+)`, 10*time.Second)
	if err != nil {
		return err
	}
	base, metrics := "http://"+httpAddr, "http://"+adminAddr+"/metrics"
	budget := time.Second / time.Duration(o.tick)
	fmt.Printf("capacity: server pid %d at %s, tick %d Hz (budget %v), %d NPCs, %d CPUs (%s), pinned: %v\n",
		srv.cmd.Process.Pid, httpAddr, o.tick, budget, o.npcs, runtime.NumCPU(), cpuModel(), pin)
	fmt.Printf("%8s %9s %9s %9s %10s %9s %11s %11s %8s %8s\n", "players", "tick p50", "tick p99", "tick max", "server CPU", "RSS MB", "down kbit/s", "bot CPU", "desyncs", "held")

	var bots []*proc
	defer func() {
		for _, b := range bots {
			b.stop()
		}
	}()
	held := 0
	var heldLine string
	for n := o.start; n <= o.max; {
		add := n
		if len(bots) > 0 {
			add = o.step
		}
		// Headless bots: decoding, predicting and interpolating the
		// arena for every client (~215 µs a frame with rollbacks) would
		// make the bots, not the server, what saturates.
		b, err := startProc(pin, botCPUs, filepath.Join(o.binDir, "tickwire-bot"),
			"-server", base, "-n", strconv.Itoa(add), "-duration", "24h", "-progress", "0", "-ramp-up", "2s", "-echo-every", "1s", "-headless")
		if err != nil {
			return err
		}
		bots = append(bots, b)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.warmup):
		}
		before, err := sample(metrics, srv, bots)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.hold):
		}
		after, err := sample(metrics, srv, bots)
		if err != nil {
			return err
		}
		st := diff(before, after)
		ok := st.p99 <= budget && st.desyncs == 0 && after.players >= float64(n)*0.99
		line := fmt.Sprintf("%8.0f %9v %9v %9v %9.0f%% %9.0f %11.1f %10.0f%% %8.0f %8v",
			after.players, st.p50.Round(10*time.Microsecond), st.p99.Round(10*time.Microsecond), st.max.Round(10*time.Microsecond),
			st.serverCPU*100, after.rssMB, st.downKbps, st.botCPU*100, st.desyncs, ok)
		fmt.Println(line)
		if !ok {
			break
		}
		held, heldLine = n, line
		n += o.step
	}
	if held == 0 {
		fmt.Printf("capacity: not even %d players held at %d Hz\n", o.start, o.tick)
		return nil
	}
	fmt.Printf("capacity: held %d players for %v at %d Hz:\n%s\n", held, o.hold, o.tick, heldLine)
	return nil
}

// sample is one reading of the server's metrics and the processes' CPU.
type reading struct {
	at        time.Time
	buckets   map[float64]float64 // le → cumulative count
	count     float64
	players   float64
	bytesOut  float64
	desyncs   float64
	serverCPU time.Duration
	botCPU    time.Duration
	rssMB     float64
}

var metricLine = regexp.MustCompile(`^(\w+)(\{[^}]*\})? (\S+)$`)

func sample(metrics string, srv *proc, bots []*proc) (reading, error) {
	r := reading{at: time.Now(), buckets: map[float64]float64{}}
	resp, err := http.Get(metrics)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		switch m[1] {
		case "tickwire_tick_duration_seconds_bucket":
			le := strings.TrimSuffix(strings.TrimPrefix(m[2], `{le="`), `"}`)
			if f, err := strconv.ParseFloat(le, 64); err == nil {
				r.buckets[f] = v
			}
		case "tickwire_tick_duration_seconds_count":
			r.count = v
		case "tickwire_players":
			r.players = v
		case "tickwire_bytes_total":
			if strings.Contains(m[2], `"out"`) {
				r.bytesOut = v
			}
		case "tickwire_desyncs_total":
			r.desyncs = v
		}
	}
	r.serverCPU = cpuTime(srv.cmd.Process.Pid)
	for _, b := range bots {
		r.botCPU += cpuTime(b.cmd.Process.Pid)
	}
	r.rssMB = rss(srv.cmd.Process.Pid)
	return r, sc.Err()
}

type stepStats struct {
	p50, p99, max     time.Duration
	serverCPU, botCPU float64 // cores
	downKbps, desyncs float64
}

// diff turns two readings into the step's figures: percentiles from the
// histogram's bucket deltas (upper bound of the bucket holding the
// percentile).
func diff(a, b reading) stepStats {
	var st stepStats
	wall := b.at.Sub(a.at).Seconds()
	st.serverCPU = (b.serverCPU - a.serverCPU).Seconds() / wall
	st.botCPU = (b.botCPU - a.botCPU).Seconds() / wall
	if b.players > 0 {
		st.downKbps = (b.bytesOut - a.bytesOut) * 8 / 1000 / wall / b.players
	}
	st.desyncs = b.desyncs - a.desyncs
	n := b.count - a.count
	var les []float64
	for le := range b.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	pct := func(p float64) time.Duration {
		for _, le := range les {
			if b.buckets[le]-a.buckets[le] >= p*n {
				if le > 1e9 {
					return time.Duration(1<<63 - 1)
				}
				return time.Duration(le * float64(time.Second))
			}
		}
		return 0
	}
	st.p50, st.p99, st.max = pct(0.5), pct(0.99), pct(1)
	return st
}

func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which is in parentheses).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	return time.Duration((ut + stt) / 100 * float64(time.Second)) // USER_HZ = 100
}

func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(l[strings.IndexByte(l, ':')+1:])
		}
	}
	return runtime.GOARCH
}

// proc is a child process whose output is kept.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func startProc(pin bool, cpus, path string, args ...string) (*proc, error) {
	if pin {
		args = append([]string{"-c", cpus, path}, args...)
		path = "taskset"
	}
	p := &proc{cmd: exec.Command(path, args...), done: make(chan struct{})}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() { p.cmd.Wait(); pw.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) await(re string, timeout time.Duration) (string, error) {
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		m := rx.FindStringSubmatch(p.out.String())
		p.mu.Unlock()
		if m != nil {
			return m[1], nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return "", errors.New("server did not start:\n" + p.out.String())
}

func (p *proc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}
