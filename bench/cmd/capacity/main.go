// Command capacity finds how many players one tickwire-server holds: it
// starts the server and tickwire-bot processes on loopback, adds players
// in steps and, after each step's warm-up, measures over a hold period
// the server's tick duration (p50/p99 from its Prometheus histogram), its
// CPU (cores, and µs per player and tick) and memory, the machine's
// CPUs, bandwidth per client both ways, the bots' CPU, desyncs and the
// inputs the game ran without. It stops at the first step whose p99
// tick exceeds the tick budget (16.7 ms at 60 Hz), that desyncs, that
// lost players or whose game ran without more than 1 % of the players'
// inputs, and prints a markdown table and the largest count held. It
// draws the run as an SVG (-svg) and, with -profile, keeps a CPU profile
// of the server at the largest held step (`go tool pprof -top` lines).
//
//	go run ./bench/cmd/capacity                                  # 200, 300, ... 1000
//	go run ./bench/cmd/capacity -start 700 -step 100 -max 1000 -hold 30s
//
// The bots are headless tickwire-bot processes (one added per step, or
// with -fresh-bots one per step replacing the last, its players joining
// again) whose clients run on ClientGroups; -verify of each process's
// clients rebuild the state and check the server's checksums, the
// others only ack. By
// default nothing is pinned: the server builds packets on every core
// (Config.Workers) and the bots share them; -pin split keeps the old
// layout (server on CPU 0, bots on the others) for comparison.
//
// The bots stand in for clients on other machines, so by default they
// run at Linux's SCHED_IDLE priority (chrt -i): on the CPUs the server
// shares with them they take only what it leaves, as remote clients
// would take none, instead of holding a core for a time slice when a
// build worker wakes. Whether they keep up shows in the inputs the game
// ran without (a step fails beyond 1 %), their CPU and their upload
// rate. -bot-priority normal runs them as any process, for comparison.
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
	"slices"
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
	snapshotInterval int
	inputInterval    int
	npcs             int
	verify           int
	groups           int
	freshBots        bool
	pin              string
	botPriority      string
	binDir           string
	svg              string
	profile          string
}

