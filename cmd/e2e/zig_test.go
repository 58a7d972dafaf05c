package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestZigLockstep plays examples/zig-lockstep, a deterministic game in
// Zig on the C ABI's commits mode, with real processes: tickwire-server
// -game relay (no game code on the server) at 30 ticks per second, and
// three Zig clients through tickwire-netem at "delay 50ms 10ms loss 5%"
// for 30 s. At 8 s the third client's process is stopped for 1.5 s
// (SIGSTOP): the relay takes it out of the commit and lets it back in
// with a state another client uploaded. At 20 s a fourth client joins
// and loads a state another client uploaded. The connections' timeouts
// are 5 s, so the stop is a kick, not a disconnect.
//
// Checked from the clients' records (every committed tick's checksum,
// every command run, every command issued, every state loaded): at every
// tick two clients both committed, their checksums agree and they ran
// the same commands; every command that ran anywhere ran once, at one
// tick, on every client that committed that tick; every command issued
// by a client before the last 3 s of the others' commit ran; no client
// saw a desync; the stopped client was kicked and loaded a state of some
// bytes (an upload, not a blank world) with the resync flag, and agrees
// after it; the joiner's state had bytes and it agrees from then on.
func TestZigLockstep(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s end-to-end run in -short mode")
	}
	exe := buildZigLockstep(t)
	_, a := server(t, "-game", "relay", "-tick", "30", "-session-timeout", "5s", "-token-ttl", "2m")
	proxy := start(t, "tickwire-netem", "-listen", "127.0.0.1:0", "-upstream", a.udp, "-spec", "delay 50ms 10ms loss 5%", "-seed", "5", "-stats-interval", "0")
	via := proxy.await(t, `listening on (\S+),`)
	dir := t.TempDir()
	run := func(i int, duration string) (*proc, string) {
		rec := filepath.Join(dir, fmt.Sprintf("zig%d.txt", i))
		return start(t, exe, "-token", joinToken(t, a.http), "-server", via, "-duration", duration, "-timeout", "5000",
			"-seed", strconv.Itoa(i+1), "-record", rec, "-json"), rec
	}
	began := time.Now()
	var procs []*proc
	var recs []string
	for i := range 3 {
		p, rec := run(i, "30")
		procs, recs = append(procs, p), append(recs, rec)
	}
	time.Sleep(time.Until(began.Add(8 * time.Second))) // the game runs (real processes, real time)
	stopped := procs[2]
	if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	stopped.cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(time.Until(began.Add(20 * time.Second)))
	p, rec := run(3, "11")
	procs, recs = append(procs, p), append(recs, rec)

	var sums []zigSummary
	for i, p := range procs {
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			t.Fatalf("client %d did not end:\n%s", i, p.output())
		}
		if p.err != nil {
			t.Fatalf("client %d: %v\n%s", i, p.err, p.output())
		}
		var s zigSummary
		out := p.output()
		line := out[strings.LastIndex(strings.TrimRight(out, "\n"), "\n")+1:]
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("client %d summary: %v\n%s", i, err, out)
		}
		sums = append(sums, s)
		t.Logf("client %d (player %d): ticks %d..%d (%d committed), %d commands issued, %d run (%d own), %d checksums sent, %d state requests, %d uploaded, %d loaded (%d resyncs, %d kicks, %d desyncs), first state after %.0f ms (%d bytes last), commit stall ≤ %.0f ms",
			i, s.Player, s.FirstTick, s.LastTick, s.TicksCommitted, s.Issued, s.Run, s.OwnRun, s.SumsSent, s.StateRequests, s.Uploaded, s.Loaded, s.Resyncs, s.Kicks, s.Desyncs, s.FirstStateMs, s.LastStateBytes, s.StallMaxMs)
	}
	records := make([]zigRecord, len(recs))
	for i, r := range recs {
		records[i] = readZigRecord(t, r)
	}
	checkZigRecords(t, records)

	for i, s := range sums {
		if s.Desyncs != 0 {
			t.Errorf("client %d saw %d desyncs", i, s.Desyncs)
		}
	}
	uploads := sums[0].Uploaded + sums[1].Uploaded + sums[2].Uploaded
	if s := sums[2]; s.Kicks == 0 || s.Resyncs == 0 || s.LastStateBytes == 0 || records[2].resyncBytes == 0 {
		t.Errorf("the stopped client was not kicked and resynchronised from an uploaded state: %+v", s)
	} else {
		t.Logf("the stopped client: %d kicks, came back at tick %d with a state of %d bytes, %.0f ms after its start", s.Kicks, records[2].resyncAt, records[2].resyncBytes, s.LastStateMs)
	}
	if s := sums[3]; s.Loaded == 0 || s.LastStateBytes == 0 {
		t.Errorf("the joiner loaded no uploaded state: %+v", s)
	} else {
		t.Logf("the joiner: waited %.0f ms for its state (%d bytes, tick %d), then committed %d ticks", s.FirstStateMs, s.LastStateBytes, s.FirstTick-1, s.TicksCommitted)
	}
	if uploads < 2 {
		t.Errorf("%d states uploaded by the first three clients; the stopped client and the joiner needed one each", uploads)
	}
}

