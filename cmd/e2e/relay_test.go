package e2e

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/botproto"
)

// TestCommitsRelaySwarm plays swarm on tickwire-server -game relay, the
// commits mode with no game code on the server, with real processes:
// eight bots (one process) for 30 s, and a ninth (its own process) that
// joins 8 s later through tickwire-netem at "delay 30ms 5ms loss 2%" and
// gets its committed state (1,000 units: swarmUnits) from the others: the relay
// asks them for the digest of their state, one for its bytes, and sends
// the joiner only bytes whose SHA-256 the majority reported.
//
// Checked: the relay counts no desync (it compared the clients'
// checksums with each other) and no bot saw one; every client's
// committed record agrees with every other's over the ticks both ran,
// and every issued command ran exactly once, at one tick, on every
// client whose record covers it (checkCommitRecords); the joiner loaded
// a state that a bot uploaded and the relay verified, and played. The records are not compared with a -game swarm
// run: which tick a command runs at depends on the moment it was
// issued and on the paths, so two real-time runs never issue the same
// commands at the same ticks.
func TestCommitsRelaySwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("relay end to end in -short mode")
	}
	srv, a := server(t, "-game", "relay", "-tick", "30")
	proxy := start(t, "tickwire-netem", "-listen", "127.0.0.1:0", "-upstream", a.udp, "-spec", "delay 30ms 5ms loss 2%", "-seed", "17", "-stats-interval", "0")
	via := proxy.await(t, `listening on (\S+),`)
	dir := t.TempDir()
	mainRec, joinRec := filepath.Join(dir, "main.jsonl"), filepath.Join(dir, "join.jsonl")
	common := []string{"-server", "http://" + a.http, "-game", "swarm", "-units", swarmUnits, "-json", "-progress", "0"}

	done := make(chan botproto.Summary, 1)
	go func() {
		defer close(done) // also when bots fails the test (Goexit)
		s, _ := bots(t, append(slices.Clone(common), "-n", "8", "-duration", "30s", "-record", mainRec)...)
		done <- s
	}()
	time.Sleep(8 * time.Second) // the eight play (real processes, real time)
	joiner := start(t, "tickwire-bot", append(slices.Clone(common), "-via", via, "-n", "1", "-seed", "9", "-duration", "18s", "-record", joinRec)...)
	s, ok := <-done
	if !ok {
		t.FailNow() // the bots' run failed, and said why
	}
	select {
	case <-joiner.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the joining bot did not end:\n%s", joiner.output())
	}
	js := lastSummary(t, joiner.output())

	c := s.Commits
	if c == nil || s.Connected != 8 {
		t.Fatalf("main bots: %+v", s)
	}
	t.Logf("eight bots: %d issued, %d executed (summed over clients), lead %d ticks, commit lag ≤ %d ticks, %d rollbacks, %d kicks, longest commit stall %.0f ms",
		c.Issued, c.Executed, c.Lead, c.CommitLagMax, c.Rollbacks, c.Kicks, c.StallMaxMs)
	if c.Desyncs != 0 || c.Mismatches != 0 {
		t.Errorf("main bots: %d desyncs, %d records differ", c.Desyncs, c.Mismatches)
	}
	jc := js.Commits
	if jc == nil || js.Connected != 1 || jc.Issued == 0 || jc.Desyncs != 0 {
		t.Fatalf("joining bot: %+v", js)
	}
	t.Logf("joining bot: %d issued, %d executed, %d resyncs, %d rejoins", jc.Issued, jc.Executed, jc.Resyncs, jc.Rejoins)

	recs := append(readRecords(t, mainRec), readRecords(t, joinRec)...)
	checkCommitRecords(t, recs)
	if last := recs[len(recs)-1]; len(last.Executed) == 0 {
		t.Error("the joiner's committed world ran nothing")
	}
	if m := regexp.MustCompile(`msg="committed state uploaded and verified" .*size=(\d+)`).FindStringSubmatch(srv.output()); m == nil {
		t.Error("the relay logged no verified upload")
	} else {
		t.Logf("the joiner's state: %s bytes, uploaded by a bot and verified", m[1])
	}
	if v := metric(t, a.admin, "tickwire_desyncs_total"); v != 0 {
		t.Errorf("relay counted %v desyncs", v)
	}
}
