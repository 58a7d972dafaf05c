package deltacomp

import "github.com/tickwire/tickwire/proto"

// remap says how the entity order changed from one layout to the next:
// runs of entities kept in order, and the old indices that vanished.
// The ring computes it once per change; every client's Encoder realigns
// its per-entity state with it instead of merging ids again.
type remap struct {
	runs    []run   // new[ns:ns+n] are old[os:os+n]
	removed []int32 // old indices no longer present
	oldLen  int
}

type run struct{ ns, os, n int32 }

func (m *remap) build(oldIDs, newIDs []proto.NetworkID) {
	m.runs, m.removed, m.oldLen = m.runs[:0], m.removed[:0], len(oldIDs)
	j := 0
	for i, id := range newIDs {
		for j < len(oldIDs) && oldIDs[j] < id {
			m.removed = append(m.removed, int32(j))
			j++
		}
		if j < len(oldIDs) && oldIDs[j] == id {
			if k := len(m.runs) - 1; k >= 0 && m.runs[k].ns+m.runs[k].n == int32(i) && m.runs[k].os+m.runs[k].n == int32(j) {
				m.runs[k].n++
			} else {
				m.runs = append(m.runs, run{int32(i), int32(j), 1})
			}
			j++
		}
	}
	for ; j < len(oldIDs); j++ {
		m.removed = append(m.removed, int32(j))
	}
}