// parseFlags reads and checks the flags.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.start, "start", 200, "players in the first step")
	fs.IntVar(&o.step, "step", 100, "players added per step")
	fs.IntVar(&o.max, "max", 1000, "stop after the step with this many players")
	fs.DurationVar(&o.hold, "hold", 30*time.Second, "measurement window per step: the count must hold this long")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "settling time after adding players, before measuring")
	fs.IntVar(&o.tick, "tick", 60, "server tick rate (Hz)")
	fs.IntVar(&o.snapshotInterval, "snapshot-interval", 1, "tickwire-server -snapshot-interval: ticks between a player's snapshots (1..8)")
	fs.IntVar(&o.inputInterval, "input-interval", 1, "tickwire-bot -input-interval: ticks between a bot's packets (1..4)")
	fs.IntVar(&o.npcs, "npcs", 300, "NPCs in the arena")
	fs.IntVar(&o.verify, "verify", 10, "clients of each bot process that rebuild the state and check the server's checksums (the others only ack)")
	fs.BoolVar(&o.freshBots, "fresh-bots", false, "replace the bots at each step by one process with all its players (they join again), so that a step costs\nwhat a run of that size alone does; without it each step adds a process of -step players, and each process has its\n-verify clients and its own client groups")
	fs.IntVar(&o.groups, "groups", 0, "tickwire-bot -groups: client groups per bot process (0: the bot's default, GOMAXPROCS)")
	fs.StringVar(&o.pin, "pin", "none", "CPU pinning (taskset): none; split (server on CPU 0, bots on the others); or bots (bots on\nthe CPUs but 0, the server anywhere: CPU 0 is the server's alone, the others it shares with the bots)")
	fs.StringVar(&o.botPriority, "bot-priority", "idle", "the bots' scheduling: idle (SCHED_IDLE, chrt -i: they take only the CPU the server leaves, as clients\non other machines would take none) or normal")
	fs.StringVar(&o.binDir, "bin", "", "`directory` holding tickwire-server and tickwire-bot (default: build them)")
	fs.StringVar(&o.svg, "svg", "bench/capacity.svg", "write the curve to this SVG `file` (empty: none)")
	fs.StringVar(&o.profile, "profile", "", "profile the server during each step and write the largest held step's `go tool pprof -top` to this file, and the profile itself beside it as .pprof (empty: none)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	case o.start < 1:
		return o, fmt.Errorf("-start %d: need at least 1 player", o.start)
	case o.step < 1:
		return o, fmt.Errorf("-step %d: need at least 1 player per step", o.step)
	case o.max < o.start:
		return o, fmt.Errorf("-max %d is below -start %d", o.max, o.start)
	case o.max > 5000:
		return o, fmt.Errorf("-max %d: at most 5000 players", o.max)
	case o.hold < time.Second:
		return o, fmt.Errorf("-hold %v: at least 1s", o.hold)
	case o.warmup < 0:
		return o, fmt.Errorf("-warmup %v is negative", o.warmup)
	case o.tick < 1 || o.tick > 1000:
		return o, fmt.Errorf("-tick %d out of range 1..1000", o.tick)
	case o.snapshotInterval < 1 || o.snapshotInterval > 8:
		return o, fmt.Errorf("-snapshot-interval %d out of range 1..8", o.snapshotInterval)
	case o.inputInterval < 1 || o.inputInterval > 4:
		return o, fmt.Errorf("-input-interval %d out of range 1..4", o.inputInterval)
	case o.npcs < 0 || o.npcs > 4000:
		return o, fmt.Errorf("-npcs %d out of range 0..4000", o.npcs)
	case o.verify < 0:
		return o, fmt.Errorf("-verify %d is negative", o.verify)
	case o.groups < 0 || o.groups > 256:
		return o, fmt.Errorf("-groups %d out of range 0..256", o.groups)
	case o.pin != "none" && o.pin != "split" && o.pin != "bots":
		return o, fmt.Errorf("-pin %q: want none, split or bots", o.pin)
	case o.pin != "none" && runtime.NumCPU() < 2:
		return o, fmt.Errorf("-pin %s needs 2 CPUs, this machine has %d", o.pin, runtime.NumCPU())
	case o.botPriority != "idle" && o.botPriority != "normal":
		return o, fmt.Errorf("-bot-priority %q: want idle or normal", o.botPriority)
	}
	if o.pin != "none" {
		if _, err := exec.LookPath("taskset"); err != nil {
			return o, fmt.Errorf("-pin %s needs taskset (util-linux) on the PATH", o.pin)
		}
	}
	if o.botPriority == "idle" {
		if _, err := exec.LookPath("chrt"); err != nil {
			return o, errors.New("-bot-priority idle needs chrt (util-linux) on the PATH and Linux's SCHED_IDLE; use -bot-priority normal elsewhere")
		}
	}
	if o.binDir != "" {
		for _, b := range []string{"tickwire-server", "tickwire-bot"} {
			if _, err := os.Stat(filepath.Join(o.binDir, b)); err != nil {
				return o, fmt.Errorf("-bin %s: %w", o.binDir, err)
			}
		}
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "capacity: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func run(ctx context.Context, o options) error {
	if o.binDir == "" {
		dir, err := os.MkdirTemp("", "tickwire-capacity")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		logf("building tickwire-server and tickwire-bot")
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/tickwire-server", "./cmd/tickwire-bot")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building (run from the repository root): %w", err)
		}
		o.binDir = dir
	}
	serverCPUs, botCPUs := "", ""
	switch o.pin {
	case "split":
		serverCPUs, botCPUs = "0", fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	case "bots":
		botCPUs = fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	}
	keyFile := filepath.Join(os.TempDir(), fmt.Sprintf("tickwire-capacity-%d.key", os.Getpid()))
	defer os.Remove(keyFile)

	srvArgs := []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-key-file", keyFile, "-log-level", "info",
		"-dev-join", "-join-rate", "10000", "-join-burst", "10000", // the bots' tokens, all from loopback
		"-max-players", strconv.Itoa(o.max + o.step), "-tick", strconv.Itoa(o.tick), "-npcs", strconv.Itoa(o.npcs),
		"-snapshot-interval", strconv.Itoa(o.snapshotInterval)}
	if o.profile != "" {
		srvArgs = append(srvArgs, "-pprof")
	}
	srv, err := startProc(serverCPUs, false, filepath.Join(o.binDir, "tickwire-server"), srvArgs...)
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
	base, admin := "http://"+httpAddr, "http://"+adminAddr
	budget := time.Second / time.Duration(o.tick)
	cpus := runtime.NumCPU()
	title := fmt.Sprintf("tickwire-server: arena, %d NPCs, %d Hz%s; %d × %s; pinning %s; bots at %s priority", o.npcs, o.tick, rates(o.tick, o.snapshotInterval, o.inputInterval), cpus, cpuModel(), o.pin, o.botPriority)
	logf("server pid %d at %s, tick %d Hz (budget %v), %d NPCs, %d CPUs (%s), pinning %s",
		srv.cmd.Process.Pid, httpAddr, o.tick, budget, o.npcs, cpus, cpuModel(), o.pin)

	var bots []*proc
	defer func() {
		for _, b := range bots {
			b.stop()
		}
	}()
	var rows []row
	var heldProfile []byte
	for n := o.start; n <= o.max; n += o.step {
		add := n
		if len(bots) > 0 && o.freshBots {
			logf("step %d players: stopping the last step's bots", n)
			for _, b := range bots {
				b.stop()
			}
			bots = nil
			if err := awaitPlayersGone(ctx, admin+"/metrics", 30*time.Second); err != nil {
				return err
			}
		} else if len(bots) > 0 {
			add = o.step
		}
		logf("step %d players: starting %d bots", n, add)
		args := []string{"-server", base, "-n", strconv.Itoa(add), "-duration", "24h", "-progress", "0",
			"-ramp-up", "2s", "-echo-every", "1s", "-headless", "-verify", strconv.Itoa(min(o.verify, add)),
			"-input-interval", strconv.Itoa(o.inputInterval)}
		if o.groups > 0 {
			args = append(args, "-groups", strconv.Itoa(o.groups))
		}
		b, err := startProc(botCPUs, o.botPriority == "idle", filepath.Join(o.binDir, "tickwire-bot"), args...)
		if err != nil {
			return err
		}
		bots = append(bots, b)
		if err := awaitPlayers(ctx, admin+"/metrics", n, bots, 30*time.Second+o.warmup); err != nil {
			return err
		}
		logf("step %d players: all connected, warming up %v", n, o.warmup)
		if err := sleep(ctx, o.warmup); err != nil {
			return err
		}
		before, err := sample(admin+"/metrics", srv, bots)
		if err != nil {
			return err
		}
		logf("step %d players: measuring for %v", n, o.hold)
		prof := make(chan []byte, 1)
		if o.profile != "" {
			go func() { prof <- fetchProfile(admin, min(o.hold, 20*time.Second)) }()
		}
		if err := sleep(ctx, o.hold); err != nil {
			return err
		}
		after, err := sample(admin+"/metrics", srv, bots)
		if err != nil {
			return err
		}
		// Players gone during the step mean a bot process died, or the
		// server dropped them: either way its numbers are not a step's.
		if err := exited(bots); err != nil {
			return fmt.Errorf("step %d players: %w", n, err)
		}
		r := diff(before, after, n, o.tick)
		playersLost := r.players < float64(n)*0.99
		if playersLost {
			logf("step %d players: only %v players connected at the end; disconnected during the step: %s; the bots said:\n%s",
				n, r.players, disconnectsBetween(before, after), botTail(bots))
		}
		r.held = r.p99 <= budget && r.desyncs == 0 && !playersLost && r.inputsMissing <= maxInputsMissing
		rows = append(rows, r)
		logf("step %d players: %s", n, r.summary())
		if o.profile != "" {
			if p := <-prof; r.held && p != nil {
				heldProfile = p
			}
		}
		if !r.held {
			break
		}
	}
	fmt.Println()
	procs := "a process added per step"
	if o.freshBots {
		procs = "one process per step, joined afresh"
	}
	fmt.Printf("Capacity run, %s; hold %v after %v warm-up; bots: headless, %s, %d verifying per process\n\n", title, o.hold, o.warmup, procs, o.verify)
	printTable(os.Stdout, rows, cpus)
	held := 0
	for _, r := range rows {
		if r.held {
			held = r.target
		}
	}
	if held == 0 {
		fmt.Printf("\n**Not even %d players held at %d Hz.**\n", o.start, o.tick)
	} else {
		fmt.Printf("\n**Held %d players at %d Hz for %v.**\n", held, o.tick, o.hold)
	}
	if o.svg != "" {
		if err := writeChart(o.svg, title, rows, budget, cpus); err != nil {
			return err
		}
		logf("wrote %s", o.svg)
	}
	if o.profile != "" {
		if heldProfile == nil {
			logf("no profile of a held step: %s not written", o.profile)
		} else if err := writeProfileTop(o.profile, filepath.Join(o.binDir, "tickwire-server"), heldProfile, held); err != nil {
			return err
		} else {
			logf("wrote %s and the profile itself to %s (go tool pprof -peek, -list...)", o.profile, rawProfileName(o.profile))
		}
	}
	return nil
}

