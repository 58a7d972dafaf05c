package reliability

import "time"

// DefaultInitialRTT is the RTT assumed before the first sample.
const DefaultInitialRTT = 100 * time.Millisecond

// rttEstimator keeps RFC 6298 / RFC 9002 style RTT statistics.
type rttEstimator struct {
	initial  time.Duration
	latest   time.Duration
	smoothed time.Duration
	variance time.Duration
	min      time.Duration
	samples  uint64
}

// update folds in a sample, subtracting the peer's reported ack delay when
// that does not push the sample below the minimum RTT (RFC 9002 §5.3).
func (r *rttEstimator) update(sample, ackDelay time.Duration) {
	if sample <= 0 {
		sample = 1
	}
	r.latest = sample
	if r.samples == 0 || sample < r.min {
		r.min = sample
	}
	adjusted := sample
	if ackDelay > 0 && sample-ackDelay >= r.min {
		adjusted = sample - ackDelay
	}
	if r.samples == 0 {
		r.smoothed = adjusted
		r.variance = adjusted / 2
	} else {
		d := r.smoothed - adjusted
		if d < 0 {
			d = -d
		}
		r.variance = (3*r.variance + d) / 4
		r.smoothed = (7*r.smoothed + adjusted) / 8
	}
	r.samples++
}

// srtt returns the smoothed RTT, or the initial RTT before any sample.
func (r *rttEstimator) srtt() time.Duration {
	if r.samples == 0 {
		return r.initial
	}
	return r.smoothed
}

// rttvar returns the RTT variation, or half the initial RTT before any
// sample.
func (r *rttEstimator) rttvar() time.Duration {
	if r.samples == 0 {
		return r.initial / 2
	}
	return r.variance
}
