package scenario

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// CubesODEFile is the recording's file name in the data directory.
const CubesODEFile = "cubes-ode-3600.bin.zst"

// ErrNoData means the shared data directory or file is missing.
var ErrNoData = errors.New("scenario: data file not found")

// DataDir returns the shared data directory: $TICKWIRE_DATA_DIR if set,
// else ../shared/data relative to the repository root (found by walking
// up from the working directory to tickwire's go.mod).
func DataDir() (string, error) {
	if d := os.Getenv("TICKWIRE_DATA_DIR"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isTickwireMod(b) {
			return filepath.Join(dir, "..", "shared", "data"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no tickwire go.mod above the working directory", ErrNoData)
		}
		dir = parent
	}
}

func isTickwireMod(b []byte) bool {
	const m = "module github.com/tickwire/tickwire\n"
	return len(b) >= len(m) && string(b[:len(m)]) == m
}

// Recording is the cubes-ode recording: Frames[f] holds the 901 cubes of
// frame f (ids 1..901, cube id 1 is the player) as cube records.
type Recording struct {
	Frames []deltacomp.Snapshot
}

// LoadCubesODE reads and quantises the recording at path.
func LoadCubesODE(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrNoData, err)
		}
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

// CubesODE loads the recording from DataDir once per process.
func CubesODE() (*Recording, error) {
	cubesODE.once.Do(func() {
		dir, err := DataDir()
		if err != nil {
			cubesODE.err = err
			return
		}
		cubesODE.rec, cubesODE.err = LoadCubesODE(filepath.Join(dir, CubesODEFile))
	})
	return cubesODE.rec, cubesODE.err
}

// CubesODEOrSkip returns the recording, skipping the test or benchmark when
// it is missing, unless TICKWIRE_REQUIRE_TOOLS is set (CI), where a
// missing recording fails.
func CubesODEOrSkip(tb testing.TB) *Recording {
	tb.Helper()
	rec, err := CubesODE()
	if err != nil {
		if errors.Is(err, ErrNoData) && os.Getenv("TICKWIRE_REQUIRE_TOOLS") == "" {
			tb.Skipf("cubes-ode recording not available: %v", err)
		}
		tb.Fatalf("cubes-ode recording: %v", err)
	}
	return rec
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
