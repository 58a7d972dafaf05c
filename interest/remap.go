package interest

import "github.com/tickwire/tickwire/proto"

// remap says how the entity order changed from one tick's layout to the
// next: runs of entities kept in order. The World computes it once per
// change; every player's Scheduler realigns with it instead of merging ids.
type remap struct {
	runs   []run // new[ns:ns+n] are old[os:os+n]
	oldLen int
}

type run struct{ ns, os, n int32 }

func (m *remap) build(oldIDs, newIDs []proto.NetworkID) {
	m.runs, m.oldLen = m.runs[:0], len(oldIDs)
	j := 0
	for i, id := range newIDs {
		for j < len(oldIDs) && oldIDs[j] < id {
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
}
