package reliability

import (
	"github.com/tickwire/tickwire/proto"
)

// ParityReceiver keeps the reliable frames of the last ParityRing
// packets received and the parity frames that still name members it
// lacks, and rebuilds those members when the parity frames it holds
// determine them: each parity frame is a linear equation over GF(2⁸)
// (Σ coef · member = shard, see parityCoef) in the members it lacks, and
// the equations are solved together by Gaussian elimination, so
// overlapping windows rebuild what none of them could alone. Allocate it
// at the first parity frame of a connection (about 60 KB). Not safe for
// concurrent use.
type ParityReceiver struct {
	ring [ParityRing]ringFrame
	eqs  [maxEquations]equation
	// solve's work: the equations' rows, and the rebuilt frames.
	rows    [maxEquations]*equation
	rebuilt [][]byte
}

type ringFrame struct {
	pn   uint64
	n    int // 0: the packet had no reliable frame
	data [proto.MaxPacketSizeLimit]byte
}

// equation is Σ coef[i] · member(pns[i]) = rhs over the members still
// unknown; lens are their lengths, n the rhs's (the longest member it
// was made over).
type equation struct {
	k    int // 0: the slot is free
	pns  [maxUnknowns]uint64
	coef [maxUnknowns]byte
	lens [maxUnknowns]int
	n    int
	rhs  [proto.MaxPacketSizeLimit]byte
}

// Store keeps packet pn's reliable frame data (nil: it had none), takes
// it out of the equations that lacked it, and returns the reliable frame
// data of the members that this determined (valid until the next call):
// a parity frame that overtook one of its members on the path could not
// solve for a lost one until that member came.
func (r *ParityReceiver) Store(pn uint64, data []byte) [][]byte {
	r.rebuilt = r.rebuilt[:0]
	e := &r.ring[pn%ParityRing]
	e.pn, e.n = pn, copy(e.data[:], data)
	if e.n == 0 {
		return nil
	}
	named := false
	for i := range r.eqs {
		q := &r.eqs[i]
		if q.k == 0 {
			continue
		}
		for j := 0; j < q.k; j++ {
			if q.pns[j] == pn {
				if q.lens[j] != e.n {
					q.k = 0 // the parity is not over the frame we hold
					break
				}
				gfMulAdd(q.rhs[:q.n], e.data[:e.n], q.coef[j])
				q.remove(j)
				named = true
				break
			}
		}
	}
	if named {
		r.solve()
	}
	return r.rebuilt
}

// received returns packet pn's ring entry and whether pn is the packet
// it holds (its reliable frame, if n > 0).
func (r *ParityReceiver) received(pn uint64) (*ringFrame, bool) {
	e := &r.ring[pn%ParityRing]
	return e, e.pn == pn
}

// Parity takes one parity frame that arrived in packet pn (its members
// are earlier packets) and returns the reliable frame data of the
// members it rebuilt, if any (valid until the next call). The frame was
// validated by its parser; one whose members lie outside the ring, or
// whose lengths contradict a member held or an equation kept, is
// ignored.
func (r *ParityReceiver) Parity(pn uint64, f *proto.ParityFrame) [][]byte {
	r.rebuilt = r.rebuilt[:0]
	back := uint64(uint32(pn) - f.First)
	if back == 0 || back >= ParityRing || back > pn {
		return nil // not an earlier packet, or too old to rebuild
	}
	k := f.Members()
	span := uint64(0)
	for _, g := range f.Gaps {
		span += uint64(g)
	}
	if span >= back {
		return nil // a member at or after this packet
	}
	r.expire(pn)
	q := r.free()
	*q = equation{n: len(f.Shard)}
	copy(q.rhs[:], f.Shard)
	coef := parityCoef(k, int(f.Index))
	m := pn - back
	for i := range k {
		if i > 0 {
			m += uint64(f.Gaps[i-1])
		}
		l := f.MemberLen(i)
		if e, ok := r.received(m); ok {
			if e.n != l { // no reliable frame, or another length
				q.k = 0
				return nil
			}
			gfMulAdd(q.rhs[:q.n], e.data[:e.n], coef[i])
			continue
		}
		if coef[i] == 0 {
			continue // not in this shard (an MDS code has no zero coefficient)
		}
		if !r.lengthAgrees(m, l) {
			q.k = 0
			return nil
		}
		q.pns[q.k], q.coef[q.k], q.lens[q.k] = m, coef[i], l
		q.k++
	}
	if q.k == 0 {
		return nil // nothing lost
	}
	r.solve()
	return r.rebuilt
}