// zigSummary is zig-lockstep's -json summary.
type zigSummary struct {
	Player         uint16  `json:"player"`
	FirstTick      uint32  `json:"first_tick"`
	LastTick       uint32  `json:"last_tick"`
	TicksCommitted int     `json:"ticks_committed"`
	Issued         int     `json:"commands_issued"`
	Run            int     `json:"commands_run"`
	OwnRun         int     `json:"own_commands_run"`
	SumsSent       int     `json:"sums_sent"`
	StateRequests  int     `json:"state_requests"`
	Uploaded       int     `json:"states_uploaded"`
	Loaded         int     `json:"states_loaded"`
	Resyncs        int     `json:"resyncs"`
	Kicks          int     `json:"kicks"`
	Desyncs        int     `json:"desyncs"`
	FirstStateMs   float64 `json:"first_state_ms"`
	LastStateMs    float64 `json:"last_state_ms"`
	LastStateBytes int     `json:"last_state_bytes"`
	StallMaxMs     float64 `json:"stall_max_ms"`
}

// zigCommand names a command: its player and the issuer's tag.
type zigCommand struct{ player, tag uint32 }

// zigRecord is what a client committed: each tick's checksum and the
// commands it ran (a state loaded drops what it had past its tick), and
// the commands it issued with the tick each was scheduled at.
type zigRecord struct {
	sums        map[uint32]string
	ran         map[uint32][]zigCommand
	issued      map[zigCommand]uint32
	last        uint32
	resyncAt    uint32 // the tick of the last state loaded with the resync flag ...
	resyncBytes int    // ... and its size
}

