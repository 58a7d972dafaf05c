package scenario_test

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"testing"

	"github.com/tickwire/tickwire/bench/scenario"
	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// patchShape is what the entries of a run's delta frames hold, read from
// the frames themselves (docs/PROTOCOL.md, codecs 4 and 5).
type patchShape struct {
	recordSize int
	frames     int
	entries    int
	kinds      map[string]int
	// bytes by part: entry headers (H, ages, steps), RLE tokens (masks
	// and zero runs with their counts), literal bytes
	headerBytes, tokenBytes, literalBytes int
	tokens                                [8]int      // patches by number of tokens
	zeroRuns                              map[int]int // zero-run tokens by groups covered
	nonZero                               []int       // patches by non-zero bytes
	literalBits                           [9]int      // literal bytes by bit length
	atPosition                            []int       // literal bytes by offset in the record
	zeroPatches                           int
	entryBytesAll                         int
}

func newPatchShape(recordSize int) *patchShape {
	return &patchShape{recordSize: recordSize, kinds: map[string]int{}, zeroRuns: map[int]int{},
		nonZero: make([]int, recordSize+1), atPosition: make([]int, recordSize)}
}

// add reads one delta frame.
func (ps *patchShape) add(tb testing.TB, frame []byte) {
	f, _, err := proto.ParseSnapshotDeltaFrame(frame)
	if err != nil {
		tb.Fatal(err)
	}
	ps.frames++
	d := f.Data
	_, n := binary.Uvarint(d) // the default baseline's age
	d = d[n:]
	for range f.Count {
		start := len(d)
		h, n := binary.Uvarint(d)
		d = d[n:]
		kind, spans := entryKind(f.Codec, h)
		for range spans { // age, step
			_, n := binary.Uvarint(d)
			d = d[n:]
		}
		ps.headerBytes += start - len(d)
		ps.kinds[kind]++
		ps.entries++
		if kind != "removed" {
			d = ps.patch(tb, d)
		}
		ps.entryBytesAll += start - len(d)
	}
}

// entryKind names an entry's kind from its header H and says how many
// varints (age, step) follow it.
func entryKind(codec proto.Codec, h uint64) (string, int) {
	if codec == proto.CodecPredictedXORRLE {
		switch {
		case h&3 == 0:
			return "predicted", 0
		case h&3 == 2:
			return "default", 0
		case h&7 == 1:
			return "predicted explicit", 2
		}
	} else if h&1 == 0 {
		return "default", 0
	}
	return [...]string{"", "explicit", "full", "removed"}[h>>1&3], int(h>>1&3) % 2
}

// patch reads the group-mask RLE patch at the start of d and returns
// the rest.
func (ps *patchShape) patch(tb testing.TB, d []byte) []byte {
	rec := make([]byte, ps.recordSize)
	n, err := deltacomp.ApplyPatch(rec, d)
	if err != nil {
		tb.Fatal(err)
	}
	code := d[:n]
	tokens, nz := 0, 0
	for i, g := 0, 0; i < len(code); g++ {
		t := code[i]
		i++
		tokens++
		ps.tokenBytes++
		if t == 0x80 { // a zero run: its count follows
			ps.zeroRuns[int(code[i])+1]++
			g += int(code[i])
			i++
			ps.tokenBytes++
			continue
		}
		i += bits.OnesCount8(t & 0x7f)
		if t&0x80 == 0 {
			break
		}
	}
	for j, c := range rec {
		if c != 0 {
			nz++
			ps.literalBits[bits.Len8(c)]++
			ps.atPosition[j]++
		}
	}
	ps.literalBytes += nz
	ps.tokens[min(tokens, len(ps.tokens)-1)]++
	ps.nonZero[nz]++
	if nz == 0 {
		ps.zeroPatches++
	}
	return d[n:]
}

func (ps *patchShape) String() string {
	var b strings.Builder
	e := float64(max(ps.entries, 1))
	fmt.Fprintf(&b, "%d entries in %d frames; kinds %v\n", ps.entries, ps.frames, ps.kinds)
	fmt.Fprintf(&b, "bytes per entry %.2f: header %.2f, RLE tokens %.2f, literals %.2f\n",
		float64(ps.entryBytesAll)/e, float64(ps.headerBytes)/e, float64(ps.tokenBytes)/e, float64(ps.literalBytes)/e)
	fmt.Fprintf(&b, "patches by tokens (0..7+) %v; zero-run tokens by groups covered %v; all-zero patches %d\n", ps.tokens, ps.zeroRuns, ps.zeroPatches)
	fmt.Fprintf(&b, "patches by non-zero bytes (0..%d) %v\n", ps.recordSize, ps.nonZero)
	fmt.Fprintf(&b, "literal bytes by bit length (1..8) %v\n", ps.literalBits[1:])
	fmt.Fprintf(&b, "literal bytes by offset in the record %v", ps.atPosition)
	return b.String()
}

// TestCubesODEPatchShape measures what the cubes-ode patches hold, in
// codec 4 and in codec 5, as BenchmarkBandwidth replicates them (one
// client, baselines 6 ticks old, the budget lifted): entries by kind,
// bytes by part, RLE tokens and zero runs, non-zero bytes per patch, the
// literals' bit lengths and offsets. It checks nothing but that the
// frames decode; run it with -v for the figures (bench/README.md).
func TestCubesODEPatchShape(t *testing.T) {
	rec, err := scenario.CubesODE()
	if err != nil {
		t.Fatal(err)
	}
	for _, pred := range []*deltacomp.Predictor{nil, scenario.CubePredictor} {
		h := newHarness(t, &scenario.Replay{Rec: rec}, netModel{RTT: benchRTT}, 1, 1, pred)
		for h.tick < benchWarmup {
			h.step()
		}
		ps := newPatchShape(scenario.CubeRecordSize)
		h.onFrame = func(_ int, frame []byte) { ps.add(t, frame) }
		for h.step() {
		}
		t.Logf("codec %v:\n%v", h.ring.Codec(), ps)
	}
}
