package sim

import (
	"time"

	"github.com/tickwire/tickwire/proto"
)

// Clock steering constants, shared by the predicted clock and
// the interpolation clock.
const (
	// maxDilation bounds time dilation: a clock runs at most 10 % fast or
	// slow, so the simulation never visibly changes pace.
	maxDilation = 0.1
	// emaWeight is the weight of a new measurement in the smoothed input
	// age, packet interval, jitter and interpolation delay. (The usual
	// weight is 1/32; 1/16 halves the filter's lag, which keeps the
	// loop well damped at 150 ms round trips, and still leaves a 25 % noise
	// of a single sample at 6 %.)
	emaWeight = 1.0 / 16
	// fullDilationError is the error (in ticks) at which a clock reaches
	// full dilation; the dilation is proportional below it.
	fullDilationError = 4
	// maxFrameStep bounds how much time one Advance moves a clock: after a
	// longer stall the predicted clock is behind and catches up by
	// jumping (see predClock.ack), the interpolation clock snaps.
	maxFrameStep = 250 * time.Millisecond
)

func clamp1(v float64) float64 { return max(-1, min(1, v)) }

// predClock is the client's predicted clock: the tick the client samples
// inputs for and predicts to, as a real number. It runs at the fixed
// tick rate times (1 + dilation) and steers the dilation so that the
// input age the server reports converges to a target: inputs arrive just
// before the server needs them (no server-clock estimate, only
// "how long did my input for tick N wait").
type predClock struct {
	period   time.Duration
	tick     float64
	last     time.Time
	ageEMA   float64 // seconds
	target   float64 // seconds
	every    float64 // ticks between the packets carrying inputs (ClientConfig.InputInterval)
	dilation float64
	jumpWait time.Time
	// After a jump, stale holds until an ack for staleBefore arrives: the
	// acks for earlier ticks are for inputs sampled before the jump (or
	// before its last top-up) and describe the clock that was too far
	// behind, not this one, so they do not steer it. Those for ticks
	// before jumpFrom, the inputs sampled before the jump, tell how far
	// behind that clock really was; covered is how many ticks of that
	// the jump made up (see ack).
	stale       bool
	staleBefore uint32
	jumpFrom    uint32
	covered     float64
	// extra is the ticks dilation added in total; hist samples it at
	// recent frames so that the part the server has not seen yet in the
	// ages it reports can be told (see inFlight).
	extra float64
	hist  [128]clockSample
	histN int
}

type clockSample struct {
	at    time.Time
	extra float64
}

// inFlight is how many ticks dilation added in the last span: the effect
// of recent steering that the reported ages cannot show yet (inputs
// sampled since then are still on their way, or are not yet in the
// smoothed age). Counting it in the error keeps the loop from
// overshooting however long the round trip.
func (k *predClock) inFlight(now time.Time, span time.Duration) float64 {
	n := min(k.histN, len(k.hist))
	for i := 1; i <= n; i++ {
		s := &k.hist[(k.histN-i)%len(k.hist)]
		if now.Sub(s.at) >= span {
			return k.extra - s.extra
		}
	}
	if n == 0 {
		return 0
	}
	return k.extra - k.hist[(k.histN-n)%len(k.hist)].extra
}

// start anchors the clock from the handshake: serverTick is the server's
// tick when it answered, rtt the handshake round trip. The clock starts
// a full round trip plus the target age ahead (the answer took half the
// round trip to arrive and our inputs take the other half), plus a tick.
func (k *predClock) start(now time.Time, serverTick uint32, rtt time.Duration) {
	p := k.period.Seconds()
	k.target = k.baseTarget()
	k.ageEMA = k.target
	k.dilation = 0
	k.tick = float64(serverTick) + (max(rtt, 0).Seconds()+k.target)/p + 1
	k.last = now
	k.jumpWait = time.Time{}
	k.stale = false
}

// advance moves the clock to now.
func (k *predClock) advance(now time.Time) {
	dt := now.Sub(k.last)
	k.last = now
	if dt <= 0 {
		return
	}
	dt = min(dt, maxFrameStep)
	ticks := dt.Seconds() / k.period.Seconds()
	k.tick += ticks * (1 + k.dilation)
	k.extra += ticks * k.dilation
	k.hist[k.histN%len(k.hist)] = clockSample{now, k.extra}
	k.histN++
}

