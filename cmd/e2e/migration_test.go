package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/botproto"
)

// peerProc is one tickwire-bot -peer process of a migration test.
type peerProc struct {
	*proc
	name string
}

// summary is the JSON summary the bot printed on stdout when it ended.
func (p *peerProc) summary(t *testing.T) botproto.Summary {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not end:\n%s", p.name, p.output())
	}
	out := p.output()
	i := strings.LastIndex(out, "\n{")
	if i < 0 {
		t.Fatalf("%s printed no summary (exit: %v):\n%s", p.name, p.err, out)
	}
	var s botproto.Summary
	if err := json.NewDecoder(strings.NewReader(out[i+1:])).Decode(&s); err != nil {
		t.Fatalf("%s summary: %v\n%s", p.name, err, out)
	}
	return s
}

var eventLine = regexp.MustCompile(`peer event "([a-z ]+)" epoch=(\d+) slot=\d+ unix_ms=(\d+)`)

// resumedAt is when p was back in play under a host of epoch: resumed on
// it, or promoted to it (0: not yet).
func (p *peerProc) resumedAt(epoch int) int64 {
	for _, m := range eventLine.FindAllStringSubmatch(p.output(), -1) {
		e, _ := strconv.Atoi(m[2])
		if e == epoch && (m[1] == "resumed" || m[1] == "promoted") {
			ms, _ := strconv.ParseInt(m[3], 10, 64)
			return ms
		}
	}
	return 0
}

// promoted reports whether p became the host of epoch.
func (p *peerProc) promoted(epoch int) bool {
	return strings.Contains(p.output(), fmt.Sprintf(`peer event "promoted" epoch=%d `, epoch))
}

var hostingLine = regexp.MustCompile(`hosting epoch=(\d+) joins=\d+ resumed_missing=(\d+)`)

// resumedMissing is the last count p printed, as the host of epoch, of
// inputs of players back from the migration its engine ran without.
func (p *peerProc) resumedMissing(epoch int) (n int, ok bool) {
	for _, m := range hostingLine.FindAllStringSubmatch(p.output(), -1) {
		if e, _ := strconv.Atoi(m[1]); e == epoch {
			n, _ = strconv.Atoi(m[2])
			ok = true
		}
	}
	return n, ok
}

// freeUDPPort returns a UDP port nobody listens on now.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// startPeers starts n bots that play one peer-hosted room through the
// lobby at lobbyURL for duration; with spec, each one's host port is
// fronted by its own tickwire-netem (so every path to whichever peer
// hosts is impaired, both ways). It returns them once all play, the host
// (the lobby's choice) first. Every bot gets extra on its command line
// too, where {n} stands for its number (1..n).
func startPeers(t *testing.T, lobbyURL, room string, n int, duration time.Duration, spec string, extra ...string) []*peerProc {
	t.Helper()
	peers := make([]*peerProc, n)
	for i := range peers {
		args := []string{"-server", lobbyURL, "-peer", room, "-room-size", fmt.Sprint(n), "-duration", duration.String(),
			"-json", "-name", fmt.Sprintf("p%d", i+1), "-seed", fmt.Sprint(i + 1), "-log-level", "warn"}
		for _, e := range extra {
			args = append(args, strings.ReplaceAll(e, "{n}", fmt.Sprint(i+1)))
		}
		if spec != "" {
			port := freeUDPPort(t)
			proxy := start(t, "tickwire-netem", "-listen", "127.0.0.1:0", "-upstream", fmt.Sprintf("127.0.0.1:%d", port),
				"-spec", spec, "-seed", fmt.Sprint(11+i), "-stats-interval", "0")
			via := proxy.await(t, `listening on (\S+),`)
			_, offer, _ := net.SplitHostPort(via)
			args = append(args, "-host-port", fmt.Sprint(port), "-host-offer", offer)
		}
		peers[i] = &peerProc{proc: start(t, "tickwire-bot", args...), name: fmt.Sprintf("p%d", i+1)}
		peers[i].await(t, `seated in room`) // join order: the first offered port hosts
	}
	for _, p := range peers {
		p.await(t, `tickwire-bot: playing`)
	}
	if !strings.Contains(peers[0].output(), "role host") {
		t.Fatalf("the first player is not the host:\n%s", peers[0].output())
	}
	return peers
}