func readZigRecord(t *testing.T, path string) zigRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := zigRecord{sums: map[uint32]string{}, ran: map[uint32][]zigCommand{}, issued: map[zigCommand]uint32{}}
	sc := bufio.NewScanner(f)
	num := func(s string) uint32 {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		return uint32(v)
	}
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 3 {
			t.Fatalf("%s: %q", path, sc.Text())
		}
		switch w[0] {
		case "T":
			tick := num(w[1])
			r.sums[tick] = w[2]
			r.last = max(r.last, tick)
		case "C":
			tick := num(w[1])
			r.ran[tick] = append(r.ran[tick], zigCommand{num(w[2]), num(w[3])})
		case "I":
			r.issued[zigCommand{num(w[1]), num(w[2])}] = num(w[3])
		case "L":
			tick := num(w[1])
			for k := range r.sums {
				if k > tick {
					delete(r.sums, k)
					delete(r.ran, k)
				}
			}
			if w[3] == "1" {
				r.resyncAt, r.resyncBytes = tick, int(num(w[2]))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// checkZigRecords: every pair of clients agrees at every tick both
// committed (checksum and commands run); every command ran once, at one
// tick, on every client that committed that tick; every command issued
// before the last 3 s of the first three clients' common commit ran.
func checkZigRecords(t *testing.T, recs []zigRecord) {
	t.Helper()
	compared := 0
	for i := range recs {
		for j := i + 1; j < len(recs); j++ {
			common, differ := 0, 0
			for tick, s := range recs[i].sums {
				o, ok := recs[j].sums[tick]
				if !ok {
					continue
				}
				common++
				if o != s || !slices.Equal(recs[i].ran[tick], recs[j].ran[tick]) {
					if differ == 0 {
						t.Errorf("clients %d and %d differ at tick %d: checksums %s and %s, commands %v and %v", i, j, tick, s, o, recs[i].ran[tick], recs[j].ran[tick])
					}
					differ++
				}
			}
			compared += common
			t.Logf("clients %d and %d: %d ticks in common, %d differ", i, j, common, differ)
			if common < 100 {
				t.Errorf("clients %d and %d have only %d committed ticks in common", i, j, common)
			}
		}
	}
	ranAt := map[zigCommand]uint32{}
	for k, r := range recs {
		seen := map[zigCommand]int{}
		for tick, cmds := range r.ran {
			for _, c := range cmds {
				seen[c]++
				if at, ok := ranAt[c]; ok && at != tick {
					t.Errorf("command %v ran at tick %d on client %d and at %d elsewhere", c, tick, k, at)
				}
				ranAt[c] = tick
			}
		}
		for c, n := range seen {
			if n != 1 {
				t.Errorf("client %d ran command %v %d times", k, c, n)
			}
		}
	}
	for k, r := range recs {
		for c, at := range ranAt {
			if _, ok := r.sums[at]; ok && !slices.Contains(r.ran[at], c) {
				t.Errorf("client %d committed tick %d without command %v", k, at, c)
			}
		}
	}
	end := min(recs[0].last, recs[1].last, recs[2].last) - 90
	issued, ran := 0, 0
	for k, r := range recs {
		for c, at := range r.issued {
			if at > end {
				continue
			}
			issued++
			if _, ok := ranAt[c]; ok {
				ran++
			} else {
				t.Errorf("client %d's command %v (scheduled at tick %d) never ran", k, c, at)
			}
		}
	}
	if ran < 200 {
		t.Errorf("only %d issued commands ran", ran)
	}
	t.Logf("%d tick pairs compared; %d commands issued before tick %d, %d ran, each once at one tick on every client that committed it", compared, issued, end, ran)
}

// buildZigLockstep builds libtickwire.a and examples/zig-lockstep into
// the binaries' directory and returns the program's name there.
func buildZigLockstep(t *testing.T) string {
	t.Helper()
	zig := zigPath(t)
	lib := filepath.Join(bin, "libtickwire.a")
	if out, err := exec.Command("go", "build", "-buildmode=c-archive", "-o", lib, "../../capi").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-archive: %v\n%s", err, out)
	}
	src, err := filepath.Abs("../../examples/zig-lockstep/main.zig")
	if err != nil {
		t.Fatal(err)
	}
	capi, err := filepath.Abs("../../capi")
	if err != nil {
		t.Fatal(err)
	}
	const name = "zig-lockstep"
	cmd := exec.Command(zig, "build-exe", src, "-I", capi, lib, "-lc", "-femit-bin="+filepath.Join(bin, name))
	cmd.Dir = bin // for zig-cache
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return name
}

// zigPath returns a Zig 0.11.0 binary: $TICKWIRE_ZIG, else what
// scripts/install-zig.sh prints (it installs Zig when it is not in its
// cache). Without one the test skips, or fails when
// TICKWIRE_REQUIRE_TOOLS is set.
func zigPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TICKWIRE_ZIG"); p != "" {
		return p
	}
	out, err := exec.Command("../../scripts/install-zig.sh").Output()
	if err != nil {
		why := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			why = strings.TrimSpace(string(ee.Stderr))
		}
		if os.Getenv("TICKWIRE_REQUIRE_TOOLS") != "" {
			t.Fatalf("no Zig 0.11.0 and TICKWIRE_REQUIRE_TOOLS is set: %s", why)
		}
		t.Skipf("no Zig 0.11.0: %s (scripts/install-zig.sh installs it)", why)
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		t.Fatal("scripts/install-zig.sh printed no path")
	}
	return p
}
