package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/commits"
	"github.com/tickwire/tickwire/examples/arena"
	"github.com/tickwire/tickwire/examples/swarm"
	"github.com/tickwire/tickwire/game"
	"github.com/tickwire/tickwire/internal/browsertest"
	"github.com/tickwire/tickwire/internal/testrig"
	"github.com/tickwire/tickwire/replay"
	"github.com/tickwire/tickwire/sim"
	"github.com/tickwire/tickwire/udp/udptest"
)

// The tests record games over the in-memory network in virtual time
// (a server and its bots in one synctest bubble), then run the command
// on the files as a person would.

// serverAddr is where the recorded games' server listens.
const serverAddr = "10.0.0.1:7777"

// runCmd runs tickwire-replay with args and returns its exit status
// and output.
func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// recordArena plays the arena (npcs NPCs) for d with bots players
// bots, each a game.Client recording to dir/client<i>.replay, the
// server recording to dir/server.replay; client 1 runs world(1) as its
// game if world is set, and the bots play inputs(i).
func recordArena(t *testing.T, dir string, npcs, bots int, d time.Duration, world func(player uint16) game.Game,
	inputs func(i int) game.InputFunc) {
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 20 * time.Millisecond}})
		key, _ := tickwire.GenerateKey()
		srv, err := tickwire.NewServer(key, tickwire.Config{})
		if err != nil {
			t.Fatal(err)
		}
		host, err := game.NewHost(srv, func(uint64) (game.Game, error) { return arena.NewGame(npcs), nil }, game.Config{
			Record: func(uint64) (*replay.Writer, error) {
				return replay.Create(filepath.Join(dir, "server.replay"), replay.Config{Game: "arena"})
			}})
		if err != nil {
			t.Fatal(err)
		}
		srv.Handle(host)
		stop := testrig.SimServe(t, n, serverAddr, srv, nil)
		var clients []*tickwire.Client
		var writers []*replay.Writer
		for i := range bots {
			slot := uint16(i + 1)
			var w game.Game = arena.NewGame(0)
			if world != nil && slot == 1 {
				w = world(slot)
			}
			gc, err := game.NewClient(w, inputs(i), sim.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			rw, err := replay.Create(filepath.Join(dir, "client"+string(rune('0'+slot))+".replay"), replay.Config{Game: "arena", GameID: 7})
			if err != nil {
				t.Fatal(err)
			}
			gc.Record(rw)
			tok := testrig.Token(t, key, mustAddr(serverAddr), uint64(slot), slot)
			clients = append(clients, testrig.SimDial(t, n, "10.0.1."+string(rune('0'+slot))+":5000", nil, tok, gc))
			writers = append(writers, rw)
		}
		time.Sleep(d)
		for i, c := range clients {
			c.Close()
			<-c.Done()
			if err := writers[i].Close(); err != nil {
				t.Error(err)
			}
		}
		stop() // the game ends: the server's recording is complete
	})
}