// waitResumed waits until every peer in live is back in play under a host
// of epoch and returns the worst time from killed, failing if one is not
// within limit. The limit is what must hold on a loaded machine (real
// processes, real time); the tight figures (back within 2 s of a crash)
// are asserted in virtual time by peerhost's tests.
func waitResumed(t *testing.T, live []*peerProc, epoch int, killed time.Time, limit time.Duration) time.Duration {
	t.Helper()
	deadline := killed.Add(limit)
	var worst time.Duration
	for _, p := range live {
		for p.resumedAt(epoch) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s not back in play under epoch %d within %v:\n%s", p.name, epoch, limit, p.output())
			}
			select {
			case <-p.done:
				t.Fatalf("%s ended:\n%s", p.name, p.output())
			case <-time.After(20 * time.Millisecond): // polling its output
			}
		}
		gap := time.UnixMilli(p.resumedAt(epoch)).Sub(killed)
		worst = max(worst, gap)
	}
	return worst
}

// newHost is the peer of live promoted to epoch.
func newHost(t *testing.T, live []*peerProc, epoch int) *peerProc {
	t.Helper()
	for _, p := range live {
		if p.promoted(epoch) {
			return p
		}
	}
	t.Fatalf("nobody was promoted to epoch %d", epoch)
	return nil
}

// checkNewHost checks that host, promoted to epoch, ran none of the
// returning players' ticks without their inputs (as it last printed).
func checkNewHost(t *testing.T, host *peerProc, epoch int) {
	t.Helper()
	if n, ok := host.resumedMissing(epoch); !ok || n != 0 {
		t.Errorf("%s, host of epoch %d, ran %d ticks without returning players' inputs (reported %v)", host.name, epoch, n, ok)
	}
}

// playingPeers starts n bots in a room of the lobby of a new server (see
// startPeers) and lets them play for play; it skips in -short mode.
func playingPeers(t *testing.T, room string, n int, duration, play time.Duration) []*peerProc {
	t.Helper()
	if testing.Short() {
		t.Skip("host migration in -short mode")
	}
	_, a := server(t)
	peers := startPeers(t, "http://"+a.http, room, n, duration, "")
	time.Sleep(play)
	return peers
}

// checkSurvivor checks the summary of a peer that played to the end.
func checkSurvivor(t *testing.T, p *peerProc, epoch int) {
	t.Helper()
	s := p.summary(t)
	if s.Peer == nil || s.Peer.Epoch != uint32(epoch) || s.Peer.Ended != "" {
		t.Errorf("%s: peer %+v", p.name, s.Peer)
	}
	if s.Desyncs != 0 {
		t.Errorf("%s: %d desyncs", p.name, s.Desyncs)
	}
	if s.ReliableReceived == 0 || s.ReliableLost+s.ReliableDuplicates+s.ReliableOutOfOrder != 0 {
		t.Errorf("%s: reliable %d sent, %d received, %d lost, %d duplicated, %d out of order", p.name,
			s.ReliableSent, s.ReliableReceived, s.ReliableLost, s.ReliableDuplicates, s.ReliableOutOfOrder)
	}
	t.Logf("%s: epoch %d, %d migrations (%d promotions), echo p50 %.0f ms p99 %.0f ms, %d/%d echoes, inputs %d (late %d), rollbacks %d, stalls %d/%d",
		p.name, s.Peer.Epoch, s.Peer.Migrations, s.Peer.Promotions, s.EchoMs.P50, s.EchoMs.P99, s.ReliableReceived, s.ReliableSent,
		s.InputsSent, s.LateInputs, s.Rollbacks, s.InterpStalls, s.InterpFrames)
}