// awaitPlayers polls the server until it counts want players, or fails
// after timeout (or when a bot process exited).
func awaitPlayers(ctx context.Context, metrics string, want int, bots []*proc, timeout time.Duration) error {
	return awaitCount(ctx, metrics, bots, timeout, func(players float64) bool { return players >= float64(want) },
		func(players float64) error { return fmt.Errorf("%v players of %d after %v", players, want, timeout) })
}

// awaitPlayersGone polls the server until every player left (the bots
// were stopped), or fails after timeout.
func awaitPlayersGone(ctx context.Context, metrics string, timeout time.Duration) error {
	return awaitCount(ctx, metrics, nil, timeout, func(players float64) bool { return players == 0 },
		func(players float64) error {
			return fmt.Errorf("%v players still connected after %v", players, timeout)
		})
}

// awaitCount polls the server's player count until done accepts it;
// after timeout it fails with late's error, and at once when one of the
// bot processes exited.
func awaitCount(ctx context.Context, metrics string, bots []*proc, timeout time.Duration, done func(float64) bool, late func(float64) error) error {
	deadline := time.Now().Add(timeout)
	for {
		r, err := sample(metrics, nil, nil)
		if err != nil {
			return err
		}
		if done(r.players) {
			return nil
		}
		if err := exited(bots); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return late(r.players)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// exited reports a bot process that exited, with its output.
func exited(bots []*proc) error {
	for _, b := range bots {
		select {
		case <-b.done:
			return fmt.Errorf("a tickwire-bot exited:\n%s", b.output())
		default:
		}
	}
	return nil
}

// fetchProfile takes a CPU profile of the server over d (nil on failure).
func fetchProfile(admin string, d time.Duration) []byte {
	resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", admin, int(d.Seconds())))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	return b
}

// rawProfileName is where the profile itself goes beside its -top
// text: file with its extension replaced by .pprof (or .pprof added,
// when that is file's own extension).
func rawProfileName(file string) string {
	if raw := strings.TrimSuffix(file, filepath.Ext(file)) + ".pprof"; raw != file {
		return raw
	}
	return file + ".pprof"
}

// writeProfileTop writes `go tool pprof -top` of the profile to file, and
// the profile itself (symbolized by the server, so readable without the
// binary) beside it, for a closer look.
func writeProfileTop(file, binary string, profile []byte, players int) error {
	raw := rawProfileName(file)
	if err := os.WriteFile(raw, profile, 0o644); err != nil {
		return err
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", binary, raw).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof: %w", err)
	}
	head := fmt.Sprintf("CPU profile of tickwire-server at %d players, the largest step held (go tool pprof -top)\n\n", players)
	return os.WriteFile(file, append([]byte(head), out...), 0o644)
}

// writeChart draws the rows into an SVG file.
func writeChart(file, title string, rows []row, budget time.Duration, cpus int) error {
	pts := make([]point, len(rows))
	for i, r := range rows {
		pts[i] = point{players: float64(r.target), p50: ms(r.p50), p99: ms(r.p99), serverCPU: r.serverCPU, botCPU: r.botCPU, held: r.held}
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := writeSVG(f, title, pts, ms(budget), float64(cpus)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reading is one sample of the server's metrics, the processes' CPU and
// the machine's CPUs.
type reading struct {
	at        time.Time
	buckets   map[float64]float64 // le → cumulative count
	count     float64
	players   float64
	bytesOut  float64
	bytesIn   float64
	desyncs   float64
	missing   float64 // player ticks the game ran without the player's input
	sockDrops float64 // the kernel's drops on the server's socket
	// disconnects counts the connections ended, by reason
	disconnects map[string]float64
	serverCPU   time.Duration
	botCPU      time.Duration
	rssMB       float64
	machine     []cpuTimes // per CPU, from /proc/stat
}

// maxInputsMissing is the largest share of the player ticks a step's
// game may run without the player's input and hold: more means inputs
// came late, the server's or the bots' fault.
const maxInputsMissing = 0.01

var metricLine = regexp.MustCompile(`^(\w+)(\{[^}]*\})? (\S+)$`)

// sample reads the metrics and, for non-nil processes, their CPU.
func sample(metrics string, srv *proc, bots []*proc) (reading, error) {
	r := reading{at: time.Now(), buckets: map[float64]float64{}, disconnects: map[string]float64{}}
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
			switch {
			case strings.Contains(m[2], `"out"`):
				r.bytesOut = v
			case strings.Contains(m[2], `"in"`):
				r.bytesIn = v
			}
		case "tickwire_desyncs_total":
			r.desyncs = v
		case "tickwire_inputs_missing_total":
			r.missing = v
		case "tickwire_socket_drops_total":
			r.sockDrops = v
		case "tickwire_disconnects_total":
			r.disconnects[strings.TrimSuffix(strings.TrimPrefix(m[2], `{reason="`), `"}`)] = v
		}
	}
	if srv != nil {
		r.serverCPU = cpuTime(srv.cmd.Process.Pid)
		r.rssMB = rss(srv.cmd.Process.Pid)
	}
	for _, b := range bots {
		r.botCPU += cpuTime(b.cmd.Process.Pid)
	}
	r.machine = machineCPU()
	return r, sc.Err()
}

// row is one step's figures.
type row struct {
	target            int
	players           float64
	p50, p99, max     time.Duration
	serverCPU, botCPU float64   // cores
	machineBusy       []float64 // per CPU, share of the time busy (all processes)
	rssMB             float64
	downKbps, upKbps  float64 // per client
	botUsPerTick      float64 // bot CPU per client and tick
	serverUsPerTick   float64 // server CPU per player and tick it ran
	desyncs           float64
	inputsMissing     float64 // share of the player ticks run without the player's input
	sockDrops         float64 // datagrams the server's socket dropped per second
	tickRate          float64 // ticks the server ran per second
	held              bool
}

// diff turns two readings into the step's figures: percentiles from the
// histogram's bucket deltas (upper bound of the bucket holding the
// percentile). The bots tick at tickRate whether the server keeps up or
// not: their cost per client-tick is per nominal tick.
func diff(a, b reading, target, tickRate int) row {
	r := row{target: target, players: b.players, rssMB: b.rssMB}
	wall := b.at.Sub(a.at).Seconds()
	r.serverCPU = (b.serverCPU - a.serverCPU).Seconds() / wall
	r.botCPU = (b.botCPU - a.botCPU).Seconds() / wall
	if b.players > 0 {
		r.downKbps = (b.bytesOut - a.bytesOut) * 8 / 1000 / wall / b.players
		r.upKbps = (b.bytesIn - a.bytesIn) * 8 / 1000 / wall / b.players
	}
	r.desyncs = b.desyncs - a.desyncs
	r.sockDrops = (b.sockDrops - a.sockDrops) / wall
	n := b.count - a.count
	r.tickRate = n / wall
	if b.players > 0 && n > 0 {
		r.inputsMissing = (b.missing - a.missing) / (b.players * n)
	}
	if b.players > 0 {
		r.botUsPerTick = r.botCPU * 1e6 / b.players / float64(tickRate)
		if r.tickRate > 0 {
			r.serverUsPerTick = r.serverCPU * 1e6 / b.players / r.tickRate
		}
	}
	for i := range min(len(a.machine), len(b.machine)) {
		total := b.machine[i].total - a.machine[i].total
		if total > 0 {
			r.machineBusy = append(r.machineBusy, 1-(b.machine[i].idle-a.machine[i].idle)/total)
		}
	}
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
	r.p50, r.p99, r.max = pct(0.5), pct(0.99), pct(1)
	return r
}

func (r row) summary() string {
	return fmt.Sprintf("%.0f players, tick p50 %.2f ms p99 %.2f ms, %.1f ticks/s, server %.2f cores (%.1f µs per player-tick), bots %.2f cores (%.1f µs per client-tick), socket drops %.0f/s, desyncs %.0f, inputs missing %.2f %%, held %v",
		r.players, ms(r.p50), ms(r.p99), r.tickRate, r.serverCPU, r.serverUsPerTick, r.botCPU, r.botUsPerTick, r.sockDrops, r.desyncs, r.inputsMissing*100, r.held)
}

// printTable writes the rows as a markdown table. Ticks per second below
// the tick rate mean the server fell behind: its ticks came late, each
// stepping the game more than once.
func printTable(w io.Writer, rows []row, cpus int) {
	fmt.Fprintln(w, "| players | tick p50 | tick p99 | ticks/s | server CPU (cores) | server µs per player-tick | CPUs busy | server RSS | down / up kbit/s per client | bot CPU (cores) | bot µs per client-tick | socket drops/s | desyncs | inputs missing | held |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		busy := make([]string, len(r.machineBusy))
		for i, b := range r.machineBusy {
			busy[i] = fmt.Sprintf("%.0f %%", b*100)
		}
		held := "no"
		if r.held {
			held = "yes"
		}
		fmt.Fprintf(w, "| %.0f | %.2f ms | %.2f ms | %.1f | %.2f of %d | %.1f | %s | %.0f MB | %.0f / %.0f | %.2f | %.1f | %.0f | %.0f | %.2f %% | %s |\n",
			r.players, ms(r.p50), ms(r.p99), r.tickRate, r.serverCPU, cpus, r.serverUsPerTick, strings.Join(busy, ", "), r.rssMB, r.downKbps, r.upKbps, r.botCPU, r.botUsPerTick, r.sockDrops, r.desyncs, r.inputsMissing*100, held)
	}
}

// cpuTimes are one CPU's jiffies from /proc/stat.
type cpuTimes struct{ total, idle float64 }

// machineCPU reads every CPU's times (nil where /proc/stat is missing).
func machineCPU() []cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	var cpus []cpuTimes
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var t cpuTimes
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			t.total += x
			if i == 3 || i == 4 { // idle, iowait
				t.idle += x
			}
		}
		cpus = append(cpus, t)
	}
	return cpus
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

