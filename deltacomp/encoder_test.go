package deltacomp

import (
	"testing"

	"github.com/tickwire/tickwire/proto"
)

// removedIn decodes a frame's entries and returns the removed ids.
func removedIn(t *testing.T, b []byte) []proto.NetworkID {
	t.Helper()
	f, _, err := proto.ParseSnapshotDeltaFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	d := f.Data
	_, n := parseVarint(d)
	d = d[n:]
	var prev uint64
	var out []proto.NetworkID
	for k := 0; k < int(f.Count); k++ {
		h, n := parseVarint(d)
		d = d[n:]
		gap, kind, _ := parseEntryHeader(h)
		id := prev + gap + 1
		prev = id
		switch kind {
		case kindRemoved:
			out = append(out, proto.NetworkID(id))
			continue
		case kindExplicit:
			_, n := parseVarint(d)
			d = d[n:]
		}
		m, err := ApplyPatch(make([]byte, 4), d)
		if err != nil {
			t.Fatal(err)
		}
		d = d[m:]
	}
	return out
}

func TestRemovalsSentUntilAcknowledged(t *testing.T) {
	r := NewRing(RingConfig{})
	e := NewEncoder(r, EncoderConfig{})
	s := Snapshot{RecordSize: 4}
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(2, []byte{2, 2, 2, 2})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	e.Prepare()
	b, err := e.AppendFrame(nil, 0, []int32{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	e.Delivered(0)
	// Entity 2 goes away.
	s.Reset(1, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	for seq := uint16(1); seq <= 3; seq++ {
		e.Prepare()
		if b, err = e.AppendFrame(b[:0], seq, nil); err != nil {
			t.Fatal(err)
		}
		if got := removedIn(t, b); len(got) != 1 || got[0] != 2 {
			t.Fatalf("frame %d removals %v, want [2]", seq, got)
		}
		if seq == 1 {
			e.Lost(seq) // lost: still pending
		}
	}
	e.Delivered(3)
	e.Prepare()
	if b, err = e.AppendFrame(b[:0], 4, nil); err != nil {
		t.Fatal(err)
	}
	if got := removedIn(t, b); len(got) != 0 || e.PendingRemovals() != 0 {
		t.Fatalf("after delivery: removals %v, pending %d", got, e.PendingRemovals())
	}
	// An entity the client never got is not announced as removed.
	s.Reset(2, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	s.Append(9, []byte{9, 9, 9, 9})
	r.Push(&s)
	e.Prepare()
	s.Reset(3, 4)
	s.Append(1, []byte{1, 1, 1, 1})
	s.Append(3, []byte{3, 3, 3, 3})
	r.Push(&s)
	e.Prepare()
	if e.PendingRemovals() != 0 {
		t.Fatalf("removal of a never-sent entity pending")
	}
}
