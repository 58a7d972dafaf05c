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
	// Freed holds the slots Removed's entities held, in that order, and
	// Slots the number of slots after the change (see History): per-slot
	// state clears its Freed entries and grows to Slots. Build leaves
	// them to History.Next.
	Freed []int32
	Slots int
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

// MoveBits realigns a bitset over the old layout's entities, src, to the
// new layout, into dst: dst, with room for the new layout, gets each kept
// entity's bit of src at its new index and clear bits for new entities.
func (m *Remap) MoveBits(dst, src []uint64) {
	clear(dst)
	for _, r := range m.Runs {
		OrBits(dst, int(r.New), src, int(r.Old), int(r.N))
	}
}

// ShiftBits is MoveBits in place: s, a bitset over the old layout's
// entities, comes back over the new layout's (grown if it must be). The
// words of entities that kept their index are not touched, so a change
// near the end of the layout (entities with the newest ids coming and
// going) costs only the words behind it. Runs moving left go first, in
// ascending order, then runs moving right, in descending order: the runs
// keep their order, so no run overwrites another's bits before they
// moved.
func (m *Remap) ShiftBits(s []uint64) []uint64 {
	words := (m.NewLen + 63) / 64
	if cap(s) < words {
		s = slices.Grow(s, words-len(s))
	}
	s = s[:max(len(s), words)]
	for _, r := range m.Runs {
		if r.New < r.Old {
			CopyBits(s, int(r.New), int(r.Old), int(r.N))
		}
	}
	for k := len(m.Runs) - 1; k >= 0; k-- {
		if r := m.Runs[k]; r.New > r.Old {
			CopyBits(s, int(r.New), int(r.Old), int(r.N))
		}
	}
	// New entities, and what lies past the new layout, are clear.
	at := 0
	for _, r := range m.Runs {
		ClearBits(s, at, int(r.New))
		at = int(r.New + r.N)
	}
	ClearBits(s, at, len(s)*64)
	return s[:words]
}