// TestHostMigration: four tickwire-bot processes play a peer-hosted
// arena through the lobby; after 10 s the host's process is killed with
// SIGKILL, and the three others must be playing on the successor (the
// time is logged: 1.5–2.1 s here; the 2-s bound is asserted in virtual
// time by peerhost's TestPeerHostMigration, and here only what holds on a
// loaded machine, 8 s); 5 s later the successor is killed too and the
// last two carry on.
// Every survivor ends with no desync and every reliable message echoed
// exactly once, in order, and each promoted host ran none of the
// returning players' ticks without their inputs. The same again with
// every path to a host through tickwire-netem at delay 50ms 10ms loss 5%.
func TestHostMigration(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("host migration in -short mode")
	}
	// Back in play about 2 s after the kill: 1.5 s of detection (three
	// heartbeats), then the election, promotion and re-dial (through
	// netem, a few crossings of the impaired path).
	for _, tc := range []struct {
		name, spec string
		limit      time.Duration
	}{{"loopback", "", 8 * time.Second}, {"netem", "delay 50ms 10ms loss 5%", 8 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			_, a := server(t)
			peers := startPeers(t, "http://"+a.http, "migration-"+tc.name, 4, 24*time.Second, tc.spec)
			time.Sleep(10 * time.Second) // play
			peers[0].cmd.Process.Signal(syscall.SIGKILL)
			killed := time.Now()
			live := peers[1:]
			gap := waitResumed(t, live, 2, killed, tc.limit)
			second := newHost(t, live, 2)
			t.Logf("first migration: %s took over; everyone back in play within %v of the SIGKILL", second.name, gap)

			time.Sleep(5 * time.Second)
			checkNewHost(t, second, 2)
			second.cmd.Process.Signal(syscall.SIGKILL)
			killed = time.Now()
			var last []*peerProc
			for _, p := range live {
				if p != second {
					last = append(last, p)
				}
			}
			gap = waitResumed(t, last, 3, killed, tc.limit)
			third := newHost(t, last, 3)
			t.Logf("second migration: %s took over; both back in play within %v", third.name, gap)
			for _, p := range last {
				checkSurvivor(t, p, 3)
			}
			checkNewHost(t, third, 3)
		})
	}
}

// TestHostMigrationStalledHost: the host's process of a three-player
// peer-hosted game is stopped with SIGSTOP for 3 s, then continued. The
// others follow the successor meanwhile; the old host, running again,
// learns it was replaced and steps down instead of running a second
// authority, and its own player follows the successor too. Everybody
// ends under the successor with no desync and every message echoed
// exactly once.
func TestHostMigrationStalledHost(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	peers := playingPeers(t, "stalled", 3, 20*time.Second, 8*time.Second)
	old := peers[0]
	old.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	// Before the old host runs again (3 s).
	gap := waitResumed(t, peers[1:], 2, stopped, 3*time.Second)
	time.Sleep(3*time.Second - time.Since(stopped))
	old.cmd.Process.Signal(syscall.SIGCONT)
	old.await(t, `peer event "stepped down"`)
	t.Logf("the others were back in play %v after the SIGSTOP; %s took over", gap, newHost(t, peers[1:], 2).name)
	deadline := time.Now().Add(10 * time.Second)
	for old.resumedAt(2) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the old host's player never followed the successor:\n%s", old.output())
		}
		time.Sleep(20 * time.Millisecond) // polling its output
	}
	for _, p := range peers {
		checkSurvivor(t, p, 2)
	}
	if s := old.summary(t); !s.Peer.SteppedDown || s.Peer.Hosting {
		t.Errorf("the old host: stepped down %v, hosting %v at the end", s.Peer.SteppedDown, s.Peer.Hosting)
	}
}

var handedOverLine = regexp.MustCompile(`peer event "host lost" epoch=2 slot=1 unix_ms=\d+ handed over at tick \d+`)

// TestHostMigrationGraceful: four tickwire-bot processes play a
// peer-hosted arena through the lobby; after 8 s the host's process gets
// SIGTERM. It hands the game over to its successor and exits cleanly,
// saying so. The three others play on under epoch 2, each having left
// the old host because of its hand-over (not its silence); they end with
// no desync and every reliable message echoed exactly once, in order,
// and the successor ran none of their ticks without their inputs. The
// gap is logged only: its bound (300 ms) is TestPeerHostQuits', in
// virtual time.
func TestHostMigrationGraceful(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	peers := playingPeers(t, "graceful", 4, 20*time.Second, 8*time.Second)
	old := peers[0]
	old.cmd.Process.Signal(syscall.SIGTERM)
	quit := time.Now()
	live := peers[1:]
	gap := waitResumed(t, live, 2, quit, 10*time.Second)
	t.Logf("%s took over; everyone back in play within %v of the SIGTERM", newHost(t, live, 2).name, gap)

	s := old.summary(t)
	if old.err != nil || s.Peer == nil || s.Peer.Ended != "" || !slices.ContainsFunc(s.Peer.Events, func(e botproto.PeerEvent) bool { return e.Kind == "handed over" }) {
		t.Errorf("the quitter (exit %v): peer %+v", old.err, s.Peer)
	}
	for _, p := range live {
		if !handedOverLine.MatchString(p.output()) {
			t.Errorf("%s did not leave the old host for its hand-over:\n%s", p.name, p.output())
		}
	}
	second := newHost(t, live, 2)
	time.Sleep(3 * time.Second)
	checkNewHost(t, second, 2)
	for _, p := range live {
		checkSurvivor(t, p, 2)
	}
}

