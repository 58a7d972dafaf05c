package e2e

import (
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tickwire/tickwire/internal/botproto"
)

// count is how many times re matches p's output so far.
func (p *proc) count(re string) int {
	return len(regexp.MustCompile(re).FindAllStringIndex(p.output(), -1))
}

// awaitCount waits until re matches p's output more than n times and
// returns when it saw it, or fails after limit.
func (p *proc) awaitCount(t *testing.T, re string, n int, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for p.count(re) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("%s printed /%s/ %d times in %v, want more than %d", p.cmd.Path, re, p.count(re), limit, n)
		}
		time.Sleep(10 * time.Millisecond) // polling the output for a line
	}
	return time.Now()
}

// hiccupRun starts a server with args, one bot in a process of its own
// (the one the test stops) playing for loneFor, and others more bots in
// another process playing for othersFor; it waits until all joined and
// have played 2 s, then stops the lone bot's process (SIGSTOP). done
// gets the others' summary when they end.
func hiccupRun(t *testing.T, args []string, loneFor string, others int, othersFor string) (srv, lone *proc, done <-chan botproto.Summary) {
	t.Helper()
	srv, a := server(t, args...)
	common := []string{"-server", "http://" + a.http, "-json", "-progress", "0"}
	lone = start(t, "tickwire-bot", append(slices.Clone(common), "-n", "1", "-seed", "5", "-duration", loneFor)...)
	ch := make(chan botproto.Summary, 1)
	go func() {
		s, _ := bots(t, append(slices.Clone(common), "-n", strconv.Itoa(others), "-duration", othersFor)...)
		ch <- s
	}()
	srv.awaitCount(t, `msg="player joined"`, others, 30*time.Second)
	time.Sleep(2 * time.Second) // the bots play (real processes, real time)
	if err := lone.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return srv, lone, ch
}

// loneSummary waits for the lone bot's end and returns its summary.
func loneSummary(t *testing.T, lone *proc) botproto.Summary {
	t.Helper()
	select {
	case <-lone.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the stopped bot did not end:\n%s", lone.output())
	}
	return lastSummary(t, lone.output())
}

// TestHiccupRejoin: eight bots play (seven in one process, one in
// another). The lone bot's process is stopped for 3 s (SIGSTOP), as a
// Wi-Fi roam or a stalled machine would stop a player, then continued.
// The server marks its player interrupted but keeps the session: the
// player is back in its own slot within a second of the resume; nobody
// hears it leave or join; no reliable message of any bot is lost or
// duplicated.
func TestHiccupRejoin(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("hiccups end to end in -short mode")
	}
	srv, lone, done := hiccupRun(t, nil, "17s", 7, "13s")
	backs := srv.count(`msg="client back"`)
	time.Sleep(3 * time.Second)
	lone.cmd.Process.Signal(syscall.SIGCONT)
	resumed := time.Now()
	back := srv.awaitCount(t, `msg="client back"`, backs, 10*time.Second)
	t.Logf("the stopped player was back %v after its process resumed", back.Sub(resumed).Round(time.Millisecond))
	if d := back.Sub(resumed); d > time.Second {
		t.Errorf("the stopped player was back %v after the resume, want within 1 s", d)
	}

	s := <-done
	// The seven ended first: what they heard of the lone player is all
	// of its hiccup.
	if n := srv.count(`msg="player joined"`); n != 8 {
		t.Errorf("the server logged %d joins, want 8 (no player joined twice)", n)
	}
	e := s.Events
	t.Logf("seven bots: interrupted %d, back %d, left %d; reliable sent %d, lost %d, duplicates %d", e.PlayersInterrupted, e.PlayersBack, e.PlayersLeft, s.ReliableSent, s.ReliableLost, s.ReliableDuplicates)
	if e.PlayersInterrupted == 0 || e.PlayersBack == 0 {
		t.Errorf("the seven heard %d interruptions and %d returns, want the stopped player's", e.PlayersInterrupted, e.PlayersBack)
	}
	// (The seven hear each other leave as they close, one after the
	// other: the server's log says whether the stopped one ever left.)
	if n := srv.count(`msg="player left".*reason=timeout|msg="players await their rejoin"`); n != 0 {
		t.Errorf("the server dropped the stopped player (%d lines)", n)
	}
	if s.Connected != 7 || s.Failed() {
		t.Errorf("seven bots: %d connected, lost %d, duplicates %d, out of order %d, desyncs %d",
			s.Connected, s.ReliableLost, s.ReliableDuplicates, s.ReliableOutOfOrder, s.Desyncs)
	}
	ls := loneSummary(t, lone)
	t.Logf("stopped bot: %d sessions lost, %d rejoins; reliable sent %d, lost %d, duplicates %d", ls.Interruptions, ls.Rejoins, ls.ReliableSent, ls.ReliableLost, ls.ReliableDuplicates)
	if ls.Failed() || ls.Disconnects != 0 {
		t.Errorf("stopped bot: %d disconnects, lost %d, duplicates %d, out of order %d, desyncs %d",
			ls.Disconnects, ls.ReliableLost, ls.ReliableDuplicates, ls.ReliableOutOfOrder, ls.Desyncs)
	}
}

