package sim

import (
	"time"

	"github.com/tickwire/tickwire/proto"
)

// renderState keeps what RenderBodies blends between: the display of the
// last frame of the newest predicted tick and of the tick before.
type renderState struct {
	tick      uint32
	cur, prev []Body
	scratch   []Body
}

// keep notes the display of this frame (predicted tick tick).
func (r *renderState) keep(tick uint32, display []Body) {
	if tick != r.tick {
		r.cur, r.prev = r.prev, r.cur
		r.tick = tick
		if len(r.prev) == 0 {
			r.prev = append(r.prev[:0], display...)
		}
	}
	r.cur = append(r.cur[:0], display...)
}

// RenderBodies appends to dst, in ascending id order, the bodies to draw
// at display time now, for a renderer faster than the tick rate (a
// 144 Hz display over 60 Hz ticks): the client's own bodies (ClientConfig.Own)
// blended, with their correction offsets, between the last two predicted
// ticks by how far now is into the predicted tick — the usual one-tick
// render delay of fixed-step games —, and every other body interpolated
// at the interpolation clock's moment for now. It changes nothing: call
// it between two frames (Advance) as often as the display wants; a now
// before the last frame draws that frame.
func (c *Client) RenderBodies(now time.Time, dst []Body) []Body {
	if !c.started || !c.hasAuth || c.cfg.Headless {
		return dst
	}
	p := c.period.Seconds()
	dt := max(min(now.Sub(c.lastFrame), maxFrameStep), 0).Seconds() / p // ticks since the frame
	alpha := c.clock.tick + dt*(1+c.clock.dilation) - float64(c.Tick())
	alpha = max(0, min(alpha, 1))
	t := min(c.interp.time+dt*(1+c.interp.dilation), c.clock.tick)
	v := c.viewAt(t)
	from, _ := c.hist.Get(v.From)
	to, _ := c.hist.Get(v.To)
	r := &c.render
	r.scratch = InterpolateBodies(r.scratch[:0], from, to, v.Blend)
	blend := uint16(alpha*float64(proto.BlendOne) + 0.5)
	i, j, k := 0, 0, 0
	for i < len(r.scratch) || j < len(r.cur) {
		// The next own body of the display, or an interpolated one.
		if j < len(r.cur) && (i == len(r.scratch) || r.cur[j].ID <= r.scratch[i].ID) {
			b := r.cur[j]
			j++
			if !c.own(b.ID) {
				continue
			}
			for k < len(r.prev) && r.prev[k].ID < b.ID {
				k++
			}
			if k < len(r.prev) && r.prev[k].ID == b.ID {
				b.Pos = lerpVec(r.prev[k].Pos, b.Pos, blend)
			}
			if i < len(r.scratch) && r.scratch[i].ID == b.ID {
				i++
			}
			dst = append(dst, b)
			continue
		}
		if b := r.scratch[i]; !c.own(b.ID) {
			dst = append(dst, b)
		}
		i++
	}
	return dst
}

func lerpVec(a, b Vec3, blend uint16) Vec3 {
	return Vec3{X: Lerp(a.X, b.X, blend), Y: Lerp(a.Y, b.Y, blend), Z: Lerp(a.Z, b.Z, blend)}
}
