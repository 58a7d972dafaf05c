package migrate

import "time"

// Default timings: the host is heard at least every
// Heartbeat (its snapshots, or a keep-alive on a quiet session) and lost
// after DefaultTimeout (three missed heartbeats); an elected successor
// that does not announce itself within DefaultPromoteTimeout is struck
// off and the next one elected.
const (
	Heartbeat             = 500 * time.Millisecond
	DefaultTimeout        = 3 * Heartbeat
	DefaultPromoteTimeout = time.Second
)

// HostMonitor declares a host lost after Timeout without an
// authenticated packet from it. The zero value with Timeout zero uses
// DefaultTimeout; call Heard once at connection to arm it.
type HostMonitor struct {
	Timeout time.Duration
	last    time.Time
	armed   bool
}

func (m *HostMonitor) timeout() time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return DefaultTimeout
}

// Heard records a packet from the host that arrived at now. Packets are
// handled in arrival order, but a timestamp older than the last is
// ignored rather than moving the deadline back.
func (m *HostMonitor) Heard(now time.Time) {
	if !m.armed || now.After(m.last) {
		m.last, m.armed = now, true
	}
}

// Deadline is when the host counts as lost if nothing arrives before
// (zero before the first Heard).
func (m *HostMonitor) Deadline() time.Time {
	if !m.armed {
		return time.Time{}
	}
	return m.last.Add(m.timeout())
}

// Lost reports whether the host has been silent for Timeout at now.
func (m *HostMonitor) Lost(now time.Time) bool {
	return m.armed && !now.Before(m.Deadline())
}

// Excuse moves the deadline later by d, the time the player's own loop
// did not run before now (a SIGSTOP, a frozen laptop): the host is not
// to blame for a silence nobody was listening to. The last packet never
// moves past now.
func (m *HostMonitor) Excuse(now time.Time, d time.Duration) {
	if !m.armed || d <= 0 {
		return
	}
	m.last = m.last.Add(d)
	if m.last.After(now) {
		m.last = now
	}
}

// Expire makes the host count as lost from now on: it said goodbye (a
// host that stepped down), or its session ended.
func (m *HostMonitor) Expire(now time.Time) {
	m.last, m.armed = now.Add(-m.timeout()), true
}
