// Command chaos plays peer-hosted games through host failures: it
// starts tickwire-server (the lobby) and -rooms rooms of -room-size
// tickwire-bot -peer players, each player's host port fronted by its
// own tickwire-netem (-spec, so every path to whichever player hosts is
// impaired both ways), and every -kill-every it takes the host of a
// random room down — SIGKILL, SIGTERM (a hand-over), or SIGSTOP for
// -stall then SIGCONT, at random — and on one kill in -double-every it
// SIGKILLs a second player of the room within 100 ms. A room whose game
// ended (too few players left, or lost) is replaced by a new one while
// time remains. At the end it reports the migrations, the gap of each
// (from the kill until every player left is back in play under the new
// host: p50/p99/max), the games lost, the inputs the new hosts ran
// without (resumed_missing), the reliable messages lost, duplicated or
// out of order (the bots' numbered echoes), the desyncs, and the memory
// (RSS) and threads of every process and the goroutines of every bot,
// at the start and at the end.
//
//	go run ./bench/cmd/chaos                       # 60 minutes, 16 rooms of 4
//	go run ./bench/cmd/chaos -duration 5m -rooms 8
//
// It builds the three commands into a temporary directory first (or
// takes them from -bin).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tickwire/tickwire/internal/botproto"
	"github.com/tickwire/tickwire/udp/netem"
)

type options struct {
	duration, killEvery, stall time.Duration
	rooms, size, doubleEvery   int
	spec, bin, logs            string
	seed                       uint64
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 60*time.Minute, "how long to play")
	fs.DurationVar(&o.killEvery, "kill-every", 20*time.Second, "interval between two kills")
	fs.DurationVar(&o.stall, "stall", 3*time.Second, "how long a SIGSTOP lasts before SIGCONT")
	fs.IntVar(&o.rooms, "rooms", 16, "peer-hosted rooms played at once (1..64)")
	fs.IntVar(&o.size, "room-size", 4, "players per room (3..16)")
	fs.IntVar(&o.doubleEvery, "double-every", 5, "one kill in `n` also SIGKILLs a second player of the room within 100 ms (0: never)")
	fs.StringVar(&o.spec, "spec", "delay 40ms 10ms loss 2%", "netem `spec` of every path to a host, both ways")
	fs.StringVar(&o.bin, "bin", "", "`directory` holding tickwire-server, tickwire-bot and tickwire-netem (default: build them)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the kills' choices")
	fs.StringVar(&o.logs, "logs", "", "write every process's output to `directory` (created) at the end")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.killEvery < time.Second:
		return o, fmt.Errorf("-kill-every %v: at least 1s", o.killEvery)
	case o.duration < 2*o.killEvery:
		return o, fmt.Errorf("-duration %v: at least two -kill-every (%v)", o.duration, 2*o.killEvery)
	case o.stall <= 0 || o.stall > time.Minute:
		return o, fmt.Errorf("-stall %v: between 0 and 1m", o.stall)
	case o.rooms < 1 || o.rooms > 64:
		return o, fmt.Errorf("-rooms %d: 1..64", o.rooms)
	case o.size < 3 || o.size > 16:
		return o, fmt.Errorf("-room-size %d: 3..16 (a room of two ends at its first kill)", o.size)
	case o.doubleEvery < 0:
		return o, fmt.Errorf("-double-every %d: 0 or more", o.doubleEvery)
	}
	if _, err := netem.Parse(o.spec); err != nil {
		return o, fmt.Errorf("-spec: %w", err)
	}
	if o.bin != "" {
		for _, c := range commands {
			if _, err := os.Stat(filepath.Join(o.bin, c)); err != nil {
				return o, fmt.Errorf("-bin: %w", err)
			}
		}
	}
	return o, nil
}

var commands = []string{"tickwire-server", "tickwire-bot", "tickwire-netem"}