// startProc starts path with args, on cpus (a taskset list) unless
// empty, and at SCHED_IDLE priority if idle.
func startProc(cpus string, idle bool, path string, args ...string) (*proc, error) {
	if cpus != "" {
		args = append([]string{"-c", cpus, path}, args...)
		path = "taskset"
	}
	if idle {
		args = append([]string{"-i", "0", path}, args...)
		path = "chrt"
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

// disconnectsBetween lists the connections the server ended between two
// readings, by reason ("none" if it ended none).
func disconnectsBetween(a, b reading) string {
	var parts []string
	for reason, v := range b.disconnects {
		if d := v - a.disconnects[reason]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", reason, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// botTail is the last lines of every bot process's output.
func botTail(bots []*proc) string {
	var b strings.Builder
	for _, p := range bots {
		lines := strings.Split(strings.TrimRight(p.output(), "\n"), "\n")
		for _, l := range lines[max(0, len(lines)-20):] {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// await polls the process's output for re's first group.
func (p *proc) await(re string, timeout time.Duration) (string, error) {
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for time.Now().Before(deadline) {
		if m := rx.FindStringSubmatch(p.output()); m != nil {
			return m[1], nil
		}
		select {
		case <-p.done:
			return "", errors.New("tickwire-server exited:\n" + p.output())
		case <-poll.C:
		}
	}
	return "", errors.New("server did not start:\n" + p.output())
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

// rates names the players' snapshot and input rates where they are not
// the tick rate.
func rates(tick, snapshots, inputs int) string {
	var parts []string
	if snapshots > 1 {
		parts = append(parts, fmt.Sprintf("snapshots %.4g Hz", float64(tick)/float64(snapshots)))
	}
	if inputs > 1 {
		parts = append(parts, fmt.Sprintf("inputs %.4g Hz", float64(tick)/float64(inputs)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
