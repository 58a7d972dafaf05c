package deltacomp

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/internal/race"
	"github.com/tickwire/tickwire/proto"
)

var compressors = []proto.Codec{proto.CodecNone, proto.CodecLZ4, proto.CodecZstd, proto.CodecS2}

func randomPayload(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		if rng.IntN(3) == 0 {
			b[i] = byte(rng.IntN(256))
		}
	}
	return b
}

func TestCodecsRoundTrip(t *testing.T) {
	var c Codecs
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 17, 1000, 70000, 300000} {
		src := randomPayload(rng, n)
		for _, codec := range compressors {
			enc, err := c.AppendCompress([]byte("prefix"), src, codec)
			if err != nil {
				t.Fatalf("%v compress %d: %v", codec, n, err)
			}
			dec, err := c.AppendDecompress([]byte("x"), enc[6:], codec, n)
			if err != nil {
				t.Fatalf("%v decompress %d: %v", codec, n, err)
			}
			if !bytes.Equal(dec[1:], src) || dec[0] != 'x' {
				t.Fatalf("%v: round trip differs", codec)
			}
			// A wrong declared size is an error, in both directions.
			if n > 0 {
				if _, err := c.AppendDecompress(nil, enc[6:], codec, n-1); err == nil {
					t.Fatalf("%v: shorter raw length accepted", codec)
				}
				if _, err := c.AppendDecompress(nil, enc[6:], codec, n+1); err == nil {
					t.Fatalf("%v: longer raw length accepted", codec)
				}
			}
		}
	}
}

// A small input that would decode to far more than its declared raw length
// (or more than MaxSnapshotSize) fails without producing it.
func TestCodecsDecompressionBomb(t *testing.T) {
	var c Codecs
	defer c.Close()
	huge := make([]byte, proto.MaxSnapshotSize+1)
	for _, codec := range []proto.Codec{proto.CodecLZ4, proto.CodecZstd, proto.CodecS2} {
		src := huge[:8<<20]
		bomb, err := c.AppendCompress(nil, src, codec)
		if err != nil {
			t.Fatal(err)
		}
		if len(bomb) > 1<<16 {
			t.Fatalf("%v: %d bytes of zeros compressed to %d", codec, len(src), len(bomb))
		}
		out, err := c.AppendDecompress(nil, bomb, codec, 1000)
		if err == nil {
			t.Fatalf("%v: bomb accepted", codec)
		}
		if cap(out) > 1<<20 {
			t.Fatalf("%v: decoding a bomb allocated %d bytes", codec, cap(out))
		}
		if _, err := c.AppendDecompress(nil, bomb, codec, proto.MaxSnapshotSize+1); err == nil {
			t.Fatalf("%v: raw length over MaxSnapshotSize accepted", codec)
		}
	}
	if _, err := c.AppendCompress(nil, huge, proto.CodecZstd); err == nil {
		t.Fatal("compressing more than MaxSnapshotSize accepted")
	}
	if _, err := c.AppendCompress(nil, []byte{1}, proto.CodecXORRLE); err == nil {
		t.Fatal("xor+rle is not a compressor")
	}
}

