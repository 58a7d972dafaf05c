package tickwire

import (
	"testing"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// TestServerStallExcused: a server whose loop did not run for 3 s (a
// SIGSTOP, a machine too busy) does not drop its clients for the silence
// of that time: it counts their silence in its own running time, and
// marks them interrupted after Config.Interrupt and drops them once they
// have been silent past the timeout in that time.
func TestServerStallExcused(t *testing.T) {
	s, conns, now := newBareServer(t, 1, 4)
	defer s.builder.stop()
	interval := time.Second / 60
	step := func(d time.Duration) {
		*now = now.Add(d)
		s.tick(*now)
	}
	open := func() (n int) {
		for _, c := range conns {
			if !c.Closed() {
				n++
			}
		}
		return n
	}
	for range 30 { // 0.5 s of silent clients
		step(interval)
	}
	step(3 * time.Second) // the loop did not run
	if n := open(); n != 4 {
		t.Fatalf("%d of 4 connections open after the server's own 3-s stall", n)
	}
	if st := s.Stats().Stalled; st < 2900*time.Millisecond || st > 3*time.Second {
		t.Fatalf("stalled %v, want about 3 s", st)
	}
	// Silence counts in the loop's running time: 0.5 s so far, and the
	// two tick intervals of the stall not excused.
	silent := 500*time.Millisecond + 2*interval
	for silent+2*interval < s.cfg.Interrupt {
		step(interval)
		silent += interval
	}
	for _, c := range conns {
		if c.Interrupted() {
			t.Fatalf("conn %d interrupted %v into its silence (interrupt %v)", c.ID(), silent, s.cfg.Interrupt)
		}
	}
	step(3 * interval)
	silent += 3 * interval
	for _, c := range conns {
		if !c.Interrupted() {
			t.Fatalf("conn %d not interrupted %v into its silence (interrupt %v)", c.ID(), silent, s.cfg.Interrupt)
		}
	}
	for silent+8*interval < s.cfg.Timeout {
		step(interval)
		silent += interval
	}
	if n := open(); n != 4 {
		t.Fatalf("%d of 4 connections open %v into their silence (timeout %v)", n, silent, s.cfg.Timeout)
	}
	for range 20 {
		step(interval)
	}
	if n, timeouts := open(), s.Stats().Disconnects[proto.DisconnectTimeout]; n != 0 || timeouts != 4 {
		t.Fatalf("%d of 4 connections open past the timeout, %d timed out", n, timeouts)
	}
	if st := s.Stats(); st.Interrupted != 4 {
		t.Fatalf("%d interruptions counted, want 4", st.Interrupted)
	}
}