var clientLine = regexp.MustCompile(`slot \d+, client (0x[0-9a-f]+), role`)

// successor is the peer of live first in the succession: the lowest
// client id (every bot offers to host).
func successor(t *testing.T, live []*peerProc) *peerProc {
	t.Helper()
	var first *peerProc
	var low uint64
	for _, p := range live {
		m := clientLine.FindStringSubmatch(p.output())
		if m == nil {
			t.Fatalf("%s printed no client id:\n%s", p.name, p.output())
		}
		id, _ := strconv.ParseUint(m[1], 0, 64)
		if first == nil || id < low {
			first, low = p, id
		}
	}
	return first
}

// TestHostMigrationDouble: four tickwire-bot processes play a
// peer-hosted arena through the lobby; after 8 s the host's process is
// killed with SIGKILL, and 50 ms later its first successor's (the lowest
// client id). The two left elect the dead successor, strike it off and
// elect the next one, the host's second warm standby, which takes over.
// Both play on under one epoch, 3, and end with no desync and every
// reliable message echoed exactly once, in order; the new host ran none
// of their ticks without their inputs. The time it takes is logged only:
// its bound (4 s) is TestPeerHostAndSuccessorDie's, in virtual time.
func TestHostMigrationDouble(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	peers := playingPeers(t, "double", 4, 24*time.Second, 8*time.Second)
	next := successor(t, peers[1:])
	peers[0].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	time.Sleep(50 * time.Millisecond)
	next.cmd.Process.Signal(syscall.SIGKILL)
	var live []*peerProc
	for _, p := range peers[1:] {
		if p != next {
			live = append(live, p)
		}
	}
	gap := waitResumed(t, live, 3, killed, 20*time.Second)
	host := newHost(t, live, 3)
	t.Logf("%s and %s were killed 50 ms apart; %s took over, both back in play within %v of the first kill", peers[0].name, next.name, host.name, gap)
	time.Sleep(3 * time.Second)
	checkNewHost(t, host, 3)
	for _, p := range live {
		checkSurvivor(t, p, 3)
	}
}

// TestHostMigrationPlayerHiccup: three tickwire-bot processes play a
// peer-hosted arena through the lobby; after 8 s the process of a player
// that does not host is stopped with SIGSTOP for 5 s (past its 1.5-s
// host liveness and its 3-s session timeout, within the host's 10-s
// session timeout), then continued. A hiccup is not a leave, nor a dead
// host: the host marks the player interrupted and, once it is heard
// again, back (the time is logged: 11–61 ms after the SIGCONT here; a
// bound within 1 s of the path's return is asserted in virtual time by
// peerhost's TestPeerPlayerHiccup, and here what holds on a loaded
// machine, 8 s); it logs no leave and no join meanwhile. The stopped player excuses its host the silence of its own
// stop (as its session does), or, if it elected on waking up, comes
// back to the host with its rejoin credential: either way it took
// nothing over for good and nobody migrated. All three end under epoch
// 1 with no desync and every reliable message echoed exactly once, in
// order. (A path cut rather than a process stopped is
// TestPeerPlayerHiccup's, in virtual time.)
func TestHostMigrationPlayerHiccup(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("host migration in -short mode")
	}
	_, a := server(t)
	peers := startPeers(t, "http://"+a.http, "hiccup", 3, 24*time.Second, "", "-log-level", "info")
	host, lone := peers[0], peers[2]
	time.Sleep(8 * time.Second) // play
	const joined, left, back = `msg="player joined"`, `msg="player left"`, `msg="client back"|msg="players rejoined"`
	if n := host.count(joined); n != 3 {
		t.Fatalf("the host logged %d joins before the hiccup, want 3:\n%s", n, host.output())
	}
	backs := host.count(back)
	if err := lone.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	lone.cmd.Process.Signal(syscall.SIGCONT)
	resumed := time.Now()
	at := host.awaitCount(t, back, backs, 8*time.Second)
	t.Logf("%s was back with the host %v after its process resumed", lone.name, at.Sub(resumed).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // play on
	if host.count(`msg="client interrupted"`) == 0 || host.count(left) != 0 || host.count(joined) != 3 {
		t.Errorf("the host across the hiccup: %d interruptions, %d leaves, %d joins; want some, none and 3",
			host.count(`msg="client interrupted"`), host.count(left), host.count(joined))
	}
	for _, p := range peers {
		checkSurvivor(t, p, 1)
	}
	s := lone.summary(t)
	var kinds []string
	for _, e := range s.Peer.Events {
		if e.Kind == "host lost" && strings.HasPrefix(e.Text, "handed over") {
			// The game's end: the host's process ended first (the
			// stopped one runs 5 s late) and handed the game over.
			break
		}
		kinds = append(kinds, e.Kind)
	}
	t.Logf("%s's peer events: %v", lone.name, kinds)
	count := func(kind string) int {
		return len(slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k != kind }))
	}
	if s.Peer.Migrations != 0 || count("promoted") != count("abandoned") || count("resumed") != 0 {
		t.Errorf("%s after its hiccup: %+v", lone.name, s.Peer)
	}
}