func TestCodecsZeroAlloc(t *testing.T) {
	var c Codecs
	defer c.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	src := randomPayload(rng, 20000)
	for _, codec := range compressors {
		enc := make([]byte, 0, 64<<10)
		dec := make([]byte, 0, 64<<10)
		var err error
		run := func() {
			enc, err = c.AppendCompress(enc[:0], src, codec)
			if err != nil {
				t.Fatal(err)
			}
			dec, err = c.AppendDecompress(dec[:0], enc, codec, len(src))
			if err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(20, run); a != 0 && !race.Enabled {
			t.Errorf("%v: %v allocs per compress+decompress", codec, a)
		}
	}
}

func TestFullSnapshotRoundTrip(t *testing.T) {
	var c Codecs
	defer c.Close()
	g := newRandomSnapshots(4, 13, 300)
	var s, got Snapshot
	g.next(&s, false)
	for _, codec := range append(compressors, proto.CodecXORRLE) {
		b, err := c.AppendFullSnapshot(nil, &s, proto.CauseJoin, 77, codec)
		if err != nil {
			t.Fatal(err)
		}
		f, n, err := proto.ParseFullSnapshotFrame(b)
		if err != nil || n != len(b) || f.Revision != 77 || f.Codec != codec {
			t.Fatalf("%v: parse %v", codec, err)
		}
		if err := c.DecodeFullSnapshot(&got, &f); err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if got.RecordSize != s.RecordSize || !bytes.Equal(got.Records, s.Records) || len(got.IDs) != len(s.IDs) {
			t.Fatalf("%v: snapshot differs", codec)
		}
		for i := range s.IDs {
			if got.IDs[i] != s.IDs[i] {
				t.Fatalf("%v: id %d differs", codec, i)
			}
		}
		// Every truncation of the data fails cleanly.
		for cut := 0; cut < len(f.Data); cut += 1 + len(f.Data)/50 {
			g := f
			g.Data = f.Data[:cut]
			if err := c.DecodeFullSnapshot(&got, &g); err == nil {
				t.Fatalf("%v: truncated data (%d/%d) accepted", codec, cut, len(f.Data))
			}
		}
	}
	// Codec 5 predicts from baselines: a full snapshot has none.
	if _, err := c.AppendFullSnapshot(nil, &s, proto.CauseJoin, 77, proto.CodecPredictedXORRLE); err == nil {
		t.Fatal("full snapshot in codec 5 written")
	}
}

func FuzzDecompress(f *testing.F) {
	var c Codecs
	rng := rand.New(rand.NewPCG(3, 3))
	for _, codec := range compressors {
		src := randomPayload(rng, 300)
		enc, _ := c.AppendCompress(nil, src, codec)
		f.Add(byte(codec), uint32(len(src)), enc)
	}
	f.Fuzz(func(t *testing.T, codec byte, rawLen uint32, data []byte) {
		rawLen %= 1 << 20
		out, err := c.AppendDecompress(nil, data, proto.Codec(codec), int(rawLen))
		if err != nil {
			return
		}
		if len(out) != int(rawLen) {
			t.Fatalf("decoded %d bytes, declared %d", len(out), rawLen)
		}
		re, err := c.AppendCompress(nil, out, proto.Codec(codec))
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.AppendDecompress(nil, re, proto.Codec(codec), len(out))
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("re-encode round trip: %v", err)
		}
	})
}

func FuzzFullSnapshot(f *testing.F) {
	var c Codecs
	g := newRandomSnapshots(5, 7, 20)
	var s Snapshot
	g.next(&s, false)
	for _, codec := range append(compressors, proto.CodecXORRLE) {
		b, _ := c.AppendFullSnapshot(nil, &s, proto.CauseResync, 9, codec)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, _, err := proto.ParseFullSnapshotFrame(b)
		if err != nil {
			return
		}
		var got Snapshot
		if err := c.DecodeFullSnapshot(&got, &fr); err != nil {
			return
		}
		if len(got.Records) != got.Len()*got.RecordSize {
			t.Fatalf("inconsistent snapshot")
		}
		if got.Check() != nil {
			if got.Len() > 0 {
				return // ids out of order are left to the replica to reject
			}
		}
		// Re-encode with the same codec and decode again: same snapshot.
		enc, err := c.AppendFullSnapshot(nil, &got, fr.Cause, fr.Revision, fr.Codec)
		if err != nil {
			if got.Check() != nil {
				return
			}
			t.Fatal(err)
		}
		fr2, _, err := proto.ParseFullSnapshotFrame(enc)
		if err != nil {
			t.Fatal(err)
		}
		var again Snapshot
		if err := c.DecodeFullSnapshot(&again, &fr2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Records, got.Records) || len(again.IDs) != len(got.IDs) {
			t.Fatal("round trip differs")
		}
	})
}