// lengthAgrees reports whether no kept equation gives member pn another
// length than l.
func (r *ParityReceiver) lengthAgrees(pn uint64, l int) bool {
	for i := range r.eqs {
		q := &r.eqs[i]
		for j := range q.k {
			if q.pns[j] == pn && q.lens[j] != l {
				return false
			}
		}
	}
	return true
}

// expire drops the equations that name a member too old to keep: packet
// pn arrived, and members at or below pn − ParityRing can no longer be
// stored.
func (r *ParityReceiver) expire(pn uint64) {
	for i := range r.eqs {
		q := &r.eqs[i]
		for j := range q.k {
			if q.pns[j]+ParityRing <= pn {
				q.k = 0
				break
			}
		}
	}
}

// free returns a free equation slot, dropping the one with the oldest
// member if none is.
func (r *ParityReceiver) free() *equation {
	var oldest *equation
	for i := range r.eqs {
		q := &r.eqs[i]
		if q.k == 0 {
			return q
		}
		if oldest == nil || q.pns[0] < oldest.pns[0] {
			oldest = q
		}
	}
	oldest.k = 0
	return oldest
}

// remove takes term j out of the equation.
func (q *equation) remove(j int) {
	q.k--
	q.pns[j], q.coef[j], q.lens[j] = q.pns[q.k], q.coef[q.k], q.lens[q.k]
}

// coefOf returns the equation's coefficient of member pn (0 if it does
// not name it).
func (q *equation) coefOf(pn uint64) byte {
	for j := range q.k {
		if q.pns[j] == pn {
			return q.coef[j]
		}
	}
	return 0
}

// addScaled adds c × p to q, members and right-hand side.
func (q *equation) addScaled(p *equation, c byte) bool {
	for j := range p.k {
		pc := gfMul(c, p.coef[j])
		found := false
		for i := range q.k {
			if q.pns[i] == p.pns[j] {
				q.coef[i] ^= pc
				found = true
				break
			}
		}
		if !found {
			if q.k == maxUnknowns {
				return false
			}
			q.pns[q.k], q.coef[q.k], q.lens[q.k] = p.pns[j], pc, p.lens[j]
			q.k++
		}
	}
	for i := 0; i < q.k; {
		if q.coef[i] == 0 {
			q.remove(i)
			continue
		}
		i++
	}
	if p.n > q.n {
		clear(q.rhs[q.n:p.n])
		q.n = p.n
	}
	gfMulAdd(q.rhs[:q.n], p.rhs[:p.n], c)
	return true
}

// solve runs Gauss–Jordan elimination over the kept equations and
// rebuilds every member that ends up alone in its equation.
func (r *ParityReceiver) solve() {
	rows := r.rows[:0]
	for i := range r.eqs {
		if r.eqs[i].k > 0 {
			rows = append(rows, &r.eqs[i])
		}
	}
	// Eliminate: each pass takes a pivot (a row's first member) and
	// clears that member from every other row.
	for p := 0; p < len(rows); p++ {
		piv := rows[p]
		if piv.k == 0 {
			continue
		}
		pn := piv.pns[0]
		c := gfInv(piv.coef[0])
		for j := range piv.k {
			piv.coef[j] = gfMul(piv.coef[j], c)
		}
		gfScale(piv.rhs[:piv.n], c)
		for _, q := range rows {
			if q == piv || q.k == 0 {
				continue
			}
			if qc := q.coefOf(pn); qc != 0 {
				if !q.addScaled(piv, qc) {
					q.k = 0 // too many unknowns to keep: drop it
				}
			}
		}
	}
	for progress := true; progress; {
		progress = false
		for _, q := range rows {
			if q.k == 1 {
				r.rebuild(q, rows)
				progress = true
			}
		}
	}
}

// rebuild takes the member an equation determined alone into the ring
// and out of the other rows.
func (r *ParityReceiver) rebuild(q *equation, rows []*equation) {
	pn, l := q.pns[0], q.lens[0]
	q.k = 0
	if l > q.n {
		return // the equations disagree with themselves
	}
	e := &r.ring[pn%ParityRing]
	if e.pn > pn || e.pn == pn && e.n > 0 {
		return // the slot is newer, or the member arrived
	}
	e.pn, e.n = pn, copy(e.data[:], q.rhs[:l])
	r.rebuilt = append(r.rebuilt, e.data[:e.n])
	for _, o := range rows {
		for j := range o.k {
			if o.pns[j] == pn {
				gfMulAdd(o.rhs[:o.n], e.data[:e.n], o.coef[j])
				o.remove(j)
				break
			}
		}
	}
}
