package replay

import (
	"fmt"

	"github.com/tickwire/tickwire/deltacomp"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// Difference is what differs in one entity between two states A and B.
type Difference struct {
	// Entity names it: a snapshot's NetworkID ("0x00010003"), or the
	// name the game gives it in a canonical state ("unit 17").
	Entity string
	// ID is the entity's NetworkID in a snapshot (0 in a canonical
	// state).
	ID proto.NetworkID `json:",omitempty"`
	// OnlyIn is "A" or "B" for an entity only one state has.
	OnlyIn string `json:",omitempty"`
	// Fields are the values that differ, by the game's names
	// (sim.RecordFields, sim.CanonicalFields) or, for a game that
	// names none, as bytes ("byte 7").
	Fields []FieldDiff `json:",omitempty"`
}

// FieldDiff is one field's value in A and in B.
type FieldDiff struct {
	Name string
	A, B int64
}

// diffSnapshots lists the entities whose records differ between a and
// b, only those sel selects (all for nil), with their fields as game
// names them.
func diffSnapshots(a, b *deltacomp.Snapshot, game sim.World, sel func(proto.NetworkID) bool) []Difference {
	namer, _ := game.(sim.RecordFields)
	var out []Difference
	var fa, fb []sim.Field
	i, j := 0, 0
	for i < a.Len() || j < b.Len() {
		var ia, ib proto.NetworkID = ^proto.NetworkID(0), ^proto.NetworkID(0)
		if i < a.Len() {
			ia = a.IDs[i]
		}
		if j < b.Len() {
			ib = b.IDs[j]
		}
		switch {
		case ia < ib:
			if sel == nil || sel(ia) {
				out = append(out, Difference{Entity: idName(ia), ID: ia, OnlyIn: "A"})
			}
			i++
			continue
		case ib < ia:
			if sel == nil || sel(ib) {
				out = append(out, Difference{Entity: idName(ib), ID: ib, OnlyIn: "B"})
			}
			j++
			continue
		}
		ra, rb := a.Record(i), b.Record(j)
		i++
		j++
		if string(ra) == string(rb) || sel != nil && !sel(ia) {
			continue
		}
		d := Difference{Entity: idName(ia), ID: ia}
		if namer != nil {
			fa, fb = namer.AppendRecordFields(fa[:0], ra), namer.AppendRecordFields(fb[:0], rb)
		}
		if namer != nil && len(fa) == len(fb) && len(fa) > 0 {
			d.Fields = diffFields(d.Fields, fa, fb)
		}
		if len(d.Fields) == 0 {
			d.Fields = diffBytes(ra, rb)
		}
		out = append(out, d)
	}
	return out
}

// idName writes a NetworkID as tools show it.
func idName(id proto.NetworkID) string {
	return fmt.Sprintf("%#08x (spawner %d, index %d)", uint32(id), id.Spawner(), id.Index())
}

// diffFields appends the fields of a and b (the same names in the same
// order) whose values differ.
func diffFields(dst []FieldDiff, a, b []sim.Field) []FieldDiff {
	for k := range a {
		if a[k].Value != b[k].Value || a[k].Name != b[k].Name {
			dst = append(dst, FieldDiff{Name: a[k].Name, A: a[k].Value, B: b[k].Value})
		}
	}
	return dst
}

// maxByteDiffs bounds the bytes listed of a state no game names.
const maxByteDiffs = 32

// diffBytes lists the bytes that differ between a and b (the first
// maxByteDiffs), and their lengths when those differ.
func diffBytes(a, b []byte) []FieldDiff {
	var out []FieldDiff
	if len(a) != len(b) {
		out = append(out, FieldDiff{Name: "length", A: int64(len(a)), B: int64(len(b))})
	}
	for k := range min(len(a), len(b)) {
		if a[k] != b[k] && len(out) < maxByteDiffs {
			out = append(out, FieldDiff{Name: fmt.Sprintf("byte %d", k), A: int64(a[k]), B: int64(b[k])})
		}
	}
	return out
}

// diffCanonical lists what differs between two canonical states of
// game, entity by entity if it names its fields (sim.CanonicalFields),
// else byte by byte.
func diffCanonical(a, b []byte, game sim.World) []Difference {
	if string(a) == string(b) {
		return nil
	}
	if namer, ok := game.(sim.CanonicalFields); ok {
		fa, errA := namer.AppendCanonicalFields(nil, a)
		fb, errB := namer.AppendCanonicalFields(nil, b)
		if errA == nil && errB == nil && sameLayout(fa, fb) {
			var out []Difference
			for k := range fa {
				if fa[k].Value == fb[k].Value {
					continue
				}
				if n := len(out); n == 0 || out[n-1].Entity != fa[k].Entity {
					out = append(out, Difference{Entity: fa[k].Entity})
				}
				d := &out[len(out)-1]
				d.Fields = append(d.Fields, FieldDiff{Name: fa[k].Name, A: fa[k].Value, B: fb[k].Value})
			}
			return out
		}
	}
	return []Difference{{Entity: "canonical state", Fields: diffBytes(a, b)}}
}

// sameLayout reports whether two states' fields name the same things in
// the same order (the same entities exist in both).
func sameLayout(a, b []sim.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Entity != b[k].Entity || a[k].Name != b[k].Name {
			return false
		}
	}
	return true
}
