package idset

import (
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// Remap says how the entity order changed from one layout (a sorted set of
// ids) to the next: runs of entities kept in order, and the old indices
// that vanished. The owner of the layout (deltacomp's Ring, interest's
// World) builds it once per change; every client's state realigns with it
// instead of merging ids again. The zero value is an empty remap.
type Remap struct {
	Runs    []Run             // the kept entities, ascending
	Removed []int32           // old indices no longer present, ascending
	Gone    []proto.NetworkID // their ids
	Added   []proto.NetworkID // ids new to the layout, ascending
	OldLen  int               // length of the old layout
	NewLen  int               // length of the new layout
}

// Run is a stretch of entities kept in order: new[New:New+N] are
// old[Old:Old+N].
type Run struct{ New, Old, N int32 }

// Build computes the remap from oldIDs to newIDs, both strictly ascending.
func (m *Remap) Build(oldIDs, newIDs []proto.NetworkID) {
	m.Runs, m.Removed, m.Gone, m.Added = m.Runs[:0], m.Removed[:0], m.Gone[:0], m.Added[:0]
	m.OldLen, m.NewLen = len(oldIDs), len(newIDs)
	j := 0
	for i, id := range newIDs {
		for j < len(oldIDs) && oldIDs[j] < id {
			m.Removed = append(m.Removed, int32(j))
			m.Gone = append(m.Gone, oldIDs[j])
			j++
		}
		if j < len(oldIDs) && oldIDs[j] == id {
			if k := len(m.Runs) - 1; k >= 0 && m.Runs[k].New+m.Runs[k].N == int32(i) && m.Runs[k].Old+m.Runs[k].N == int32(j) {
				m.Runs[k].N++
			} else {
				m.Runs = append(m.Runs, Run{int32(i), int32(j), 1})
			}
			j++
		} else {
			m.Added = append(m.Added, id)
		}
	}
	for ; j < len(oldIDs); j++ {
		m.Removed = append(m.Removed, int32(j))
		m.Gone = append(m.Gone, oldIDs[j])
	}
}

// Move realigns s, indexed like the old layout, to the new one (n
// entries, grown if it must be) in place: a kept entity's entry moves to
// its new index, a new entity's entry is the zero value. Entities that
// kept their index are not touched, so a change at the end of the layout
// (entities with the newest ids coming and going) moves only what lies
// behind it. Runs moving left go first, in ascending order, then runs
// moving right, in descending order: the runs keep their order, so no run
// overwrites another's entries before they moved.
func Move[T any](m *Remap, s []T, n int) []T {
	if cap(s) < n {
		s = slices.Grow(s, n-len(s))
	}
	s = s[:max(len(s), n)]
	for _, r := range m.Runs {
		if r.New < r.Old {
			copy(s[r.New:r.New+r.N], s[r.Old:r.Old+r.N])
		}
	}
	for k := len(m.Runs) - 1; k >= 0; k-- {
		if r := m.Runs[k]; r.New > r.Old {
			copy(s[r.New:r.New+r.N], s[r.Old:r.Old+r.N])
		}
	}
	// New entities start from the zero value: clear what no run covers.
	next := int32(0)
	for _, r := range m.Runs {
		clear(s[next:r.New])
		next = r.New + r.N
	}
	clear(s[next:n])
	return s[:n]
}

// MoveBits is Move for bitsets, from src into dst: dst, with room for
// the new layout, gets each kept entity's bit of src at its new index and
// clear bits for new entities.
func (m *Remap) MoveBits(dst, src []uint64) {
	clear(dst)
	for _, r := range m.Runs {
		OrBits(dst, int(r.New), src, int(r.Old), int(r.N))
	}
}

// MapAscending maps the old indices idx (ascending; −1 entries are
// skipped) to their new indices in place; an entity no longer present
// becomes −1. One pass over idx and the runs.
func (m *Remap) MapAscending(idx []int32) {
	k, j := 0, 0
	if len(m.Runs) > 0 && m.Runs[0].Old == 0 && m.Runs[0].New == 0 {
		// The entities before the layout's first change keep their
		// index (and −1 stays −1): pass them with one comparison each.
		for j < len(idx) && idx[j] < m.Runs[0].N {
			j++
		}
		k = 1
	}
	for ; j < len(idx); j++ {
		i := idx[j]
		if i < 0 {
			continue
		}
		for k < len(m.Runs) && m.Runs[k].Old+m.Runs[k].N <= i {
			k++
		}
		if k < len(m.Runs) && m.Runs[k].Old <= i {
			idx[j] = m.Runs[k].New + i - m.Runs[k].Old
		} else {
			idx[j] = -1
		}
	}
}