func main() {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// proc is a process whose output (stdout and stderr) is kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
	// stopped: in a SIGSTOP now; killed: sent SIGKILL or SIGTERM
	stopped, killed atomic.Bool
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// await waits until the output matches re and returns its first group.
func (p *proc) await(re string, limit time.Duration) (string, error) {
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m := rx.FindStringSubmatch(p.output()); m != nil {
			if len(m) > 1 {
				return m[1], nil
			}
			return m[0], nil
		}
		if p.ended() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("%s: no %q within %v:\n%s", p.name, re, limit, tail(p.output()))
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

func start(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// mem is a process's resident memory (KiB) and threads, from /proc.
func mem(p *proc) (rssKiB, threads int) {
	if p.cmd.Process == nil || p.ended() {
		return 0, 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.Atoi(strings.Fields(v + " 0")[0])
		switch k {
		case "VmRSS":
			rssKiB = n
		case "Threads":
			threads = n
		}
	}
	return rssKiB, threads
}

// room is one peer-hosted game: its players (bots) and their proxies.
type room struct {
	done    bool // used up: fewer than two players left
	name    string
	bots    []*proc
	proxies []*proc
	started time.Time
}

// kill is one kill of a room's host.
type kill struct {
	room    *room
	mode    string // SIGKILL, SIGTERM, SIGSTOP
	at      time.Time
	epoch   int     // the host's
	victims []*proc // the host, and the second candidate if any
}

var (
	eventLine   = regexp.MustCompile(`peer event "([a-z ]+)" epoch=(\d+) slot=\d+ unix_ms=(\d+)`)
	hostingLine = regexp.MustCompile(`hosting epoch=(\d+) joins=\d+ resumed_missing=(\d+)`)
	playingLine = regexp.MustCompile(`tickwire-bot: playing goroutines=(\d+)`)
	lobbyWait   = regexp.MustCompile(`from your address: wait (\d+) s`)
)

// hostEpoch is the epoch p hosts under now (0: it does not host, as far
// as its events say).
func hostEpoch(p *proc) int {
	out := p.output()
	epoch := 0
	if strings.Contains(out, "role host") {
		epoch = 1
	}
	for _, m := range eventLine.FindAllStringSubmatch(out, -1) {
		e, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "promoted":
			epoch = e
		case "stepped down", "abandoned", "handed over":
			epoch = 0 // these name no epoch
		case "resumed", "following":
			if e > epoch {
				epoch = 0
			}
		}
	}
	return epoch
}

// backAt is when p was back in play under a host newer than epoch, and
// that host's epoch (0: not yet).
func backAt(p *proc, epoch int) (int64, int) {
	for _, m := range eventLine.FindAllStringSubmatch(p.output(), -1) {
		e, _ := strconv.Atoi(m[2])
		if e > epoch && (m[1] == "resumed" || m[1] == "promoted" || m[1] == "rejoined") {
			ms, _ := strconv.ParseInt(m[3], 10, 64)
			return ms, e
		}
	}
	return 0, 0
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.bin
	if bin == "" {
		bin = dir
		fmt.Fprintln(os.Stderr, "chaos: building", strings.Join(commands, ", "))
		args := append([]string{"build", "-o", dir + "/"}, "./cmd/tickwire-server", "./cmd/tickwire-bot", "./cmd/tickwire-netem")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	var (
		all   []*proc
		allMu sync.Mutex
	)
	launch := func(name, cmd string, args ...string) (*proc, error) {
		p, err := start(name, filepath.Join(bin, cmd), args...)
		if err == nil {
			allMu.Lock()
			all = append(all, p)
			allMu.Unlock()
		}
		return p, err
	}
	defer func() {
		allMu.Lock()
		defer allMu.Unlock()
		for _, p := range all {
			if !p.ended() {
				p.cmd.Process.Signal(syscall.SIGCONT)
				p.cmd.Process.Kill()
			}
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)

	srv, err := launch("server", "tickwire-server", "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-key-file", filepath.Join(dir, "server.key"), "-dev-join")
	if err != nil {
		return err
	}
	lobbyAddr, err := srv.await(`msg="serving HTTP" addr=(\S+)`, 30*time.Second)
	if err != nil {
		return err
	}
	end := time.Now().Add(o.duration)
	gen := 0
	newRoom := func() (*room, error) {
		gen++
		r := &room{name: fmt.Sprintf("chaos-%d", gen), started: time.Now()}
		play := time.Until(end).Round(time.Second)
		for i := range o.size {
			port, err := freeUDPPort()
			if err != nil {
				return nil, err
			}
			px, err := launch(fmt.Sprintf("%s netem %d", r.name, i+1), "tickwire-netem", "-listen", "127.0.0.1:0",
				"-upstream", fmt.Sprintf("127.0.0.1:%d", port), "-spec", o.spec, "-seed", fmt.Sprint(gen*100+i), "-stats-interval", "0")
			if err != nil {
				return nil, err
			}
			via, err := px.await(`listening on (\S+),`, 30*time.Second)
			if err != nil {
				return nil, err
			}
			_, offer, _ := net.SplitHostPort(via)
			var b *proc
			for try := 0; ; try++ {
				b, err = launch(fmt.Sprintf("%s p%d", r.name, i+1), "tickwire-bot", "-server", "http://"+lobbyAddr, "-peer", r.name,
					"-room-size", fmt.Sprint(o.size), "-duration", play.String(), "-json", "-name", fmt.Sprintf("p%d", i+1),
					"-seed", fmt.Sprint(gen*100+i), "-log-level", "warn", "-npcs", "8", "-host-port", fmt.Sprint(port), "-host-offer", offer)
				if err != nil {
					return nil, err
				}
				if _, err = b.await(`seated in room`, 30*time.Second); err == nil {
					break
				}
				// The lobby limits the joins and games from one address:
				// again when it says.
				m := lobbyWait.FindStringSubmatch(b.output())
				if m == nil || try == 30 {
					return nil, err
				}
				<-b.done
				wait, _ := strconv.Atoi(m[1])
				time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			}
			r.proxies, r.bots = append(r.proxies, px), append(r.bots, b)
		}
		for _, b := range r.bots {
			if _, err := b.await(`tickwire-bot: playing`, time.Minute); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	var rooms, ended []*room
	for range o.rooms {
		r, err := newRoom()
		if err != nil {
			return err
		}
		rooms = append(rooms, r)
	}
	fmt.Fprintf(os.Stderr, "chaos: %d rooms of %d playing through %q for %v\n", o.rooms, o.size, o.spec, o.duration)
	startMem := snapshotMem(all, &allMu)

	rng := rand.New(rand.NewPCG(o.seed, 7))
	var kills []*kill
	tk := time.NewTicker(o.killEvery)
	defer tk.Stop()
	var endMem []procMem
	usedUp := 0
loop:
	for {
		select {
		case <-stop:
			fmt.Fprintln(os.Stderr, "chaos: interrupted")
			break loop
		case <-tk.C:
		}
		if time.Until(end) < o.killEvery/2 {
			break loop
		}
		// Replace the rooms whose game ended.
		for i, r := range rooms {
			live := 0
			for _, b := range r.bots {
				if !b.ended() && !b.killed.Load() {
					live++
				}
			}
			if live >= 2 || r.done {
				continue
			}
			r.done = true
			ended = append(ended, r)
			usedUp++
			if time.Until(end) > time.Minute {
				nr, err := newRoom()
				if err != nil {
					return err
				}
				rooms[i] = nr
			}
		}
		// The host of a random room with a host.
		var r *room
		var host *proc
		epoch := 0
		for _, i := range rng.Perm(len(rooms)) {
			for _, b := range rooms[i].bots {
				if e := hostEpoch(b); e > epoch && !b.ended() && !b.killed.Load() && !b.stopped.Load() {
					r, host, epoch = rooms[i], b, e
				}
			}
			if host != nil {
				break
			}
		}
		if host == nil {
			continue
		}
		k := &kill{room: r, at: time.Now(), epoch: epoch, victims: []*proc{host}, mode: []string{"SIGKILL", "SIGTERM", "SIGSTOP"}[rng.IntN(3)]}
		switch k.mode {
		case "SIGKILL":
			host.killed.Store(true)
			host.cmd.Process.Signal(syscall.SIGKILL)
		case "SIGTERM":
			host.killed.Store(true)
			host.cmd.Process.Signal(syscall.SIGTERM)
		case "SIGSTOP":
			host.stopped.Store(true)
			host.cmd.Process.Signal(syscall.SIGSTOP)
			go func(p *proc) {
				time.Sleep(o.stall)
				p.cmd.Process.Signal(syscall.SIGCONT)
				p.stopped.Store(false)
			}(host)
		}
		if o.doubleEvery > 0 && rng.IntN(o.doubleEvery) == 0 {
			var others []*proc
			for _, b := range r.bots {
				if b != host && !b.ended() && !b.killed.Load() && !b.stopped.Load() {
					others = append(others, b)
				}
			}
			if len(others) > 1 { // one must be left to play on
				second := others[rng.IntN(len(others))]
				time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
				second.killed.Store(true)
				second.cmd.Process.Signal(syscall.SIGKILL)
				k.victims = append(k.victims, second)
			}
		}
		kills = append(kills, k)
		fmt.Fprintf(os.Stderr, "chaos: %s %s of %s (epoch %d)%s\n", k.mode, host.name, r.name, epoch,
			map[bool]string{true: " and SIGKILL of " + k.victims[len(k.victims)-1].name, false: ""}[len(k.victims) > 1])
		if time.Until(end) < o.killEvery+10*time.Second && endMem == nil {
			endMem = snapshotMem(all, &allMu)
		}
	}
	if endMem == nil {
		endMem = snapshotMem(all, &allMu)
	}
	for _, r := range rooms {
		if !slices.Contains(ended, r) {
			ended = append(ended, r)
		}
	}
	// The bots end by themselves at the end of their -duration.
	for _, r := range ended {
		for _, b := range r.bots {
			select {
			case <-b.done:
			case <-time.After(time.Until(end) + time.Minute):
				b.cmd.Process.Kill()
				<-b.done
			}
		}
	}
	report(os.Stdout, o, ended, kills, usedUp, startMem, endMem)
	if o.logs != "" {
		if err := os.MkdirAll(o.logs, 0o755); err != nil {
			return err
		}
		allMu.Lock()
		defer allMu.Unlock()
		for _, p := range all {
			if err := os.WriteFile(filepath.Join(o.logs, strings.ReplaceAll(p.name, " ", "-")+".log"), []byte(p.output()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// killedBefore reports whether b was a victim of a kill before k.
func killedBefore(b *proc, k *kill, kills []*kill) bool {
	for _, x := range kills {
		if x == k {
			return false
		}
		if x.mode != "SIGSTOP" && slices.Contains(x.victims, b) || len(x.victims) > 1 && x.victims[1] == b {
			return true
		}
	}
	return false
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// procMem is a process's memory and threads (and a bot's goroutines) at
// one moment.
type procMem struct {
	name                    string
	rssKiB, threads, gorout int
}

func snapshotMem(all []*proc, mu *sync.Mutex) []procMem {
	mu.Lock()
	defer mu.Unlock()
	var out []procMem
	for _, p := range all {
		if p.ended() || p.killed.Load() {
			continue
		}
		rss, th := mem(p)
		g := -1
		if m := playingLine.FindStringSubmatch(p.output()); m != nil {
			g, _ = strconv.Atoi(m[1])
		}
		out = append(out, procMem{name: p.name, rssKiB: rss, threads: th, gorout: g})
	}
	return out
}

func report(w io.Writer, o options, rooms []*room, kills []*kill, usedUp int, startMem, endMem []procMem) {
	var gaps []time.Duration
	failed := 0
	for _, k := range kills {
		var worst time.Duration
		ok, measured := true, 0
		for _, b := range k.room.bots {
			if slices.Contains(k.victims, b) || killedBefore(b, k, kills) {
				continue // taken down by this kill or gone before it
			}
			ms, _ := backAt(b, k.epoch)
			if ms == 0 {
				ok = false
				continue
			}
			measured++
			worst = max(worst, time.UnixMilli(ms).Sub(k.at))
		}
		switch {
		case !ok:
			failed++
		case measured > 0:
			gaps = append(gaps, worst)
		}
	}
	slices.Sort(gaps)
	pct := func(q float64) time.Duration {
		if len(gaps) == 0 {
			return 0
		}
		return gaps[min(len(gaps)-1, int(q*float64(len(gaps))))].Round(time.Millisecond)
	}
	var desyncs, relLost, relDup, relOOO, missing, ended uint64
	lost := 0
	goroutEnd := map[string]int{}
	var lossy []string // bots that lost reliable messages, and their rooms' kills
	for _, r := range rooms {
		gameLost := false
		for _, b := range r.bots {
			out := b.output()
			perEpoch := map[string]uint64{}
			for _, m := range hostingLine.FindAllStringSubmatch(out, -1) {
				n, _ := strconv.ParseUint(m[2], 10, 64)
				perEpoch[m[1]] = n
			}
			for _, n := range perEpoch {
				missing += n
			}
			i := strings.LastIndex(out, "\n{")
			if i < 0 {
				continue
			}
			var s botproto.Summary
			if json.NewDecoder(strings.NewReader(out[i+1:])).Decode(&s) != nil {
				continue
			}
			desyncs += s.Desyncs
			if s.ReliableLost+s.ReliableDuplicates+s.ReliableOutOfOrder > 0 {
				n := 0
				for _, k := range kills {
					if k.room == r {
						n++
					}
				}
				lossy = append(lossy, fmt.Sprintf("%s (%d lost, %d duplicated, %d out of order; %d kills in its room)",
					b.name, s.ReliableLost, s.ReliableDuplicates, s.ReliableOutOfOrder, n))
			}
			relLost, relDup, relOOO = relLost+s.ReliableLost, relDup+s.ReliableDuplicates, relOOO+s.ReliableOutOfOrder
			if s.Peer != nil {
				goroutEnd[b.name] = s.Peer.Goroutines
				if s.Peer.Ended != "" && !b.killed.Load() {
					ended++
					gameLost = true
				}
			}
		}
		if gameLost {
			lost++
		}
	}
	fmt.Fprintf(w, "chaos: %v, %d rooms of %d, %q, a kill every %v (SIGSTOP %v), one in %d double\n",
		o.duration, o.rooms, o.size, o.spec, o.killEvery, o.stall, o.doubleEvery)
	modes := map[string]int{}
	doubles := 0
	for _, k := range kills {
		modes[k.mode]++
		if len(k.victims) > 1 {
			doubles++
		}
	}
	fmt.Fprintf(w, "migrations: %d kills (%d SIGKILL, %d SIGTERM, %d SIGSTOP; %d double), %d not followed by every player left\n",
		len(kills), modes["SIGKILL"], modes["SIGTERM"], modes["SIGSTOP"], doubles, failed)
	fmt.Fprintf(w, "gap (kill to every player left back in play): p50 %v, p99 %v, max %v (%d)\n", pct(0.5), pct(0.99), pct(1), len(gaps))
	fmt.Fprintf(w, "games lost: %d (rooms where a player not killed ended before the run: %d players); rooms used up (fewer than two players left) and replaced: %d\n", lost, ended, usedUp)
	fmt.Fprintf(w, "inputs the new hosts ran without (resumed_missing): %d\n", missing)
	fmt.Fprintf(w, "reliable messages: %d lost, %d duplicated, %d out of order\n", relLost, relDup, relOOO)
	for _, l := range lossy {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "desyncs: %d\n", desyncs)
	fmt.Fprintf(w, "processes alive at the start and at the end (RSS MiB, threads, goroutines):\n")
	at := map[string]procMem{}
	for _, m := range startMem {
		at[m.name] = m
	}
	for _, m := range endMem {
		s, ok := at[m.name]
		if !ok {
			continue // started during the run
		}
		g := "-"
		if s.gorout >= 0 {
			g = fmt.Sprintf("%d -> %d", s.gorout, goroutEnd[m.name])
		}
		fmt.Fprintf(w, "  %-22s %6.1f -> %6.1f  %3d -> %3d  %s\n", m.name, float64(s.rssKiB)/1024, float64(m.rssKiB)/1024, s.threads, m.threads, g)
	}
}
