package scenario

import (
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/interest"
)

// Cube is the cube demo's quantised state: orientation as smallest-three
// with 9 bits per component, position in 1/512 m (x, y signed, z ≥ 0),
// and whether the cube is interacting with the player.
type Cube struct {
	Orientation deltacomp.SmallestThree
	X, Y, Z     int32
	Interacting bool
}

// Cube quantisation, as in the recording.
const (
	CubeQuatBits     = 9
	CubeStepsPerUnit = 512
	cubePosBits      = 16
)

// CubeSchema is the cube record: 10 bytes, laid out by significance —
// the low bytes of x, y, z, a, b, c, then one byte holding the top bit of
// a, b, c, the largest-component index and the interacting flag, then the
// high bytes of x, y, z. Positions are biased 16-bit fields (±64 m). A
// cube that moves a little changes the first 7 bytes only, which the
// group-mask RLE codes as one token and the changed bytes.
var CubeSchema = mustSchema(
	deltacomp.Field{Name: "x", Bits: cubePosBits},
	deltacomp.Field{Name: "y", Bits: cubePosBits},
	deltacomp.Field{Name: "z", Bits: cubePosBits},
	deltacomp.Field{Name: "a", Bits: CubeQuatBits},
	deltacomp.Field{Name: "b", Bits: CubeQuatBits},
	deltacomp.Field{Name: "c", Bits: CubeQuatBits},
	deltacomp.Field{Name: "largest", Bits: 2},
	deltacomp.Field{Name: "interacting", Bits: 1},
)

// CubeRecordSize is CubeSchema.Size().
var CubeRecordSize = CubeSchema.Size()

// CubePredictor extrapolates a cube's position and the components of its
// orientation from two of its records (deltacomp.Predictor: codec-5
// delta frames). The largest component's index and the interacting flag
// are predicted unchanged. A component is extrapolated even when the
// largest index differs between the two records: rare, and cheaper than
// a branch (it made no difference on the recording).
var CubePredictor = mustPredictor(CubeSchema, "x", "y", "z", "a", "b", "c")

func mustPredictor(s *deltacomp.Schema, linear ...string) *deltacomp.Predictor {
	p, err := deltacomp.NewPredictor(s, linear...)
	if err != nil {
		panic(err)
	}
	return p
}

func mustSchema(f ...deltacomp.Field) *deltacomp.Schema {
	s, err := deltacomp.NewSchema(f...)
	if err != nil {
		panic(err)
	}
	return s
}

// PackCube writes c as a record into dst[:CubeRecordSize].
func PackCube(dst []byte, c *Cube) {
	var v [8]uint32
	v[0] = deltacomp.Bias(c.X, cubePosBits)
	v[1] = deltacomp.Bias(c.Y, cubePosBits)
	v[2] = deltacomp.Bias(c.Z, cubePosBits)
	v[3], v[4], v[5] = c.Orientation.A, c.Orientation.B, c.Orientation.C
	v[6] = uint32(c.Orientation.Largest)
	if c.Interacting {
		v[7] = 1
	}
	CubeSchema.Pack(dst, v[:])
}

// UnpackCube reads a cube record.
func UnpackCube(src []byte) Cube {
	var v [8]uint32
	CubeSchema.Unpack(v[:], src)
	return Cube{
		X: deltacomp.Unbias(v[0], cubePosBits), Y: deltacomp.Unbias(v[1], cubePosBits), Z: deltacomp.Unbias(v[2], cubePosBits),
		Orientation: deltacomp.SmallestThree{A: v[3], B: v[4], C: v[5], Largest: uint8(v[6])},
		Interacting: v[7] != 0,
	}
}

// Pos is the cube's position in metres.
func (c *Cube) Pos() interest.Vec3 {
	return interest.Vec3{
		X: deltacomp.DequantizeFixed(c.X, CubeStepsPerUnit),
		Y: deltacomp.DequantizeFixed(c.Y, CubeStepsPerUnit),
		Z: deltacomp.DequantizeFixed(c.Z, CubeStepsPerUnit),
	}
}
