package sim

import (
	"math"
	"slices"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// Prediction with unconditional rollbacks: the client forks the
// newest authoritative state and re-simulates every tick after it with
// the inputs it sampled, whenever a newer authoritative state arrives,
// whether or not the previous prediction was right. The cost is the same
// every frame, so it can be profiled and bounded, and no predicted state
// needs to be kept.

// predict brings the predicted world to the predicted tick: a rollback
// and re-simulation if a newer authoritative state arrived, otherwise
// just the new ticks.
func (c *Client) predict() {
	if !c.hasAuth {
		return
	}
	target := c.Tick()
	if c.rollbackDue {
		c.rollback(target)
	} else {
		c.stepTo(target, c.simTick)
	}
	c.predBodies = c.pred.AppendBodies(c.predBodies[:0])
	c.smooth.realign(c.predBodies)
}

// rollback re-simulates from the authoritative state to target. The
// bodies shown so far (at the old predicted tick) are compared with the
// re-simulated ones at that same tick; differences become smoothed
// corrections.
func (c *Client) rollback(target uint32) {
	c.rollbackDue = false
	c.stats.Rollbacks++
	old, hadPred := c.simTick, c.predicting
	c.fx.settle(c.authTick, c.authIDs, c.predBodies, c.rejected)
	c.rejected = slices.DeleteFunc(c.rejected, func(r rejection) bool { return int32(r.tick-c.authTick) <= 0 })
	c.fx.beginPass()
	c.pred.CopyFrom(c.auth)
	c.simTick, c.predicting = c.authTick, true
	if c.cfg.FirstStep != nil && (int32(target-c.simTick) > 0 || hadPred && int32(old-c.simTick) > 0) {
		first := c.simTick + 1
		c.stepTo(first, old)
		c.cfg.FirstStep(first, c.pred)
	}
	if hadPred && int32(old-c.authTick) > 0 {
		c.stepTo(old, old)
		c.newBodies = c.pred.AppendBodies(c.newBodies[:0])
		c.smooth.correct(c.predBodies, c.newBodies, c.cfg.CorrectionHalfLife > 0, c.cfg.MaxCorrection, c.own, &c.corr)
		c.predBodies, c.newBodies = c.newBodies, c.predBodies
	}
	c.stepTo(target, old)
	if c.resumed && len(c.predBodies) > 0 {
		// The first prediction on a successor (Resume): what was shown
		// ran ahead while the old host was silent; glide from it to the
		// new prediction like any correction.
		c.newBodies = c.pred.AppendBodies(c.newBodies[:0])
		c.smooth.correct(c.predBodies, c.newBodies, c.cfg.CorrectionHalfLife > 0, c.cfg.MaxCorrection, c.own, &c.corr)
		c.predBodies, c.newBodies = c.newBodies, c.predBodies
	}
	c.resumed = false
	c.fx.endPass()
}

// stepTo steps the predicted world up to tick; ticks up to resimTo count
// as re-simulated, later ones as newly predicted.
func (c *Client) stepTo(tick, resimTo uint32) {
	for int32(tick-c.simTick) > 0 {
		t := c.simTick + 1
		c.step(t)
		if int32(t-resimTo) <= 0 {
			c.stats.Resimulated++
		} else {
			c.stats.Predicted++
		}
	}
}

// step simulates tick on the predicted world with the sampled inputs.
// A tick the ring no longer (or never) held runs as a missing input,
// like the server: the previous input repeated with its action zeroed.
// Actions the game's ValidateAction rejects are zeroed, like the server.
func (c *Client) step(tick uint32) {
	c.inputs = c.inputs[:0]
	held := c.ring.slot(tick) != nil
	ab := c.schema.ActionBytes
	for p, player := range c.cfg.Players {
		in := PlayerInput{Player: player}
		scratch := c.scratchIn[p]
		if held {
			in.Data = c.ring.input(tick, p)
		} else {
			in.Missing = true
			if c.ring.slot(tick-1) != nil {
				copy(scratch, c.ring.input(tick-1, p))
			}
			clear(scratch[len(scratch)-ab:])
			in.Data = scratch
		}
		if !in.Missing && ab > 0 {
			if action := in.Data[len(in.Data)-ab:]; !allZero(action) {
				if err := c.pred.ValidateAction(player, tick, action); err != nil {
					copy(scratch, in.Data)
					clear(scratch[len(scratch)-ab:])
					in.Data, in.Rejected = scratch, true
				}
			}
		}
		c.inputs = append(c.inputs, in)
	}
	c.ctx.Tick = tick
	c.ctx.Inputs = c.inputs
	c.ctx.Messages = nil
	c.ctx.Predicted = true
	c.spawn.ids.SetLive(c.authIDs)
	c.spawn.ids.Begin(tick)
	c.pred.Step(&c.ctx)
	c.simTick = tick
}

// decayCorrections fades the display offsets by a frame of dt.
func (c *Client) decayCorrections(dt time.Duration) {
	if dt <= 0 || c.cfg.CorrectionHalfLife <= 0 {
		return
	}
	c.smooth.decay(math.Exp2(-float64(dt) / float64(c.cfg.CorrectionHalfLife)))
}

// Predicted is the predicted world at Tick (read it between calls only).
// Before the first authoritative state it is the world NewClient got.
func (c *Client) Predicted() Game { return c.pred }

// DisplayBodies are the predicted world's bodies as they should be shown:
// each shifted by what remains of its smoothed corrections. Use them for
// the client's own entities (ClientConfig.Own); remote ones are better
// shown from InterpolatedBodies. The slice is reused by the next Advance.
func (c *Client) DisplayBodies() []Body { return c.display }

// Own reports whether id is one of the client's own entities
// (ClientConfig.Own).
func (c *Client) Own(id proto.NetworkID) bool { return c.own(id) }

// Effects are the effect status changes of the last Advance: effects
// predicted for the first time (play them), and earlier predictions
// confirmed (their tick is now authoritative and they survived every
// re-simulation) or cancelled (a re-simulation no longer produces them,
// the server rejected the action behind them, or a predicted spawn is
// missing from the authoritative state: fade them out). A re-simulation
// that produces an effect again does not report it again. The slice is
// reused by the next Advance.
func (c *Client) Effects() []EffectEvent { return c.fx.events }

// clientRewinder rebuilds, for Tick.Rewind in a predicted step, the view
// the client showed when it sampled its input for that tick: the same
// bodies the server's lag compensation rebuilds from the packet header.
type clientRewinder struct {
	c   *Client
	buf []Body
}

func (r *clientRewinder) rewind(tick uint32, player uint16) ([]Body, RewindInfo) {
	c := r.c
	s := c.ring.slot(tick)
	if s == nil || c.playerIndex(player) < 0 {
		// A remote player, or an input the client never had: the server
		// has no view for it either.
		return nil, RewindInfo{Unknown: true}
	}
	v := s.view
	info := RewindInfo{Requested: v, Used: v}
	from, ok1 := c.hist.Get(v.From)
	to, ok2 := c.hist.Get(v.To)
	if !ok1 || !ok2 {
		info.Unknown = true
		return nil, info
	}
	p := c.period.Seconds()
	arrival := float64(tick) - c.clock.ageEMA/p
	info.Rewind = time.Duration((arrival - viewTime(v)) * float64(c.period))
	r.buf = InterpolateBodies(r.buf[:0], from, to, v.Blend)
	return r.buf, info
}
