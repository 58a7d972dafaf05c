package interest

import (
	"math"
	"math/bits"
	"slices"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// Vec3 is an entity position. Relevance by distance uses X and Y (the
// ground plane); Z is height.
type Vec3 struct{ X, Y, Z float32 }

// Kind configures one entity kind.
type Kind struct {
	// Weight is the priority a changed entity of this kind gains per tick
	// (before doubling); 0 or less means the default 1. A player avatar
	// might use 4, a pebble 0.25.
	Weight float32
	// AlwaysRelevant makes every player see entities of this kind
	// wherever they are (game state, team flags).
	AlwaysRelevant bool
}

// WorldConfig configures a World. The zero value is the default.
type WorldConfig struct {
	// CellSize is the spatial grid's cell edge in world units. Default 32;
	// about a typical view radius divided by 2–4 works well.
	CellSize float32
	// Kinds configures entity kinds by their kind byte; kinds beyond the
	// slice use the defaults.
	Kinds []Kind
}

// World is one tick's view of the replicated entities that every player's
// Scheduler ranks: ids ascending (in the same order as the deltacomp ring's
// latest snapshot), positions, kinds and which changed this tick. Fill it
// once per tick with Begin, Add... and End; schedulers only read it. Not
// safe for concurrent use while being filled; schedulers of different
// players may read it concurrently after End.
type World struct {
	cellSize float32
	weight   [256]float32
	always   [256]bool

	tick    uint32
	gen     uint64 // End calls: the World's updates
	ids     []proto.NetworkID
	prevIDs []proto.NetworkID
	pos     []Vec3
	kind    []uint8
	owner   []uint16
	changed []uint64
	// lastChanged is changed of the last update. since[j] marks the
	// entities that changed (or are new) in the last j+2 updates, for
	// schedulers that skip updates (a player sent every other tick):
	// changedWithin.
	since       [maxGap - 1][]uint64
	lastChanged []uint64
	spare       []uint64
	alwaysB     []uint64      // entities of always-relevant kinds
	layouts     idset.History // the entity sets' changes
	// owned lists the entities with an owner as owner<<32 | index,
	// ascending: each slot's entities in one run (OwnedBy).
	owned []uint64

	// spatial hash grid: entities sorted by bucket (counting sort), each
	// with what within reads of it, so that a bucket is read in one pass
	grid     []gridEntry
	bucketOf []uint32
	start    []int32 // bucket -> first index into grid; len buckets+1
	mask     uint32
}

// gridEntry is an entity in the grid: its position on the plane, its
// cell, and its index (low bits) and band phase (top maxShift bits) in
// one word: an entity's turn in a band of period 2^j falls on the ticks
// where (tick + a hash of its id) mod 2^j == 0, so that its turns keep
// their rhythm whatever the layout; the phase is that sum mod maxEvery.
type gridEntry struct {
	x, y   float32
	cx, cy int32
	iph    uint32
}

const (
	phaseShift = 32 - maxShift
	indexMask  = 1<<phaseShift - 1
)

// phase is entity id's band phase at tick (see gridEntry).
func phase(tick uint32, id proto.NetworkID) uint32 {
	// The hash's top bits spread neighbouring ids over the phases.
	return (tick + uint32(id)*0x9E3779B1>>phaseShift) & (maxEvery - 1)
}

// NewWorld returns an empty world.
func NewWorld(cfg WorldConfig) *World {
	w := &World{cellSize: cfg.CellSize}
	if w.cellSize <= 0 {
		w.cellSize = 32
	}
	for k := range w.weight {
		w.weight[k] = 1
	}
	for k, c := range cfg.Kinds {
		if k >= 256 {
			break
		}
		if c.Weight > 0 {
			w.weight[k] = c.Weight
		}
		w.always[k] = c.AlwaysRelevant
	}
	return w
}

// Begin starts filling the world for tick.
func (w *World) Begin(tick uint32) {
	w.tick = tick
	w.prevIDs, w.ids = w.ids, w.prevIDs[:0]
	w.pos, w.kind, w.owner = w.pos[:0], w.kind[:0], w.owner[:0]
}

// Add appends an entity that no player owns; ids must be added in
// ascending order.
func (w *World) Add(id proto.NetworkID, pos Vec3, kind uint8) { w.AddOwned(id, pos, kind, 0) }

// AddOwned appends an entity owned by the player in slot owner (0: none),
// one whose client predicts it: its avatar, its projectiles. The
// schedulers of the players who play that slot (Scheduler.SetPlayers)
// keep it relevant and fresh every tick, whatever its distance. Ids must
// be added in ascending order.
func (w *World) AddOwned(id proto.NetworkID, pos Vec3, kind uint8, owner uint16) {
	w.ids = append(w.ids, id)
	w.pos = append(w.pos, pos)
	w.kind = append(w.kind, kind)
	w.owner = append(w.owner, owner)
}

// End finishes the tick. changed is a bitset over the entities (bit i:
// entity i changed this tick or is new), e.g. deltacomp's Ring.Changed();
// it is copied.
func (w *World) End(changed []uint64) {
	n := len(w.ids)
	words := (n + 63) / 64
	w.lastChanged, w.changed = w.changed, w.lastChanged
	w.changed = append(w.changed[:0], changed[:min(words, len(changed))]...)
	for len(w.changed) < words {
		w.changed = append(w.changed, 0)
	}
	if words > 0 && n%64 != 0 {
		w.changed[words-1] &= 1<<(n%64) - 1
	}
	var m *idset.Remap // nil: the layout did not change
	if !slices.Equal(w.ids, w.prevIDs) {
		m = w.layouts.Next(w.prevIDs, w.ids)
	}
	w.gen++
	w.shiftSince(m, w.lastChanged)
	w.alwaysB = idset.ResizeBits(w.alwaysB, n)
	for i, k := range w.kind {
		if w.always[k] {
			idset.SetBit(w.alwaysB, i)
		}
	}
	w.owned = w.owned[:0]
	for i, o := range w.owner {
		if o != 0 {
			w.owned = append(w.owned, uint64(o)<<32|uint64(i))
		}
	}
	slices.Sort(w.owned)
	w.buildGrid()
}

// OwnedBy appends to dst the indices, ascending, of the entities the
// player in slot owns (AddOwned), and returns the result.
func (w *World) OwnedBy(dst []int32, slot uint16) []int32 {
	k, _ := slices.BinarySearch(w.owned, uint64(slot)<<32)
	for ; k < len(w.owned) && w.owned[k]>>32 == uint64(slot); k++ {
		dst = append(dst, int32(uint32(w.owned[k])))
	}
	return dst
}

// Owner is the player slot that owns entity i (0: none).
func (w *World) Owner(i int) uint16 { return w.owner[i] }

// shiftSince moves the changes of the last updates (since, and prev, the
// last update's changed) into the new layout (m; nil if unchanged) and
// adds this update's.
func (w *World) shiftSince(m *idset.Remap, prev []uint64) {
	words := len(w.changed)
	for j := len(w.since) - 1; j >= 0; j-- {
		src := prev
		if j > 0 {
			src = w.since[j-1]
		}
		dst := idset.ResizeBits(w.spare, words*64)[:words]
		if m != nil {
			m.MoveBits(dst, src)
		} else {
			copy(dst, src)
		}
		for k, c := range w.changed {
			dst[k] |= c
		}
		w.spare, w.since[j] = w.since[j], dst
	}
}

// changedWithin marks the entities that changed (or are new) in the last
// g updates, or is nil when g is more than maxGap: more than the World
// remembers.
func (w *World) changedWithin(g uint64) []uint64 {
	switch {
	case g <= 1:
		return w.changed
	case g <= maxGap:
		return w.since[g-2]
	}
	return nil
}

// maxEvery is the longest band period (2^maxShift ticks); maxGap the most
// updates a scheduler may skip and still learn every change it missed
// (beyond that it re-prioritises every relevant entity).
const (
	maxShift = 3
	maxEvery = 1 << maxShift
	maxGap   = maxEvery
)

// Len is the number of entities.
func (w *World) Len() int { return len(w.ids) }

// Tick is the tick being described.
func (w *World) Tick() uint32 { return w.tick }

// ID, Pos and Kind describe entity i.
func (w *World) ID(i int) proto.NetworkID { return w.ids[i] }
func (w *World) Pos(i int) Vec3           { return w.pos[i] }
func (w *World) Kind(i int) uint8         { return w.kind[i] }

// Changed reports whether entity i changed this tick.
func (w *World) Changed(i int) bool { return idset.Bit(w.changed, i) }

// Index returns the index of id, or -1.
func (w *World) Index(id proto.NetworkID) int {
	i, ok := slices.BinarySearch(w.ids, id)
	if !ok {
		return -1
	}
	return i
}

func (w *World) cellOf(v float32) int32 {
	c := math.Floor(float64(v / w.cellSize))
	return int32(max(min(c, math.MaxInt32/2), math.MinInt32/2))
}

func cellHash(cx, cy int32) uint32 {
	h := uint32(cx)*0x9E3779B1 ^ uint32(cy)*0x85EBCA77
	return h ^ h>>15
}

func (w *World) buildGrid() {
	n := len(w.ids)
	buckets := 1
	for buckets < n {
		buckets <<= 1
	}
	w.mask = uint32(buckets - 1)
	w.bucketOf = slices.Grow(w.bucketOf[:0], n)[:n]
	w.grid = slices.Grow(w.grid[:0], n)[:n]
	w.start = slices.Grow(w.start[:0], buckets+1)[:buckets+1]
	clear(w.start)
	for i, p := range w.pos {
		b := cellHash(w.cellOf(p.X), w.cellOf(p.Y)) & w.mask
		w.bucketOf[i] = b
		w.start[b+1]++
	}
	for b := 1; b <= buckets; b++ {
		w.start[b] += w.start[b-1]
	}
	// place entities; start[b] is used as a cursor and restored after
	for i, b := range w.bucketOf {
		p := w.pos[i]
		iph := uint32(i) | phase(w.tick, w.ids[i])<<phaseShift
		w.grid[w.start[b]] = gridEntry{x: p.X, y: p.Y, cx: w.cellOf(p.X), cy: w.cellOf(p.Y), iph: iph}
		w.start[b]++
	}
	for b := buckets; b > 0; b-- {
		w.start[b] = w.start[b-1]
	}
	w.start[0] = 0
}

// within sets in rel the bit of every entity whose X–Y distance to c is at
// most r (and passes filter, when given), and in late the bit of every
// such entity in one of b's bands whose turn fell on none of the last gap
// ticks (1 to maxEvery: the ticks since the scheduler's last update).
func (w *World) within(rel, late []uint64, c Vec3, r float32, b *bands, gap uint32, filter func(*World, int) bool) {
	r2 := r * r
	x0, x1 := w.cellOf(c.X-r), w.cellOf(c.X+r)
	y0, y1 := w.cellOf(c.Y-r), w.cellOf(c.Y+r)
	cells := (int64(x1) - int64(x0) + 1) * (int64(y1) - int64(y0) + 1)
	if cells*4 > int64(len(w.ids)) {
		// The view covers much of the world: scanning beats the grid.
		w.mark(rel, late, w.grid, 0, 0, true, c, r2, b, gap)
	} else {
		for cy := y0; cy <= y1; cy++ {
			gy := w.gap(c.Y, cy)
			for cx := x0; cx <= x1; cx++ {
				if gx := w.gap(c.X, cx); gx*gx+gy*gy > r2 {
					continue // the cell's nearest point is out of range
				}
				bk := cellHash(cx, cy) & w.mask
				w.mark(rel, late, w.grid[w.start[bk]:w.start[bk+1]], cx, cy, false, c, r2, b, gap)
			}
		}
	}
	if filter != nil {
		for k, m := range rel {
			for ; m != 0; m &= m - 1 {
				i := k*64 + bits.TrailingZeros64(m)
				if !filter(w, i) {
					rel[k] &^= 1 << (i & 63)
				}
			}
		}
	}
}

// gap is the distance from v to cell c along one axis (0 inside it),
// short by far more than the float32 rounding of positions and of their
// cells (cellOf) can err, so that it never exceeds the distance to an
// entity the cell holds, wherever the world lies.
func (w *World) gap(v float32, c int32) float32 {
	lo := float64(c) * float64(w.cellSize)
	hi := lo + float64(w.cellSize)
	g := max(lo-float64(v), float64(v)-hi, 0)
	return float32(max(g-(math.Abs(lo)+math.Abs(hi))*1e-5, 0))
}

// mark sets in rel the bit of every entity of grid (all of them, or
// those in cell cx, cy: a bucket may hold other cells too) within the
// squared radius r2 of c, and in late too when it is in one of b's bands
// and its turn fell on none of the last gap ticks. Without a branch per
// entity: which side of the radius and which band are not predictable.
//
// An entity's turns in a band of period P fall where its phase (tick plus
// the hash of its id) is 0 mod P; one fell in the last gap ticks (gap ≤
// P) when this tick's phase mod P is below gap.
func (w *World) mark(rel, late []uint64, grid []gridEntry, cx, cy int32, all bool, c Vec3, r2 float32, b *bands, gap uint32) {
	for _, g := range grid {
		if !all && (g.cx != cx || g.cy != cy) {
			continue
		}
		dx, dy := g.x-c.X, g.y-c.Y
		d2 := dx*dx + dy*dy
		in := b2u(d2 <= r2)
		band := b2u(d2 >= b.from2[0]) + b2u(d2 >= b.from2[1]) + b2u(d2 >= b.from2[2])
		i := g.iph & indexMask
		k, bit := i>>6, uint(i&63)
		rel[k] |= in << bit
		late[k] |= in & b2u(g.iph>>phaseShift&b.mask[band] >= gap) << bit
	}
}

// b2u is 1 for true, 0 for false.
func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