// TestBisectStateSync: a state-sync game whose client 1 runs a game
// that takes 3 hp from its own avatar at tick 150 (the server's does
// not): tickwire-replay -bisect server.replay client1.replay names tick
// 150, the avatar and its hp (100 on the server, 97 on the client) and
// the inputs of the tick, exits 1, says the same in -json and draws it
// in -html; the server's recording re-runs to every checksum, and the
// other client's agrees with it.
func TestBisectStateSync(t *testing.T) {
	dir := t.TempDir()
	recordArena(t, dir, 20, 2, 6*time.Second,
		func(player uint16) game.Game {
			return &testrig.FlawedArena{Game: arena.NewGame(0), At: 150, Player: player}
		},
		func(i int) game.InputFunc { return testrig.FiringInputs(uint64(i), 1, 1, 0) }) // moving, not firing
	srv, cli1, cli2 := filepath.Join(dir, "server.replay"), filepath.Join(dir, "client1.replay"), filepath.Join(dir, "client2.replay")

	code, out, errOut := runCmd(srv)
	if code != 0 || !strings.Contains(out, "every recorded checksum and state reproduced") {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd("-bisect", srv, cli2)
	if code != 0 || !strings.Contains(out, "no divergence") {
		t.Fatalf("bisect of the sound client: exit %d\n%s%s", code, out, errOut)
	}
	html := filepath.Join(dir, "timeline.html")
	code, out, errOut = runCmd("-html", html, "-bisect", srv, cli1)
	t.Logf("tickwire-replay -bisect server.replay client1.replay:\n%s", out)
	avatar := regexp.MustCompile(`(?m)^  entity 0x00000001 \(spawner 0, index 1\): hp 100 → 97$`)
	if code != 1 || !strings.Contains(out, "FIRST DIVERGENCE at tick 150\n") || !avatar.MatchString(out) ||
		!strings.Contains(out, "inputs of tick 150:") || !strings.Contains(out, "B player 1 input") {
		t.Fatalf("bisect of the corrupt client: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCmd("-json", "-bisect", srv, cli1)
	var rep replay.BisectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("-json: exit %d, %v\n%s", code, err, out)
	}
	if !rep.Diverged || rep.Tick != 150 || len(rep.Differences) != 1 || rep.Differences[0].ID != arena.PlayerID(1) ||
		len(rep.Differences[0].Fields) != 1 || rep.Differences[0].Fields[0] != (replay.FieldDiff{Name: "hp", A: 100, B: 97}) {
		t.Fatalf("-json report %+v", rep)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("first divergence: tick 150")) || bytes.Count(page, []byte(`<g class="lane"`)) != 2 {
		t.Fatalf("the timeline:\n%s", page)
	}
	screenshot(t, html, "bisect-state-sync")
}

// TestBisectCommits: a commits-mode game of two clients, the second of
// which runs a game that takes 7 hp from unit 17 at tick 150:
// tickwire-replay -bisect client1.replay client2.replay names tick 150,
// unit 17 and its hp, and the commands of the tick; the first client's
// recording and the server's re-run to every checksum, the second's
// stops at tick 150.
func TestBisectCommits(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		n := udptest.NewNetwork(udptest.Config{Link: udptest.Link{Latency: 20 * time.Millisecond}})
		key, _ := tickwire.GenerateKey()
		srv, err := tickwire.NewServer(key, tickwire.Config{TickRate: 30})
		if err != nil {
			t.Fatal(err)
		}
		host, err := commits.NewHost(srv, func(uint64) (sim.CommitGame, error) { return swarm.NewGame(200) }, commits.Config{
			Record: func(uint64) (*replay.Writer, error) {
				return replay.Create(filepath.Join(dir, "server.replay"), replay.Config{Game: "swarm"})
			}})
		if err != nil {
			t.Fatal(err)
		}
		srv.Handle(host)
		stop := testrig.SimServe(t, n, serverAddr, srv, nil)
		var clients []*commits.Client
		var writers []*replay.Writer
		for slot := uint16(1); slot <= 2; slot++ {
			g, _ := swarm.NewGame(200)
			var w sim.CommitGame = g
			if slot == 2 {
				w = &testrig.FlawedSwarm{Game: g, At: 150, Unit: 17}
			}
			rw, err := replay.Create(filepath.Join(dir, "client"+string(rune('0'+slot))+".replay"), replay.Config{Game: "swarm", GameID: 7})
			if err != nil {
				t.Fatal(err)
			}
			cc, err := commits.NewClient(w, commits.ClientConfig{Record: rw})
			if err != nil {
				t.Fatal(err)
			}
			tok := testrig.Token(t, key, mustAddr(serverAddr), uint64(slot), slot)
			testrig.SimDial(t, n, "10.0.1."+string(rune('0'+slot))+":5000", nil, tok, cc)
			clients = append(clients, cc)
			writers = append(writers, rw)
		}
		// Each client orders a group about every half second.
		rng := rand.New(rand.NewPCG(1, 2))
		for range 16 {
			time.Sleep(500 * time.Millisecond)
			for i, cc := range clients {
				cmd := swarm.AppendCommand(nil, swarm.Command{Op: swarm.OpMove, Group: uint8(rng.IntN(swarm.Groups)),
					X: uint16(rng.IntN(swarm.WorldSize)), Y: uint16(rng.IntN(swarm.WorldSize))})
				cc.Issue(uint16(i+1), cmd)
			}
		}
		time.Sleep(2 * time.Second)
		for i, cc := range clients {
			cc.Close()
			if err := writers[i].Close(); err != nil {
				t.Error(err)
			}
		}
		stop()
	})
	for _, name := range []string{"server.replay", "client1.replay"} {
		if code, out, errOut := runCmd(filepath.Join(dir, name)); code != 0 || !strings.Contains(out, "every recorded checksum and state reproduced") {
			t.Fatalf("re-run of %s: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	if code, out, errOut := runCmd(filepath.Join(dir, "client2.replay")); code != 1 || !strings.Contains(out, "FIRST MISMATCH at tick 150: recorded checksum") {
		t.Fatalf("re-run of the flawed client: exit %d\n%s%s", code, out, errOut)
	}
	html := filepath.Join(dir, "timeline.html")
	code, out, errOut := runCmd("-html", html, "-bisect", filepath.Join(dir, "client1.replay"), filepath.Join(dir, "client2.replay"))
	t.Logf("tickwire-replay -bisect client1.replay client2.replay:\n%s", out)
	if code != 1 || !strings.Contains(out, "FIRST DIVERGENCE at tick 150\n") || !strings.Contains(out, "what differs at tick 150 (A → B):\n  entity unit 17: hp 100 → 93\n") {
		t.Fatalf("bisect: exit %d\n%s%s", code, out, errOut)
	}
	screenshot(t, html, "bisect-commits")
}

// TestReplayArenaMinute: a minute of the arena (300 NPCs) with eight
// bots playing as tickwire-bot's do (roaming, firing rays and
// projectiles, so lag compensation rewinds): tickwire-replay re-runs
// the server's recording to every checksum and full state it recorded.
// It logs the recordings' sizes per minute.
func TestReplayArenaMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of virtual time with eight clients")
	}
	dir := t.TempDir()
	recordArena(t, dir, arena.DefaultNPCs, 8, time.Minute, nil, func(i int) game.InputFunc { return testrig.RoamingInputs(uint64(i)) })
	srv := filepath.Join(dir, "server.replay")
	code, out, errOut := runCmd(srv)
	t.Logf("tickwire-replay server.replay:\n%s", out)
	if code != 0 || !strings.Contains(out, "every recorded checksum and state reproduced") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`re-ran ticks 0 to \d+ \((\d+) steps\): (\d+) checksums and (\d+) full states compared`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no counts in %q", out)
	}
	if steps, _ := strconv.Atoi(m[1]); steps < 3500 {
		t.Fatalf("re-ran %d ticks, want a minute's", steps)
	}
	if sums, _ := strconv.Atoi(m[2]); sums < 58 {
		t.Fatalf("compared %d checksums, want one a second", sums)
	}
	for _, name := range []string{"server.replay", "client1.replay"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes for a minute", name, fi.Size())
	}
}

