package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
)

// entitiesFNV is the checksum frame's documented sum (docs/PROTOCOL.md),
// computed independently: FNV-1a over the id (u32 LE) and record of the
// entities of s at the indices sel (nil: all of them), in order.
func entitiesFNV(s *deltacomp.Snapshot, sel []int32) uint64 {
	if sel == nil {
		for i := range s.IDs {
			sel = append(sel, int32(i))
		}
	}
	var b []byte
	for _, i := range sel {
		b = binary.LittleEndian.AppendUint32(b, uint32(s.IDs[i]))
		b = append(b, s.Record(int(i))...)
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// EntitiesSum and SnapshotSum agree with the documented byte stream on
// random snapshots and subsets, and allocate nothing.
func TestChecksummerEntities(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var c Checksummer
	var s deltacomp.Snapshot
	for range 50 {
		s.Reset(r.Uint32(), 1+r.IntN(40))
		rec := make([]byte, s.RecordSize)
		id := proto.NetworkID(0)
		for range r.IntN(300) {
			id += proto.NetworkID(1 + r.IntN(1000))
			for k := range rec {
				rec[k] = byte(r.Uint32())
			}
			s.Append(id, rec)
		}
		var sel []int32
		for i := range s.IDs {
			if r.IntN(3) == 0 {
				sel = append(sel, int32(i))
			}
		}
		if got, want := c.EntitiesSum(&s, sel), entitiesFNV(&s, sel); got != want {
			t.Fatalf("EntitiesSum of %d of %d entities: %x, want %x", len(sel), s.Len(), got, want)
		}
		if got, want := c.SnapshotSum(&s), entitiesFNV(&s, nil); got != want {
			t.Fatalf("SnapshotSum of %d entities: %x, want %x", s.Len(), got, want)
		}
	}
	sel := []int32{0, 2, 3}
	s.Reset(1, 8)
	for i := range 4 {
		s.Append(proto.NetworkID(i+1), make([]byte, 8))
	}
	if n := testing.AllocsPerRun(100, func() { c.EntitiesSum(&s, sel); c.SnapshotSum(&s) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}
