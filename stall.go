package tickwire

import "time"

// loopStall measures how long a loop was not running: the time between
// two of its ticks beyond twice the tick interval (a SIGSTOP, a frozen
// laptop, a machine too busy to schedule it). A peer is not to blame for
// that time, so its silence is measured in the loop's own running time:
// the loop excuses its sessions the stall before it judges them, having
// taken in what waited in its socket.
type loopStall struct {
	last time.Time
	// total is all the time the loop was not running, for its stats.
	total time.Duration
}

// since returns how long the loop was not running before its tick at
// now, ticking every interval.
func (l *loopStall) since(now time.Time, interval time.Duration) time.Duration {
	var d time.Duration
	if !l.last.IsZero() {
		d = max(now.Sub(l.last)-2*interval, 0)
	}
	l.last = now
	l.total += d
	return d
}