var committingLine = regexp.MustCompile(`committing again from tick \d+ on connection \d+ unix_ms=(\d+)`)

// committingAgain is when p first committed again on a new session after
// t (zero: not yet).
func (p *peerProc) committingAgain(t time.Time) time.Time {
	for _, m := range committingLine.FindAllStringSubmatch(p.output(), -1) {
		ms, _ := strconv.ParseInt(m[1], 10, 64)
		if at := time.UnixMilli(ms); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// TestCommitsHostMigration: four tickwire-bot processes play a
// peer-hosted swarm (commits mode, 1,000 units) through the lobby of
// tickwire-server -game swarm: the host's process runs the relay, which
// holds no game code. After 10 s it is killed with SIGKILL. The three
// others elect the first successor, whose relay adopts the game from its
// own worlds, and commit again on it: the time from the kill is logged
// (the 2-s bound is peerhost's TestPeerCommitsMigration's, in virtual
// time; here what holds on a loaded machine, 8 s). From the records the
// survivors write: their committed records are the same over the ticks
// all of them ran; every command executed ran at one tick, exactly once
// on every record that covers it (the killed player's too); every
// command a survivor issued up to 8 s after the kill ran (none it was
// told committed or acknowledged was lost); no survivor desynced.
func TestCommitsHostMigration(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("host migration in -short mode")
	}
	_, a := server(t, "-game", "swarm", "-tick", "30", "-units", "1000")
	dir := t.TempDir()
	peers := startPeers(t, "http://"+a.http, "commits-migration", 4, 24*time.Second, "",
		"-game", "swarm", "-units", "1000", "-record", filepath.Join(dir, "p{n}.jsonl"))
	time.Sleep(10 * time.Second) // play
	peers[0].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	live := peers[1:]
	waitResumed(t, live, 2, killed, 8*time.Second)
	var worst time.Duration
	for _, p := range live {
		for p.committingAgain(killed).IsZero() {
			if time.Since(killed) > 8*time.Second {
				t.Fatalf("%s not committing again within 8 s of the SIGKILL:\n%s", p.name, p.output())
			}
			time.Sleep(20 * time.Millisecond) // polling its output
		}
		worst = max(worst, p.committingAgain(killed).Sub(killed))
	}
	t.Logf("%s took over the relay; everyone committing again within %v of the SIGKILL", newHost(t, live, 2).name, worst)

	var recs []botproto.CommitRecord
	for i, p := range live {
		s := p.summary(t)
		if s.Peer == nil || s.Peer.Epoch < 2 || s.Commits == nil || s.Commits.Desyncs != 0 {
			t.Errorf("%s: peer %+v, commits %+v", p.name, s.Peer, s.Commits)
		}
		recs = append(recs, readRecords(t, filepath.Join(dir, fmt.Sprintf("p%d.jsonl", i+2)))...)
	}
	checkCommitRecords(t, recs)
	ran := map[uint16]bool{}
	for _, r := range recs {
		for _, e := range r.Executed {
			if e.Kind == 0 {
				ran[e.Tag] = true
			}
		}
	}
	due := killed.Add(8 * time.Second).UnixMicro()
	checked := 0
	for i, r := range recs {
		for _, is := range r.IssuedAt {
			if is.UnixUs > due {
				continue
			}
			checked++
			if !ran[is.Tag] {
				t.Errorf("%s's command %d, issued %v after the kill, never ran", live[i].name, is.Tag,
					time.UnixMicro(is.UnixUs).Sub(killed).Round(time.Millisecond))
			}
		}
	}
	t.Logf("%d commands the survivors issued up to 8 s after the kill all ran", checked)
}
