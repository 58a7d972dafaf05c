package reliability

import "time"

// KCP's retransmission timeout bounds in nodelay mode (kcp-go's
// IKCP_RTO_NDL and IKCP_RTO_DEF), in milliseconds.
const (
	kcpMinRTO     = 30
	kcpInitialRTO = 200
	kcpMaxRTO     = 60000
	// timerSlack makes the timer err early: its RTT samples read KCP's
	// millisecond clock through an offset that may be off by one.
	timerSlack = 2 * time.Millisecond
	// idleFlush bounds the time between flushes while segments are in
	// flight, whatever the timer says.
	idleFlush = 200 * time.Millisecond
)

// flushTimer tells when KCP's flush has work that Send and Input did not
// already start: a retransmission on timeout, or an early retransmission
// after an acknowledgement that skipped a segment. KCP keeps those timers
// private, and its Update flushes at most once per interval, so a
// channel that called it on every tick would push its next possible
// flush 10 ms past each tick and hold a no-delay send back by that much.
// The timer watches the segments that cross the channel instead: the
// data segments KCP sends (sequence number and when), the cumulative and
// selective acknowledgements that come back, and the RTT samples KCP
// takes from them, fed to KCP's own estimator (RFC 6298 with its
// constants) for the timeout. It errs early: a flush with nothing due
// costs only the delay the timer exists to avoid.
type flushTimer struct {
	epoch  time.Time // sent times are durations since epoch
	slots  []txSlot  // data segments by sn & mask
	mask   uint32
	una    uint32 // the peer's cumulative acknowledgement
	nxt    uint32 // one past the highest sn sent
	active bool   // a data segment was sent

	// KCP's clock (milliseconds since its package loaded) is behind ours
	// by offset; learnt from the timestamps of the segments it sends.
	offset    int64
	offsetSet bool

	srtt, rttvar int32 // KCP's estimator, in milliseconds
	rto          time.Duration
	interval     int32 // KCP's interval as its timeout reads it (see SetRepairWait), in milliseconds

	early bool // an acknowledgement skipped an unacknowledged segment
}

type txSlot struct {
	sn    uint32
	at    time.Duration // last sent, since epoch
	acked bool
}

func newFlushTimer(now time.Time, window int, interval time.Duration) flushTimer {
	n := pow2AtLeast(2 * window)
	return flushTimer{
		epoch:    now,
		slots:    make([]txSlot, n),
		mask:     uint32(n - 1),
		rto:      kcpInitialRTO * time.Millisecond,
		interval: kcpInterval(interval),
	}
}

// pow2AtLeast returns the smallest power of two ≥ n.
func pow2AtLeast(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// snBefore reports whether sequence number a comes before b.
func snBefore(a, b uint32) bool { return int32(a-b) < 0 }

// sent records a data segment KCP put out (new or retransmitted) with
// its KCP timestamp ts.
func (t *flushTimer) sent(now time.Time, sn, ts uint32) {
	d := now.Sub(t.epoch)
	if !t.offsetSet {
		t.offset = int64(d/time.Millisecond) - int64(ts)
		t.offsetSet = true
	}
	t.slots[sn&t.mask] = txSlot{sn: sn, at: d}
	if !t.active || !snBefore(sn, t.nxt) {
		if !t.active {
			t.una = sn
		}
		t.nxt = sn + 1
		t.active = true
	}
}

// received records the segments of one reliable frame as KCP is about to
// read them: every segment's una, and each acknowledgement's sn and ts.
func (t *flushTimer) received(s *segment) {
	if !t.active {
		return
	}
	if snBefore(t.una, s.Una) && !snBefore(t.nxt, s.Una) {
		t.una = s.Una
	}
	if s.Cmd != cmdAck {
		return
	}
	if sl := &t.slots[s.SN&t.mask]; sl.sn == s.SN && !snBefore(s.SN, t.una) && snBefore(s.SN, t.nxt) {
		sl.acked = true
	}
}

// ackedThrough finishes one frame's acknowledgements: latestTS is the
// timestamp of its last acknowledgement (KCP's RTT sample), and an
// acknowledgement above the cumulative one (maxAck) means KCP will
// retransmit the segments it skipped at its next flush.
func (t *flushTimer) ackedThrough(now time.Time, latestTS, maxAck uint32) {
	if !t.active || !t.offsetSet {
		return
	}
	if snBefore(t.una, maxAck) && snBefore(maxAck, t.nxt) && !t.slots[t.una&t.mask].acked {
		t.early = true
	}
	kcpNow := int64(now.Sub(t.epoch)/time.Millisecond) - t.offset
	rtt := int32(uint32(kcpNow) - latestTS)
	if rtt < 0 {
		return // as KCP: a timestamp from its future is no sample
	}
	t.sample(rtt)
}

// capSample returns the timestamp an acknowledgement carrying ts should
// carry for KCP to sample an RTT of at most limit at now, and whether
// that differs from ts. Before the timer knows KCP's clock it leaves ts.
func (t *flushTimer) capSample(now time.Time, ts uint32, limit time.Duration) (uint32, bool) {
	if !t.offsetSet {
		return ts, false
	}
	kcpNow := uint32(int64(now.Sub(t.epoch)/time.Millisecond) - t.offset)
	ms := int32(min(limit/time.Millisecond, kcpMaxRTO))
	if int32(kcpNow-ts) > ms {
		return kcpNow - uint32(ms), true
	}
	return ts, false
}

// sample is kcp-go's update_ack.
func (t *flushTimer) sample(rtt int32) {
	if t.srtt == 0 {
		t.srtt = rtt
		t.rttvar = rtt >> 1
	} else {
		delta := rtt - t.srtt
		t.srtt += delta >> 3
		if delta < 0 {
			delta = -delta
		}
		if rtt < t.srtt-t.rttvar {
			t.rttvar += (delta - t.rttvar) >> 5
		} else {
			t.rttvar += (delta - t.rttvar) >> 2
		}
	}
	rto := t.srtt + max(t.interval, t.rttvar<<2)
	t.rto = time.Duration(min(max(rto, kcpMinRTO), kcpMaxRTO)) * time.Millisecond
}

// due reports whether a flush now would retransmit something: an early
// retransmission (if early), or a segment in flight for its timeout.
func (t *flushTimer) due(now time.Time, early bool) bool {
	if t.early && early {
		return true
	}
	if !t.active || t.una == t.nxt {
		return false
	}
	deadline := now.Sub(t.epoch) - t.rto + timerSlack
	for sn := t.una; sn != t.nxt; sn++ {
		sl := &t.slots[sn&t.mask]
		if sl.sn != sn {
			return true // not seen sent: let KCP decide
		}
		if !sl.acked && sl.at <= deadline {
			return true
		}
	}
	return false
}

// inFlight reports whether data segments wait for acknowledgement.
func (t *flushTimer) inFlight() bool { return t.active && t.una != t.nxt }

// flushed records that KCP flushed: early retransmissions went out.
func (t *flushTimer) flushed() { t.early = false }