// TestHiccupPastGrace: a bot stopped for longer than the session
// timeout and the rejoin grace together (2 s and 3 s here, for a short
// test; 10 s and 30 s by default) is dropped once: its player leaves
// with the reason, its rejoin is refused, and the bot joins again as a
// new player, saying so in its summary.
func TestHiccupPastGrace(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("hiccups end to end in -short mode")
	}
	srv, lone, done := hiccupRun(t, []string{"-session-timeout", "2s", "-rejoin-grace", "3s"}, "16s", 2, "18s")
	srv.awaitCount(t, `msg="player left".*not back in its grace`, 0, 20*time.Second)
	lone.cmd.Process.Signal(syscall.SIGCONT)
	srv.awaitCount(t, `msg="player joined"`, 3, 30*time.Second)
	ls := loneSummary(t, lone)
	t.Logf("stopped bot: %d sessions lost, %d rejoins, %d refused past the grace, %d joined again as new players", ls.Interruptions, ls.Rejoins, ls.RejoinFailures, ls.NewPlayers)
	if ls.Interruptions != 1 || ls.Rejoins != 0 || ls.RejoinFailures != 1 || ls.NewPlayers != 1 {
		t.Errorf("stopped bot: %d lost, %d rejoined, %d refused, %d new; want 1, 0, 1, 1", ls.Interruptions, ls.Rejoins, ls.RejoinFailures, ls.NewPlayers)
	}
	if n := srv.count(`msg="player left"`); n < 1 {
		t.Errorf("the server logged no leave for the player past its grace")
	}
	s := <-done
	if e := s.Events; e.PlayersInterrupted == 0 || e.PlayersLeft == 0 {
		t.Errorf("the two heard %d interruptions and %d leaves, want the stopped player's", e.PlayersInterrupted, e.PlayersLeft)
	}
}

// TestHiccupRejoinAfterTimeout: a bot stopped past the session timeout
// (2 s here) but within the rejoin grace loses its session and comes back
// into its own slot with its credential: the others hear it interrupted
// and back, never leave or join, and the bot's summary counts one
// session lost and one rejoin.
func TestHiccupRejoinAfterTimeout(t *testing.T) {
	t.Parallel() // a few processes that wait on real time: side by side (doc.go)
	if testing.Short() {
		t.Skip("hiccups end to end in -short mode")
	}
	srv, lone, done := hiccupRun(t, []string{"-session-timeout", "2s"}, "16s", 2, "13s")
	srv.awaitCount(t, `msg="players await their rejoin"`, 0, 20*time.Second)
	lone.cmd.Process.Signal(syscall.SIGCONT)
	resumed := time.Now()
	back := srv.awaitCount(t, `msg="players rejoined"`, 0, 20*time.Second)
	t.Logf("back in its slot %v after its process resumed", back.Sub(resumed).Round(time.Millisecond))
	s := <-done
	if e := s.Events; e.PlayersInterrupted == 0 || e.PlayersBack == 0 || e.PlayersLeft != 0 {
		t.Errorf("the two heard %d interruptions, %d returns, %d leaves; want the stopped player's hiccup and no leave", e.PlayersInterrupted, e.PlayersBack, e.PlayersLeft)
	}
	if n := srv.count(`msg="player joined"`); n != 3 {
		t.Errorf("the server logged %d joins, want 3 (the rejoin is no join)", n)
	}
	ls := loneSummary(t, lone)
	t.Logf("stopped bot: %d sessions lost, %d rejoins (p50 %.0f ms from the loss), %d echoes lost with the session; desyncs %d",
		ls.Interruptions, ls.Rejoins, ls.RejoinMs.P50, ls.ReliableLostWithSession, ls.Desyncs)
	if ls.Interruptions != 1 || ls.Rejoins != 1 || ls.RejoinFailures != 0 || ls.Desyncs != 0 || ls.Disconnects != 0 {
		t.Errorf("stopped bot: %d lost, %d rejoined, %d failed, %d desyncs, %d disconnects; want 1, 1, 0, 0, 0",
			ls.Interruptions, ls.Rejoins, ls.RejoinFailures, ls.Desyncs, ls.Disconnects)
	}
}
