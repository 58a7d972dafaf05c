package sim

import (
	"math"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// interpSnap: an interpolation delay this far off its target (a path
// that changed by a lot, a long stall) is not steered but reset.
const interpSnap = 250 * time.Millisecond

// Weights of a new deviation in the smoothed jitter when it is above and
// below the current value (rise: halfway to a new peak at once; decay:
// over about two seconds of packets).
const (
	jitterRise  = 1.0 / 2
	jitterDecay = 1.0 / 128
)

// interpClock is the client's interpolation clock: the moment,
// in (fractional) server ticks, at which remote entities are shown,
// between the two received snapshots around it. Its delay behind the
// newest snapshot is steered, with its own time dilation, towards the
// smoothed interval between packets plus twice their jitter: as small as
// possible while a late packet rarely leaves it without a snapshot ahead.
type interpClock struct {
	period    time.Duration
	time      float64 // ticks
	last      time.Time
	started   bool
	newest    uint32 // newest server tick in a packet
	hasNewest bool
	resumed   bool      // resumeAt: not started before a tick after newest
	arrival   time.Time // when newest arrived
	interval  float64   // smoothed time between packets with newer ticks (s)
	jitter    float64   // smoothed |interval sample - interval| (s)
	delay     float64   // smoothed newest - time at arrivals (s)
	dilation  float64
	snaps     uint64
	gapAt     time.Time // when a packet last arrived after lost ones
	gap       int       // the most packets lost in a row since gapMemory before gapAt
	// steps are the tick differences of the last packets; their least
	// is the server's cadence (game.Config.SnapshotInterval), by which
	// a difference counts packets lost.
	steps [8]uint32
	nstep int
}

// gapMemory is how long after lost packets the interpolation delay
// covers their interval.
const gapMemory = 2 * time.Second

// maxGap bounds the lost packets in a row the delay covers.
const maxGap = 6

// target is the interpolation delay the clock steers to, in seconds: the
// packet interval plus twice its jitter, and, while packets
// are being lost, the interval of the longest run of lost packets seen
// in the last gapMemory (up to maxGap), so that the packet after them
// has time to arrive before interpolation runs out.
func (k *interpClock) target() float64 {
	t := k.base()
	if k.gap > 0 && k.last.Sub(k.gapAt) < gapMemory {
		t += float64(k.gap) * float64(k.step()) * k.period.Seconds()
	}
	return t
}

// step is the server's cadence in ticks: the least tick difference of
// the last packets (a lost packet makes one difference larger, never
// smaller).
func (k *interpClock) step() uint32 {
	s := uint32(1)
	for i, d := range k.steps[:min(k.nstep, len(k.steps))] {
		if i == 0 || d < s {
			s = d
		}
	}
	return s
}

// base is the part of the target the path's jitter calls for.
func (k *interpClock) base() float64 { return k.interval + 2*k.jitter }

func (k *interpClock) reset(p time.Duration) {
	*k = interpClock{period: p, interval: p.Seconds(), jitter: max(p/2, initialJitter).Seconds()}
}

// initialJitter is the jitter assumed before packets have shown it: it
// decays to what they show over a few seconds (jitterDecay), like a
// retransmission timer that starts long. A connection's first seconds
// are its roughest: the full snapshot and the baselines of the first
// deltas are being acknowledged, and the clocks are still moving. With
// half a tick, 16 bots at "delay 90ms 30ms loss 12% duplicate 3%
// reorder 8%" stalled in 80–119 frames of their first 3 s (0–1 after);
// with 60 ms, in none.
const initialJitter = 60 * time.Millisecond

// resumeAt resets the clock for a game resumed at tick by a new host
// (Client.Resume): it starts with the first packet of a later tick. The
// new host holds the game at tick until its players are back (a second
// or so at most), and a clock started by the resume would run through
// the hold past the newest state: every frame of the hold a stall,
// then a snap once the game ran again.
func (k *interpClock) resumeAt(tick uint32) {
	k.reset(k.period)
	k.newest, k.hasNewest, k.resumed = tick, true, true
}

// advance moves the clock to now.
func (k *interpClock) advance(now time.Time) {
	dt := now.Sub(k.last)
	k.last = now
	if dt <= 0 || !k.started {
		return
	}
	dt = min(dt, maxFrameStep)
	k.time += dt.Seconds() / k.period.Seconds() * (1 + k.dilation)
}

// packet takes the arrival at now of a packet for server tick.
func (k *interpClock) packet(now time.Time, tick uint32) {
	if k.hasNewest && int32(tick-k.newest) <= 0 {
		return // not newer: says nothing about the interval
	}
	if k.resumed {
		// The resumed game runs: start here (the hold is no interval).
		k.resumed, k.hasNewest = false, false
	}
	p := k.period.Seconds()
	if k.hasNewest {
		diff := tick - k.newest
		k.steps[k.nstep%len(k.steps)] = diff
		k.nstep++
		if lost := int(min(diff/k.step()-1, maxGap)); lost > 0 {
			if now.Sub(k.gapAt) >= gapMemory {
				k.gap = 0
			}
			k.gap, k.gapAt = max(k.gap, lost), now
		}
		iv := now.Sub(k.arrival).Seconds()
		k.interval += emaWeight * (iv - k.interval)
		// The jitter rises fast and decays slowly (over about a second of
		// packets): a lost or late packet is the event the delay must
		// cover, and it recurs, so a plain average of deviations (the
		// usual 1/32 weight) forgets it long before the next one and the
		// interpolation runs dry at every loss.
		dev := math.Abs(iv - k.interval)
		w := jitterDecay
		if dev > k.jitter {
			w = jitterRise
		}
		k.jitter += w * (dev - k.jitter)
	}
	k.newest, k.hasNewest, k.arrival = tick, true, now
	if !k.started {
		k.started, k.last = true, now
		k.time = float64(tick) - k.target()/p
		k.delay = k.target()
		return
	}
	k.advance(now)
	d := (float64(tick) - k.time) * p
	if math.Abs(d-k.target()) > interpSnap.Seconds() {
		k.time = float64(tick) - k.target()/p
		k.delay, k.dilation = k.target(), 0
		k.snaps++
		return
	}
	k.delay += emaWeight * (d - k.delay)
	// Too much delay: speed up; too little: slow down.
	k.dilation = maxDilation * clamp1((k.delay-k.target())/(fullDilationError*p))
}

// interpolate moves the interpolation clock to now, keeps it within
// MaxInterpLag of the moment inputs sampled now reach the server, and
// computes the view shown this frame and its bodies.
func (c *Client) interpolate(now time.Time) {
	k := &c.interp
	k.advance(now)
	if !k.started || !c.hasAuth {
		c.view = View{From: c.authTick, To: c.authTick}
		c.interpBodies = c.interpBodies[:0]
		return
	}
	p := c.period.Seconds()
	// The input sampled now reaches the server about ageEMA before its
	// tick, give or take the path's variation, which the target age
	// holds twice beyond one tick: keep that much margin so that the
	// server honours the view (see ServerConfig.MaxRewind). The bound
	// never pulls the view closer to the newest snapshot than the
	// jitter part of the interpolation delay, though: on a path longer
	// than MaxInterpLag remote entities stay smooth and the server's
	// rewind clamps instead. (The cover for lost packets gives way to
	// the bound.)
	margin := max(c.clock.target-p, 0)
	bound := c.clock.tick - (c.clock.ageEMA-margin+c.cfg.MaxInterpLag.Seconds())/p
	lo := min(bound, float64(c.histNewest)-k.base()/p)
	if k.time < lo {
		k.time = lo
		c.stats.InterpClamps++
	}
	k.time = min(k.time, c.clock.tick)
	c.stats.InterpFrames++
	if k.time > float64(c.histNewest) {
		c.stats.InterpStalls++
		if bound > float64(c.histNewest)-k.target()/p {
			// The bound left less delay than the target: lag
			// compensation won over smoothness.
			c.stats.InterpStallsBounded++
		}
	}
	c.view = c.viewAt(k.time)
	from, _ := c.hist.Get(c.view.From)
	to, _ := c.hist.Get(c.view.To)
	c.interpBodies = InterpolateBodies(c.interpBodies[:0], from, to, c.view.Blend)
}

// viewAt is the view of the moment t (in ticks) between the two recorded
// snapshots around it: the newest at or before t and the next one. Past
// the newest snapshot it holds the newest (a stall); before the oldest
// it holds the oldest.
func (c *Client) viewAt(t float64) View {
	newest := c.histNewest
	back := int64(newest) - int64(math.Floor(t))
	if back <= 0 {
		return View{From: newest, To: newest}
	}
	n := int64(c.hist.Len())
	for k := back; k < n; k++ {
		from := newest - uint32(k)
		if _, ok := c.hist.Get(from); !ok {
			continue
		}
		to := from + 1
		for ; to != newest; to++ {
			if _, ok := c.hist.Get(to); ok {
				break
			}
		}
		f := (t - (float64(newest) - float64(k))) / float64(to-from)
		return View{From: from, To: to, Blend: proto.BlendFromFloat(f)}
	}
	// Older than anything recorded: the oldest recorded snapshot.
	for k := min(back, n-1); k > 0; k-- {
		if _, ok := c.hist.Get(newest - uint32(k)); ok {
			return View{From: newest - uint32(k), To: newest - uint32(k)}
		}
	}
	return View{From: newest, To: newest}
}

// record keeps the bodies of an authoritative world for interpolation and
// for client-side rewinds.
func (c *Client) record(tick uint32, world Game) {
	if !c.hasHist || int32(tick-c.histNewest) > 0 {
		c.histNewest, c.hasHist = tick, true
	}
	b := c.hist.Put(tick)
	if cap(b) < c.histBodies {
		// One allocation per slot instead of append's doubling from zero
		// in every one of them.
		b = make([]Body, 0, c.histBodies+c.histBodies/4)
	}
	b = world.AppendBodies(b)
	c.histBodies = len(b)
	c.hist.Set(tick, b)
}

// InterpolatedBodies are the bodies of the authoritative state at the
// interpolation time of this frame (View's moment): what remote entities
// should be shown as. They are what lag compensation rebuilds on the
// server. The slice is reused by the next Advance.
func (c *Client) InterpolatedBodies() []Body { return c.interpBodies }

// InterpTime is the moment shown this frame, in (fractional) server
// ticks.
func (c *Client) InterpTime() float64 { return c.interp.time }
