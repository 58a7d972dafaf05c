package sim

import (
	"math"

	"github.com/tickwire/tickwire/proto"
)

// smoother keeps, per displayed (predicted) body, the offset between
// where it is shown and where prediction puts it. A re-simulation that
// moves a body adds the move to its offset, so the display does not jump;
// the offset then decays exponentially, so the display glides onto the corrected prediction.
type smoother struct {
	offs []bodyOffset // aligned with the bodies last passed to correct or realign
	tmp  []bodyOffset
}

type bodyOffset struct {
	id      proto.NetworkID
	x, y, z float64
}

// correctionStats collects the corrections of own entities.
type correctionStats struct {
	count uint64
	max   float64
	total float64
}

// correct takes the bodies shown at some tick (old, aligned with the
// offsets) and the re-simulated bodies at the same tick (cur): every
// difference becomes part of the offset (or, beyond snap > 0, is
// dropped: the body jumps). smooth false drops every offset (no
// smoothing). The offsets are then aligned with cur.
func (s *smoother) correct(old, cur []Body, smooth bool, snap float64, own func(proto.NetworkID) bool, st *correctionStats) {
	s.tmp = s.tmp[:0]
	i := 0
	for k := range cur {
		b := &cur[k]
		for i < len(old) && old[i].ID < b.ID {
			i++
		}
		o := bodyOffset{id: b.ID}
		if i < len(old) && old[i].ID == b.ID {
			p := s.offs[i]
			dx := float64(int64(old[i].Pos.X) - int64(b.Pos.X))
			dy := float64(int64(old[i].Pos.Y) - int64(b.Pos.Y))
			dz := float64(int64(old[i].Pos.Z) - int64(b.Pos.Z))
			if dx != 0 || dy != 0 || dz != 0 {
				d := math.Sqrt(dx*dx + dy*dy + dz*dz)
				if own(b.ID) {
					st.count++
					st.max = max(st.max, d)
					st.total += d
				}
				if snap > 0 && d > snap {
					p = bodyOffset{}
				} else {
					p.x, p.y, p.z = p.x+dx, p.y+dy, p.z+dz
				}
			}
			if smooth {
				o.x, o.y, o.z = p.x, p.y, p.z
			}
		}
		s.tmp = append(s.tmp, o)
	}
	s.offs, s.tmp = s.tmp, s.offs
}

// realign aligns the offsets with bodies (new bodies get none, gone ones
// lose theirs).
func (s *smoother) realign(bodies []Body) {
	s.tmp = s.tmp[:0]
	i := 0
	for k := range bodies {
		id := bodies[k].ID
		for i < len(s.offs) && s.offs[i].id < id {
			i++
		}
		o := bodyOffset{id: id}
		if i < len(s.offs) && s.offs[i].id == id {
			o = s.offs[i]
		}
		s.tmp = append(s.tmp, o)
	}
	s.offs, s.tmp = s.tmp, s.offs
}

// decay shrinks every offset by factor f, dropping what is too small to
// see (under 1/16 unit).
func (s *smoother) decay(f float64) {
	for i := range s.offs {
		o := &s.offs[i]
		o.x, o.y, o.z = o.x*f, o.y*f, o.z*f
		if math.Abs(o.x) < 1.0/16 && math.Abs(o.y) < 1.0/16 && math.Abs(o.z) < 1.0/16 {
			o.x, o.y, o.z = 0, 0, 0
		}
	}
}

// apply appends bodies shifted by their offsets (bodies must be the ones
// the offsets are aligned with).
func (s *smoother) apply(dst, bodies []Body) []Body {
	for i, b := range bodies {
		if i < len(s.offs) {
			o := &s.offs[i]
			b.Pos.X += int32(math.Round(o.x))
			b.Pos.Y += int32(math.Round(o.y))
			b.Pos.Z += int32(math.Round(o.z))
		}
		dst = append(dst, b)
	}
	return dst
}

// visible is the largest offset (Euclidean) among own bodies.
func (s *smoother) visible(own func(proto.NetworkID) bool) float64 {
	m := 0.0
	for _, o := range s.offs {
		if (o.x != 0 || o.y != 0 || o.z != 0) && own(o.id) {
			m = max(m, math.Sqrt(o.x*o.x+o.y*o.y+o.z*o.z))
		}
	}
	return m
}