func mustAddr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// screenshot opens the timeline page at path in headless Chromium,
// waits until its picture shows the divergence, the lanes and the
// legend, and keeps a screenshot (browsertest.ArtifactDir). Without
// Chromium it skips (test.sh installs it).
func screenshot(t *testing.T, path, name string) {
	browser := browsertest.NewBrowser(t, 1280, 520)
	shot := 0
	tab := browsertest.NewTab(t, browser, name, browsertest.ArtifactDir(t, "replay-timeline"), &shot)
	tab.Do("draw the timeline", chromedp.Navigate("file://"+path),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('svg g.lane').length === 2 &&
			document.querySelector('#divergence line').getBBox().height > 100 &&
			document.querySelector('#legend').getBBox().width > 500`, chromedp.WithPollingTimeout(5*time.Second)))
	tab.Screenshot("timeline")
}

// TestBadInput: wrong flags, missing or foreign files and unknown games
// exit 2 with a line that says what is wrong; a recording cut short is
// read up to the cut, with a warning.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a replay"), 0o644)
	w, err := replay.Create(filepath.Join(dir, "unknown.replay"), replay.Config{Game: "chess"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := swarm.NewGame(10)
	rec, err := replay.NewCommitRecorder(w, replay.RoleCommitsServer, 1, g, nil, 30)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := sim.NewLockstep(g, 0, nil, sim.LockstepConfig{Committed: rec.Command, CommittedTick: rec.CommittedTick})
	if err != nil {
		t.Fatal(err)
	}
	rec.Use(ls)
	rec.Loaded(ls, 0)
	ls.Commit(30)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give one recording to re-run"},
		{[]string{"-bisect", "a.replay"}, "-bisect needs two recordings"},
		{[]string{"-game", "chess", "a.replay"}, "the games built in are arena and swarm"},
		{[]string{"-nonsense"}, "flag provided but not defined"},
		{[]string{filepath.Join(dir, "missing.replay")}, "no such file"},
		{[]string{text}, "not a replay file"},
		{[]string{filepath.Join(dir, "unknown.replay")}, `game "chess" is not built in`},
	} {
		code, out, errOut := runCmd(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("tickwire-replay %q: exit %d, %q, %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	whole, err := os.ReadFile(filepath.Join(dir, "unknown.replay"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.replay")
	os.WriteFile(cut, whole[:len(whole)-2], 0o644)
	if code, _, errOut := runCmd("-game", "swarm", cut); !strings.Contains(errOut, "warning: "+cut+": replay: file ends inside a block") {
		t.Errorf("a cut recording: exit %d, %q", code, errOut)
	}
}