// baseTarget is the target age on a path without variation: one tick
// (an input whose packet is lost goes out again with the next one) at
// every tick's cadence. At a cadence of n ticks the next packet is n
// ticks later, and a packet's inputs are ages apart by a tick each (the
// first sampled waited n−1 ticks for it): the mean age must be n ticks
// plus half of those n−1 for the first to have its n.
func (k *predClock) baseTarget() float64 {
	n := max(k.every, 1)
	return (n + (n-1)/2) * k.period.Seconds()
}

// ack takes the input age the server reported in its update for
// serverTick (newest: the newest input tick it holds for the player).
// rttVar sets the target age: baseTarget plus twice the round-trip
// variation.
// It reports whether the input was late and whether the clock jumped.
//
// A missing input while the server holds nothing newer than a few ticks
// before serverTick means the clock is far behind (a longer path, a bad
// start, a stall): the clock jumps ahead by what is missing plus the
// target rather than creeping up at 10 %, and does not jump again until
// acks describing the new clock can have arrived (one lead later). The
// first such ack comes early in a lengthening of the path, before the
// gap has grown to its full size, and the target may be swollen by the
// round-trip variation the lengthening itself caused: the acks for the
// inputs sampled before the jump, still on their way, then tell how far
// behind the old clock really was: the jump is topped up to that if it
// fell short (2 ticks after a 100 ms step on a steady path, inputs late
// for a second; TestClientClockStepUp). Those acks do not steer the new
// clock: taken for its own missing inputs they sped it up at full
// dilation past a jump that was already long enough (after
// TestGameClockVirtual's 150 ms step the jump landed 4.4 ticks past the
// settled lead, and they took the clock to 7).
func (k *predClock) ack(now time.Time, age int16, newest, serverTick uint32, rttVar time.Duration) (late, jumped bool) {
	p := k.period.Seconds()
	k.target = k.baseTarget() + 2*max(rttVar, 0).Seconds()
	sample := -p // a missing input counts as a tick late
	if age == proto.InputAgeMissing {
		late = true
		behind := int32(serverTick - newest)
		switch {
		case k.stale && int32(serverTick-k.jumpFrom) < 0 && float64(behind) > k.covered:
			// An input sampled before the jump, further behind than the
			// jump made up: top the jump up to that.
			k.jump(now, serverTick, float64(behind)-k.covered)
			k.covered = float64(behind)
			return late, true
		case behind > 2 && !now.Before(k.jumpWait):
			k.jumpFrom = uint32(int64(k.tick)) + 1
			k.covered = float64(behind) + k.target/p
			k.jump(now, serverTick, k.covered)
			return late, true
		}
	} else {
		d, _ := AgeDuration(age)
		sample = d.Seconds()
		late = age < 0
	}
	if k.stale {
		if int32(serverTick-k.staleBefore) < 0 {
			return late, false
		}
		k.stale = false
	}
	k.ageEMA += emaWeight * (sample - k.ageEMA)
	// Too old: we run too far ahead, slow down; too young: speed up. The
	// ticks dilation added within the last lead (a round trip plus the
	// target, in ticks) and the smoothing's lag (1/emaWeight acks, one
	// per tick) are not in the age yet: count them as if they were.
	span := time.Duration((max(k.tick-float64(serverTick), 0) + 1/emaWeight) * float64(k.period))
	steer := k.ageEMA + k.inFlight(now, span)*p
	k.dilation = -maxDilation * clamp1((steer-k.target)/(fullDilationError*p))
	return late, false
}

// jump moves the clock ticks ahead at once, for the ack of serverTick,
// and takes the acks for the ticks sampled so far as stale.
func (k *predClock) jump(now time.Time, serverTick uint32, ticks float64) {
	k.stale, k.staleBefore = true, uint32(int64(k.tick))+1
	k.tick += ticks
	k.ageEMA = k.target
	k.dilation = 0
	lead := k.tick - float64(serverTick)
	k.jumpWait = now.Add(time.Duration((lead + 4) * float64(k.period)))
}
