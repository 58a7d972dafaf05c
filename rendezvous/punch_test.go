package rendezvous

import (
	"context"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// TestPunchSchedule: in virtual time, Punch sends every address one
// punch at each step of PunchSchedule and no more; a cancelled context
// stops it at once.
func TestPunchSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to := []netip.AddrPort{netip.MustParseAddrPort("198.18.0.11:4000"), netip.MustParseAddrPort("198.18.1.2:4000")}
		start := time.Now()
		var at []time.Duration
		sent := map[netip.AddrPort]int{}
		Punch(context.Background(), to, func(b []byte, addr netip.AddrPort) {
			if !IsPunch(b) {
				t.Fatalf("sent %x", b)
			}
			if addr == to[0] {
				at = append(at, time.Since(start))
			}
			sent[addr]++
		})
		if len(at) != len(PunchSchedule) || sent[to[1]] != len(PunchSchedule) {
			t.Fatalf("punches at %v, %v", at, sent)
		}
		for i, d := range PunchSchedule {
			if at[i] != d {
				t.Errorf("punch %d at %v, want %v", i, at[i], d)
			}
		}

		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		done := make(chan struct{})
		go func() {
			Punch(ctx, to[:1], func([]byte, netip.AddrPort) { n++ })
			close(done)
		}()
		time.Sleep(150 * time.Millisecond)
		cancel()
		<-done
		if n != 3 {
			t.Errorf("%d punches in the first 150 ms, want 3 (0, 50, 100 ms)", n)
		}
	})
}
