package deltacomp

import "math"

// Quantisation helpers: turn float state into the small integers a record
// holds. Records should store what changes a little as integers whose low
// bits change and high bits do not; see Schema for the byte layout.

// QuantizeFixed rounds v to a fixed-point integer with the given number of
// steps per unit (e.g. 512 for 1/512 m), saturating at the int32 range.
func QuantizeFixed(v, stepsPerUnit float32) int32 {
	f := math.Round(float64(v) * float64(stepsPerUnit))
	switch {
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	case f != f: // NaN
		return 0
	}
	return int32(f)
}

// DequantizeFixed is the inverse of QuantizeFixed.
func DequantizeFixed(q int32, stepsPerUnit float32) float32 {
	return float32(float64(q) / float64(stepsPerUnit))
}

// QuantizeRange maps v in [lo, hi] to an integer in [0, 2^bits−1]
// (clamping), for velocities and other bounded values. bits ≤ 32.
func QuantizeRange(v, lo, hi float32, bits uint) uint32 {
	maxQ := float64(uint64(1)<<bits - 1)
	t := (float64(v) - float64(lo)) / (float64(hi) - float64(lo))
	if !(t > 0) { // also NaN
		return 0
	}
	if t >= 1 {
		return uint32(maxQ)
	}
	return uint32(math.Round(t * maxQ))
}

// DequantizeRange is the inverse of QuantizeRange.
func DequantizeRange(q uint32, lo, hi float32, bits uint) float32 {
	maxQ := float64(uint64(1)<<bits - 1)
	return float32(float64(lo) + float64(q)/maxQ*(float64(hi)-float64(lo)))
}

// Bias turns a signed quantised value into an unsigned field of the given
// width by adding 2^(bits−1), clamping to the field. Unlike zigzag, a small
// change of the value stays a small change of the field (zigzag doubles
// it), and unlike plain two's complement in a wider integer, crossing zero
// flips only the field's own bytes, not a 32-bit word's.
func Bias(v int32, bits uint) uint32 {
	half := int64(1) << (bits - 1)
	x := int64(v) + half
	switch {
	case x < 0:
		return 0
	case x > 2*half-1:
		return uint32(2*half - 1)
	}
	return uint32(x)
}

// Unbias is the inverse of Bias.
func Unbias(u uint32, bits uint) int32 {
	return int32(int64(u) - int64(1)<<(bits-1))
}

// Quat is a rotation quaternion (x, y, z, w), expected to be unit length.
type Quat struct{ X, Y, Z, W float32 }

// SmallestThree is a quaternion quantised by dropping its largest
// component (recoverable from unit length, with its sign made positive)
// and storing the other three, each in [−1/√2, 1/√2], in Bits bits.
// Largest is the dropped component's index (0 x, 1 y, 2 z, 3 w); A, B, C
// are the remaining components in index order.
type SmallestThree struct {
	Largest uint8
	A, B, C uint32
}

const invSqrt2 = 0.70710678118654752440

// QuantizeQuat quantises q with bits per component (2–16; 9 gives about
// 0.2° precision, the cube demo's setting).
func QuantizeQuat(q Quat, bits uint) SmallestThree {
	c := [4]float64{float64(q.X), float64(q.Y), float64(q.Z), float64(q.W)}
	largest := 0
	for i := 1; i < 4; i++ {
		if math.Abs(c[i]) > math.Abs(c[largest]) {
			largest = i
		}
	}
	sign := 1.0
	if c[largest] < 0 {
		sign = -1
	}
	var out [3]uint32
	k := 0
	maxQ := float64(uint32(1)<<bits - 1)
	for i := 0; i < 4; i++ {
		if i == largest {
			continue
		}
		t := (c[i]*sign + invSqrt2) / (2 * invSqrt2)
		t = math.Max(0, math.Min(1, t))
		out[k] = uint32(math.Round(t * maxQ))
		k++
	}
	return SmallestThree{Largest: uint8(largest), A: out[0], B: out[1], C: out[2]}
}

// Quat reconstructs the quaternion from s quantised with bits per component.
func (s SmallestThree) Quat(bits uint) Quat {
	maxQ := float64(uint32(1)<<bits - 1)
	small := [3]float64{}
	for i, v := range [3]uint32{s.A, s.B, s.C} {
		small[i] = float64(v)/maxQ*(2*invSqrt2) - invSqrt2
	}
	sum := small[0]*small[0] + small[1]*small[1] + small[2]*small[2]
	big := math.Sqrt(math.Max(0, 1-sum))
	var c [4]float64
	k := 0
	for i := 0; i < 4; i++ {
		if i == int(s.Largest&3) {
			c[i] = big
			continue
		}
		c[i] = small[k]
		k++
	}
	return Quat{float32(c[0]), float32(c[1]), float32(c[2]), float32(c[3])}
}
