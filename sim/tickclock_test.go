package sim

import (
	"testing"
	"time"
)

// TestTickClockFixedPace drives the schedule with an irregular, sometimes
// very late caller: tick k is always due at origin + k×Period, a late
// caller catches up MaxCatchUp ticks per Due call, and the pace never
// changes.
func TestTickClockFixedPace(t *testing.T) {
	const period = 10 * time.Millisecond
	s := TickClock{Period: period, MaxCatchUp: 3}
	if s.Due(t0) != 0 {
		t.Fatal("due before Start")
	}
	s.Start(t0, 100)
	run := func(now time.Time) int {
		n := s.Due(now)
		for range n {
			s.Ran()
		}
		return n
	}
	for _, tc := range []struct {
		at   time.Duration // since t0
		want int           // ticks due
		next uint32        // Next after running them
	}{
		{-time.Millisecond, 0, 100},
		{0, 1, 101}, // tick 100 is due at t0
		{5 * time.Millisecond, 0, 101},
		{10 * time.Millisecond, 1, 102},
		{10 * time.Millisecond, 0, 102},
		// 65 ms late at 85 ms: ticks 102..108 are due, 3 per call.
		{85 * time.Millisecond, 3, 105},
		{85 * time.Millisecond, 3, 108},
		{85 * time.Millisecond, 1, 109},
		{85 * time.Millisecond, 0, 109},
		{90 * time.Millisecond, 1, 110},
		{139 * time.Millisecond, 3, 113},
		{139 * time.Millisecond, 1, 114},
		{139 * time.Millisecond, 0, 114},
	} {
		if n := run(t0.Add(tc.at)); n != tc.want || s.Next() != tc.next {
			t.Fatalf("at %v: %d due, next %d; want %d, %d", tc.at, n, s.Next(), tc.want, tc.next)
		}
	}
	// The pace never changed: every tick is still due on the grid.
	for k := uint32(100); k < 200; k++ {
		if want := t0.Add(time.Duration(k-100) * period); !s.TimeOf(k).Equal(want) {
			t.Fatalf("TimeOf(%d) = %v, want %v", k, s.TimeOf(k), want)
		}
	}
	if got := s.TickAt(t0.Add(25 * time.Millisecond)); got != 102.5 {
		t.Fatalf("TickAt(+25ms) = %v, want 102.5", got)
	}
	if s.Reanchors != 0 {
		t.Fatalf("%d reanchors", s.Reanchors)
	}
}

// TestTickClockReanchor: beyond MaxBehind the backlog is given up once,
// the next tick is due at the call, and the pace is unchanged after.
func TestTickClockReanchor(t *testing.T) {
	const period = 10 * time.Millisecond
	s := TickClock{Period: period} // defaults: 4 per call, 250 ms
	s.Start(t0, 0)
	if n := s.Due(t0.Add(240 * time.Millisecond)); n != 4 {
		t.Fatalf("240 ms late: %d due, want 4 (catch up, no reanchor)", n)
	}
	stall := t0.Add(time.Second)
	if n := s.Due(stall); n != 1 || s.Reanchors != 1 {
		t.Fatalf("1 s stall: %d due, %d reanchors; want 1, 1", n, s.Reanchors)
	}
	if !s.TimeOf(0).Equal(stall) {
		t.Fatalf("after reanchor tick 0 is due at %v, want %v", s.TimeOf(0), stall)
	}
	s.Ran()
	if !s.TimeOf(1).Equal(stall.Add(period)) || s.Due(stall.Add(period-1)) != 0 || s.Due(stall.Add(period)) != 1 {
		t.Fatal("pace changed after reanchor")
	}
}

// TestServerDueNeverChangesPace: the server engine schedules tick k at
// start + k periods whatever the callers do.
func TestServerDueNeverChangesPace(t *testing.T) {
	s := newTestServer(t, ServerConfig{}, &tgTest{})
	p := s.Period()
	if p != time.Second/60 {
		t.Fatalf("default period %v", p)
	}
	now := t0
	for i := range 300 {
		// Irregular callers: 1 to 40 ms apart.
		now = now.Add(time.Duration(1+(i*7919)%40) * time.Millisecond)
		for n := s.Due(now); n > 0; n-- {
			s.Step()
		}
	}
	for k := uint32(1); k <= s.Tick(); k++ {
		if want := t0.Add(time.Duration(k) * p); !s.Scheduled(k).Equal(want) {
			t.Fatalf("tick %d scheduled at %v, want %v", k, s.Scheduled(k), want)
		}
	}
	if want := uint32(now.Sub(t0) / p); s.Tick() != want {
		t.Fatalf("at %v the server is at tick %d, want %d", now.Sub(t0), s.Tick(), want)
	}
}
