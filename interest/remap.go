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

// orBits ORs n bits of src starting at bit so into dst starting at bit do.
func orBits(dst []uint64, do int, src []uint64, so int, n int) {
	for n > 0 {
		k := min(n, 64)
		w, s := so>>6, uint(so&63)
		v := src[w] >> s
		if s != 0 && w+1 < len(src) {
			v |= src[w+1] << (64 - s)
		}
		if k < 64 {
			v &= 1<<k - 1
		}
		dw, ds := do>>6, uint(do&63)
		dst[dw] |= v << ds
		if ds != 0 && int(64-ds) < k {
			dst[dw+1] |= v >> (64 - ds)
		}
		n, so, do = n-k, so+k, do+k
	}
}
