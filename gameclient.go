package tickwire

import (
	"errors"
	"math"
	"time"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// InputFunc returns a player's input for a tick (appended to dst, exactly
// the game's input size). The GameClient calls it once per player for
// every tick it runs ahead to, in tick order.
type InputFunc func(player uint16, tick uint32, dst []byte) []byte

// GameClient plays a game on a Client: it rebuilds the server's state
// from snapshot deltas and full snapshots (deltacomp.Replica), asks for a
// resync when a delta does not apply or a checksum differs, and sends its
// players' inputs for the ticks it runs ahead to, each packet repeating
// the inputs the server has not acknowledged. Its clock runs ahead of the
// server by just enough that inputs arrive shortly before the server needs
// them: it steers the input age the server reports towards a target with
// time dilation of at most ±10 % (seed 003).
//
// Create it with NewGameClient and pass it in Dialer.Game. Its methods
// other than Stats and State run on the client's loop.
type GameClient struct {
	c       *Client
	input   InputFunc
	schema  gameSchema
	replica *deltacomp.Replica
	codecs  deltacomp.Codecs

	// Clock: the tick the client runs ahead to, as a real number.
	period    time.Duration
	pred      float64
	last      time.Time
	started   bool
	ageEMA    float64 // seconds
	dilation  float64
	ackedTick uint32 // newest server tick seen in a header

	// Inputs of the local players, by tick (a ring).
	players   []uint16
	ring      []byte // inputRing ticks × players × input size
	ringTicks []uint32
	nextInput uint32   // the next tick to sample
	newest    []uint32 // per player: newest input tick the server acknowledged
	hasNewest []bool
	lastDelta uint32 // revision of the last delta applied (0: none in this packet)
	deltaTick uint32
	resyncDue bool
	resyncWhy proto.ResyncReason
	resyncAt  time.Time
	checkIdx  []int32
	connected time.Time
	jumpWait  time.Time
	frameBuf  []byte
	stats     GameClientStats
}

// GameClientStats count what a GameClient saw.
type GameClientStats struct {
	Deltas, FullSnapshots uint64
	Resyncs               uint64 // resync requests sent
	Desyncs               uint64 // checksum mismatches
	ChecksumsOK           uint64
	InputsSent            uint64 // distinct inputs sampled and sent
	LateInputs            uint64 // server reported our input missing or late (after ConvergeTime)
	ClockJumps            uint64 // times the clock jumped ahead instead of dilating
	Rejected              uint64 // actions the server rejected
	Lead                  float64
	InputAge              time.Duration // smoothed input age the server reports
	Dilation              float64
	Entities              int
}

type gameSchema struct{ input, record int }

// ConvergeTime is how long after connecting a GameClient's clock is
// given to converge before late inputs count in its statistics.
const ConvergeTime = 3 * time.Second

// inputRing is how many ticks of inputs are kept (a power of two, at
// least proto.MaxInputsPerFrame).
const inputRing = 64

// NewGameClient returns a game client for a game whose inputs are
// inputSize bytes and records recordSize bytes (the game's sim.Schema),
// with input as the source of its players' inputs.
func NewGameClient(inputSize, recordSize int, input InputFunc) (*GameClient, error) {
	if inputSize < 1 || inputSize > proto.MaxInputBytes {
		return nil, errors.New("tickwire: input size out of range")
	}
	r, err := deltacomp.NewReplica(deltacomp.ReplicaConfig{RecordSize: recordSize})
	if err != nil {
		return nil, err
	}
	return &GameClient{input: input, schema: gameSchema{inputSize, recordSize}, replica: r}, nil
}

// attach binds g to a client whose session was just accepted.
func (g *GameClient) attach(c *Client, now time.Time, serverTick uint32, rtt time.Duration) {
	g.c = c
	g.period = time.Second / time.Duration(c.tickRate)
	g.players = append(g.players[:0], c.Players()...)
	n := len(g.players)
	g.ring = make([]byte, inputRing*n*g.schema.input)
	g.ringTicks = make([]uint32, inputRing)
	g.newest = make([]uint32, n)
	g.hasNewest = make([]bool, n)
	g.ackedTick = serverTick
	g.last = now
	// Start ahead by half the handshake's round trip (the response and
	// the accept) plus the target input age and a tick; the input age
	// feedback takes over from there.
	g.connected = now
	lead := (rtt/2 + 2*g.period).Seconds() / g.period.Seconds()
	g.pred = float64(serverTick) + lead
	g.nextInput = uint32(g.pred)
	g.started = true
	c.sess.hooks = g
}

// targetAge is the input age the clock steers to: one tick (a lost
// packet delays an input by one send, and the next packet repeats it)
// plus twice the RTT variation.
func (g *GameClient) targetAge() float64 {
	return (g.period + 2*g.c.sess.acks.RTTVar()).Seconds()
}

// advance moves the clock to now and samples the inputs of the ticks it
// passed.
func (g *GameClient) advance(now time.Time) {
	dt := now.Sub(g.last).Seconds()
	g.last = now
	if dt < 0 || dt > 1 {
		dt = 0
	}
	g.pred += dt / g.period.Seconds() * (1 + g.dilation)
	target := uint32(g.pred)
	if int32(target-g.nextInput) > inputRing/2 {
		// Far behind (a stall): skip to now rather than burst inputs.
		g.nextInput = target - inputRing/2
	}
	for ; int32(target-g.nextInput) >= 0; g.nextInput++ {
		t := g.nextInput
		slot := int(t % inputRing)
		g.ringTicks[slot] = t
		for p, player := range g.players {
			dst := g.inputSlot(slot, p)
			in := g.input(player, t, dst[:0])
			if len(in) != g.schema.input {
				clear(dst)
			} else if &in[0] != &dst[0] {
				copy(dst, in)
			}
		}
		g.stats.InputsSent++
	}
}

func (g *GameClient) inputSlot(slot, p int) []byte {
	size := g.schema.input
	off := (slot*len(g.players) + p) * size
	return g.ring[off : off+size : off+size]
}

// fields puts the predicted tick in the header; the interpolated world is
// the newest state received (a client that renders interpolation sets
// these from what it shows).
func (g *GameClient) fields() packetFields {
	tick := g.nextInput - 1
	from := g.deltaTick
	if int32(tick-from) < 0 || tick-from > proto.MaxInterpLag {
		from = tick
	}
	return packetFields{tick: tick, interpFrom: from, interpTo: from}
}

// redundancy is how many inputs each frame repeats at least: 3, more when
// packets are lost often.
func (g *GameClient) redundancy() int {
	return 3 + int(math.Ceil(g.c.sess.acks.Loss()*20))
}

// appendFrames writes one input frame per local player (every input the
// server has not acknowledged, at least redundancy()) and a pending
// resync request.
func (g *GameClient) appendFrames(b []byte, room int, pn uint64) []byte {
	start := len(b)
	now := g.c.now()
	newestTick := g.nextInput - 1
	for p, player := range g.players {
		count := g.redundancy()
		if g.hasNewest[p] {
			if un := int32(newestTick - g.newest[p]); un > int32(count) {
				count = int(un)
			}
		}
		count = min(count, proto.MaxInputsPerFrame, inputRing/2)
		first := newestTick - uint32(count) + 1
		data := g.frameBuf[:0]
		for t := first; int32(newestTick-t) >= 0; t++ {
			slot := int(t % inputRing)
			if g.ringTicks[slot] != t {
				data = data[:0] // a gap (before the first input): start after it
				continue
			}
			data = append(data, g.inputSlot(slot, p)...)
		}
		g.frameBuf = data
		if len(data) == 0 {
			continue
		}
		f := proto.InputFrame{Player: player, Tick: newestTick, Count: uint8(len(data) / g.schema.input), Size: uint16(g.schema.input), Data: data}
		if nb, err := f.Append(b); err == nil && len(nb)-start <= room {
			b = nb
		}
	}
	if g.resyncDue && now.Sub(g.resyncAt) > 500*time.Millisecond {
		req := g.replica.ResyncRequest(g.resyncWhy)
		if nb, err := req.Append(b); err == nil && len(nb)-start <= room {
			b = nb
			g.resyncAt = now
			g.stats.Resyncs++
		}
	}
	return b
}

func (g *GameClient) resync(why proto.ResyncReason) {
	if !g.resyncDue {
		g.resyncDue, g.resyncWhy = true, why
	}
}

// frame handles a game frame from the server.
func (g *GameClient) frame(t proto.FrameType, f []byte, h proto.Header) {
	if int32(h.Tick-g.ackedTick) > 0 {
		g.ackedTick = h.Tick
	}
	switch t {
	case proto.FrameSnapshotDelta:
		d, _, err := proto.ParseSnapshotDeltaFrame(f)
		if err != nil {
			g.c.sess.stats.BadFrames++
			return
		}
		switch err := g.replica.Apply(&d); {
		case err == nil:
			g.stats.Deltas++
			g.lastDelta, g.deltaTick = d.Revision, d.Tick
		case errors.Is(err, deltacomp.ErrBaselineMissing):
			g.resync(proto.ResyncBaselineMissing)
		case errors.Is(err, deltacomp.ErrStale):
		default:
			g.resync(proto.ResyncPatchError)
		}
	case proto.FrameFullSnapshot:
		full, _, err := proto.ParseFullSnapshotFrame(f)
		if err != nil {
			g.resync(proto.ResyncPatchError)
			return
		}
		if err := g.replica.ApplyFull(&full, &g.codecs); err != nil {
			g.resync(proto.ResyncPatchError)
			return
		}
		g.stats.FullSnapshots++
		g.resyncDue = false
	case proto.FrameChecksum:
		cs, _, err := proto.ParseChecksumFrame(f)
		if err != nil || g.lastDelta == 0 || g.replica.Revision() != g.lastDelta || cs.Tick != g.deltaTick {
			return // not right after the delta it describes: nothing to compare
		}
		if g.sumReplica(g.lastDelta) != cs.Sum {
			g.stats.Desyncs++
			g.resync(proto.ResyncChecksum)
		} else {
			g.stats.ChecksumsOK++
		}
	case proto.FrameInputAck:
		a, _, err := proto.ParseInputAckFrame(f)
		if err != nil {
			return
		}
		known := false // the server held an input of this player before
		for p, player := range g.players {
			if player != a.Player {
				continue
			}
			known = g.hasNewest[p]
			if !g.hasNewest[p] || int32(a.Newest-g.newest[p]) > 0 {
				g.newest[p], g.hasNewest[p] = a.Newest, true
			}
		}
		if !known {
			return // the first inputs are still on their way: no age yet
		}
		// Late inputs count once the clock had time to converge.
		settled := g.c.now().Sub(g.connected) > ConvergeTime
		age := -g.period.Seconds() // missing: as late as a tick
		if a.Age == proto.InputAgeMissing {
			if settled {
				g.stats.LateInputs++
			}
			if behind := int32(h.Tick - a.Newest); behind > 2 && g.c.now().After(g.jumpWait) {
				// Far behind (the delay grew, or a bad start): jump ahead
				// by what is missing plus the target instead of creeping
				// up at 10 %.
				g.pred += float64(behind) + g.targetAge()/g.period.Seconds()
				g.ageEMA = g.targetAge()
				g.stats.ClockJumps++
				// Acks in flight still describe the old clock: do not
				// jump again before they are through.
				g.jumpWait = g.c.now().Add(g.c.sess.acks.RTT() + 4*g.period)
				return
			}
		} else {
			age = float64(a.Age) * 100e-6
			if a.Age < 0 && settled {
				g.stats.LateInputs++
			}
		}
		g.ageEMA += 0.1 * (age - g.ageEMA)
		// Too old an input: we run too far ahead, slow down; too young or
		// late: speed up. Full dilation at 4 ticks of error.
		e := (g.ageEMA - g.targetAge()) / (4 * g.period.Seconds())
		g.dilation = -0.1 * max(-1, min(1, e))
	case proto.FrameControl:
		ctl, _, err := proto.ParseControlFrame(f)
		if err == nil && ctl.Code == proto.ControlActionRejected {
			g.stats.Rejected++
		}
	default:
		g.c.sess.stats.BadFrames++
	}
}

// sumReplica is SumEntities over the replica's entities whose value came
// from revision rev (those the delta frame just applied carried).
func (g *GameClient) sumReplica(rev uint32) uint64 {
	s := g.replica.State()
	g.checkIdx = g.checkIdx[:0]
	for i := range s.Len() {
		if g.replica.EntityRevision(i) == rev {
			g.checkIdx = append(g.checkIdx, int32(i))
		}
	}
	return SumEntities(s, g.checkIdx)
}

func (g *GameClient) delivered(uint64) {}
func (g *GameClient) lost(uint64)      {}

// Stats returns the counters. Safe from any goroutine.
func (g *GameClient) Stats() GameClientStats {
	if g.c == nil {
		return GameClientStats{}
	}
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	st := g.stats
	st.Lead = g.pred - float64(g.ackedTick)
	st.InputAge = time.Duration(g.ageEMA * float64(time.Second))
	st.Dilation = g.dilation
	st.Entities = g.replica.State().Len()
	return st
}

// State calls f with the replicated state (the newest value of every
// entity the server sent), under the client's lock.
func (g *GameClient) State(f func(s *deltacomp.Snapshot)) {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	f(g.replica.State())
}
