package scenario

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// CubesODEPath is the recording, relative to this package's directory
// (where go test runs the package's tests and benchmarks). The repository
// holds it; testdata/README.md says where it comes from and its format.
const CubesODEPath = "testdata/cubes-ode-3600.bin.zst"

// Recording is the cubes-ode recording: Frames[f] holds the 901 cubes of
// frame f (ids 1..901, cube id 1 is the player) as cube records.
type Recording struct {
	Frames []deltacomp.Snapshot
}

// LoadCubesODE reads and quantises the recording at path.
func LoadCubesODE(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	r := bufio.NewReaderSize(zr, 1<<16)
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if string(hdr[:8]) != "CUBES001" {
		return nil, errors.New("scenario: not a CUBES001 recording")
	}
	frames := int(binary.LittleEndian.Uint32(hdr[8:]))
	cubes := int(binary.LittleEndian.Uint32(hdr[12:]))
	if frames <= 0 || frames > 1<<20 || cubes <= 0 || cubes > 1<<20 {
		return nil, errors.New("scenario: bad recording header")
	}
	ids := make([]proto.NetworkID, cubes)
	for i := range ids {
		ids[i] = proto.NetworkID(i + 1)
	}
	rs := CubeRecordSize
	all := make([]byte, frames*cubes*rs)
	rec := &Recording{Frames: make([]deltacomp.Snapshot, frames)}
	var raw [32]byte
	for fi := 0; fi < frames; fi++ {
		recs := all[fi*cubes*rs : (fi+1)*cubes*rs : (fi+1)*cubes*rs]
		for c := 0; c < cubes; c++ {
			if _, err := io.ReadFull(r, raw[:]); err != nil {
				return nil, fmt.Errorf("scenario: frame %d cube %d: %w", fi, c, err)
			}
			v := func(k int) int32 { return int32(binary.LittleEndian.Uint32(raw[4*k:])) }
			cube := Cube{
				Orientation: deltacomp.SmallestThree{Largest: uint8(v(0)), A: uint32(v(1)), B: uint32(v(2)), C: uint32(v(3))},
				X:           v(4), Y: v(5), Z: v(6), Interacting: v(7) != 0,
			}
			PackCube(recs[c*rs:], &cube)
		}
		rec.Frames[fi] = deltacomp.Snapshot{Tick: uint32(fi), RecordSize: rs, IDs: ids, Records: recs}
	}
	return rec, nil
}

var cubesODE struct {
	once sync.Once
	rec  *Recording
	err  error
}

// CubesODE loads the recording at CubesODEPath once per process.
func CubesODE() (*Recording, error) {
	cubesODE.once.Do(func() {
		cubesODE.rec, cubesODE.err = LoadCubesODE(CubesODEPath)
		if cubesODE.err != nil {
			cubesODE.err = fmt.Errorf("scenario: cubes-ode recording: %w", cubesODE.err)
		}
	})
	return cubesODE.rec, cubesODE.err
}

// Replay plays a Recording as a Scenario.
type Replay struct {
	Rec  *Recording
	next int
}

func (p *Replay) Name() string    { return "cubes-ode" }
func (p *Replay) RecordSize() int { return CubeRecordSize }

// Next copies the next recorded frame into f.
func (p *Replay) Next(f *Frame) bool {
	if p.next >= len(p.Rec.Frames) {
		return false
	}
	s := &p.Rec.Frames[p.next]
	p.next++
	f.reset(s.Tick, s.RecordSize)
	f.Snap.IDs = append(f.Snap.IDs, s.IDs...)
	f.Snap.Records = append(f.Snap.Records, s.Records...)
	for i := range s.IDs {
		c := UnpackCube(s.Record(i))
		f.Pos = append(f.Pos, c.Pos())
		f.Kind = append(f.Kind, KindCube)
	}
	if len(f.Kind) > 0 {
		f.Kind[0] = KindPlayer
	}
	return true
}
