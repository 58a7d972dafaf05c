package proto

import (
	"errors"
	"testing"
)

// TestStandbyStateRawBound: snapshots whose decoded sizes add up to more
// than MaxStandbyStateRaw are refused by the parser, each one being
// within its own bound (a host cannot make its standby decode more).
func TestStandbyStateRawBound(t *testing.T) {
	full := FullSnapshotFrame{Cause: CauseMigration, Codec: CodecZstd, RawLen: MaxSnapshotSize}
	f := StandbyStateFrame{Players: []uint16{1}, Snapshots: []FullSnapshotFrame{full, full, full, full}}
	b, err := f.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseStandbyStateFrame(b); err != nil {
		t.Fatalf("four snapshots at the bound: %v", err)
	}
	b[standbyStateFixed+2-1]++ // one more snapshot
	small := full
	small.RawLen = 1
	if b, err = small.Append(b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseStandbyStateFrame(b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("snapshots over the bound: %v", err)
	}
	b[standbyStateFixed+2-1] = MaxStandbySnapshots + 1
	if _, _, err := ParseStandbyStateFrame(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d snapshots: %v", MaxStandbySnapshots+1, err)
	}
}
