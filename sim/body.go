package sim

import (
	"math"

	"github.com/tickwire/tickwire/proto"
)

// Vec3 is a position or extent in the game's fixed-point units.
type Vec3 struct{ X, Y, Z int32 }

// Shape is a body's collision shape.
type Shape uint8

const (
	// ShapeNone: the body has a position (smoothed on display) but is not
	// hit-tested.
	ShapeNone Shape = iota
	// ShapeSphere: a sphere of radius Size.X around Pos.
	ShapeSphere
	// ShapeBox: an axis-aligned box with half extents Size around Pos.
	ShapeBox
)

// Body is an entity's position and collision shape: what lag compensation
// rewinds and what correction smoothing offsets.
type Body struct {
	ID    proto.NetworkID
	Shape Shape
	Pos   Vec3
	Size  Vec3
}

// Lerp interpolates between a and b at blend (0 = a, proto.BlendOne = b)
// with integer arithmetic, so every peer computes the same value. Clients
// must render with this (and the quantised blend from View) for the
// server's lag compensation to rebuild exactly what they saw.
func Lerp(a, b int32, blend uint16) int32 {
	return int32(int64(a) + (int64(b)-int64(a))*int64(blend)/proto.BlendOne)
}

// LerpVec3 is Lerp per component.
func LerpVec3(a, b Vec3, blend uint16) Vec3 {
	return Vec3{Lerp(a.X, b.X, blend), Lerp(a.Y, b.Y, blend), Lerp(a.Z, b.Z, blend)}
}

// InterpolateBodies appends to dst the bodies present in both from and to
// (each sorted by ID), with position and size interpolated at blend and
// the shape of to. Bodies present in only one of them are left out: an
// entity is shown (and hittable) only once both snapshots around the
// render time hold it. Server and client use this same function.
func InterpolateBodies(dst, from, to []Body, blend uint16) []Body {
	i, j := 0, 0
	for i < len(from) && j < len(to) {
		a, b := &from[i], &to[j]
		switch {
		case a.ID < b.ID:
			i++
		case a.ID > b.ID:
			j++
		default:
			dst = append(dst, Body{ID: b.ID, Shape: b.Shape, Pos: LerpVec3(a.Pos, b.Pos, blend), Size: LerpVec3(a.Size, b.Size, blend)})
			i++
			j++
		}
	}
	return dst
}

// Ray is the segment from Origin to Origin+Dir.
type Ray struct {
	Origin Vec3
	Dir    Vec3
}

// Hit is the first body a ray touches.
type Hit struct {
	ID proto.NetworkID
	// T is where along the ray it was hit, in [0, 1].
	T float64
}

// RayCast returns the first body with a shape that the ray touches,
// skipping the body with id skip (the shooter). Ties go to the lower id.
// The arithmetic is float64 with every product explicitly rounded (no
// fused multiply-add), so all platforms agree bit for bit.
func RayCast(bodies []Body, r Ray, skip proto.NetworkID) (Hit, bool) {
	best := Hit{T: math.Inf(1)}
	for i := range bodies {
		b := &bodies[i]
		if b.ID == skip {
			continue
		}
		var t float64
		var ok bool
		switch b.Shape {
		case ShapeSphere:
			t, ok = raySphere(r, b.Pos, b.Size.X)
		case ShapeBox:
			t, ok = rayBox(r, b.Pos, b.Size)
		}
		if ok && t < best.T {
			best = Hit{ID: b.ID, T: t}
		}
	}
	return best, !math.IsInf(best.T, 1)
}

func f64(v int32) float64 { return float64(v) }

// dot with explicitly rounded products.
func dot(ax, ay, az, bx, by, bz float64) float64 {
	return float64(ax*bx) + float64(ay*by) + float64(az*bz)
}

func raySphere(r Ray, c Vec3, radius int32) (float64, bool) {
	fx := f64(r.Origin.X) - f64(c.X)
	fy := f64(r.Origin.Y) - f64(c.Y)
	fz := f64(r.Origin.Z) - f64(c.Z)
	dx, dy, dz := f64(r.Dir.X), f64(r.Dir.Y), f64(r.Dir.Z)
	rr := float64(f64(radius) * f64(radius))
	cc := dot(fx, fy, fz, fx, fy, fz) - rr
	if cc <= 0 {
		return 0, true // starts inside
	}
	a := dot(dx, dy, dz, dx, dy, dz)
	if a == 0 {
		return 0, false
	}
	b := dot(fx, fy, fz, dx, dy, dz)
	if b >= 0 {
		return 0, false // pointing away
	}
	disc := float64(b*b) - float64(a*cc)
	if disc < 0 {
		return 0, false
	}
	t := (-b - math.Sqrt(disc)) / a
	if t < 0 || t > 1 {
		return 0, false
	}
	return t, true
}

func rayBox(r Ray, c, half Vec3) (float64, bool) {
	tmin, tmax := 0.0, 1.0
	axes := [3][4]float64{
		{f64(r.Origin.X), f64(r.Dir.X), f64(c.X) - f64(half.X), f64(c.X) + f64(half.X)},
		{f64(r.Origin.Y), f64(r.Dir.Y), f64(c.Y) - f64(half.Y), f64(c.Y) + f64(half.Y)},
		{f64(r.Origin.Z), f64(r.Dir.Z), f64(c.Z) - f64(half.Z), f64(c.Z) + f64(half.Z)},
	}
	for _, ax := range axes {
		o, d, lo, hi := ax[0], ax[1], ax[2], ax[3]
		if d == 0 {
			if o < lo || o > hi {
				return 0, false
			}
			continue
		}
		t1, t2 := (lo-o)/d, (hi-o)/d
		if t1 > t2 {
			t1, t2 = t2, t1
		}
		tmin = max(tmin, t1)
		tmax = min(tmax, t2)
		if tmin > tmax {
			return 0, false
		}
	}
	return tmin, true
}
