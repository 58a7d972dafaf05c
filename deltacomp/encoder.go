package deltacomp

import (
	"errors"
	"slices"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// EncoderConfig configures an Encoder. The zero value is the default.
type EncoderConfig struct {
	// MaxRemovals bounds the removals written per frame; the rest wait
	// for later frames. Default 64.
	MaxRemovals int
	// InFlight is how many sent frames the encoder remembers until a
	// Delivered or Lost notification (rounded up to a power of two).
	// A frame whose record was overwritten counts as lost. Default 256
	// (over 4 s at 60 Hz; reliability declares a packet lost long before).
	InFlight int
}

// Encoder is one client's side of delta replication on the server: for
// every entity of the Ring it knows the newest revision the client
// acknowledged holding (its baseline), and it writes codec-4 delta frames
// with each entity's patch against that baseline (in full if there is
// none), plus removals until they are acknowledged. With the ring's
// Predictor it writes codec 5: it also knows the entity's acknowledged
// revision before the baseline, and patches an entity that changed
// against its record extrapolated from the two when that patch is the
// shorter.
//
// Per tick and client: Prepare, then let the scheduler size entities
// (BodySize, LinkSize, FixedSize: the encoder is an interest.Sizer), then
// AppendFrame with the chosen entities. Wire the client's packet
// notifications to Delivered and Lost. Not safe for concurrent use.
//
// The per-entity state keeps no copy of the entities' ids: it is
// indexed by the entities' slots in the ring (idset.History), which
// entities keep while they exist, and follows the ring's layout changes
// through the ring's remaps, clearing the slots each change freed.
// Prepare (or Delivered, Lost's bookkeeping aside) at
// least once per idset.HistoryLen layout changes; an encoder further
// behind no longer knows which entities the client holds that are gone
// since, and says so with Stale until Reset (a resync).
type Encoder struct {
	ring        *Ring
	maxRemovals int
	layout      uint64            // the ring's layout base and sent follow
	slot        []int32           // the ring's index -> slot (align sets it)
	held        []held            // by slot: what the client holds of the entity
	removals    []proto.NetworkID // ascending; pending until delivered
	lastAcked   uint32
	warmed      uint32 // the ring revision warm last ran at
	warmSum     byte   // idset.Warm's result
	stale       bool   // lost track of what the client holds: it needs a resync

	// With a predictor: by slot, the newest acknowledged revision
	// holding the entity before its baseline (0 none).
	prev  []uint32
	codec proto.Codec // the ring's

	// per Prepare
	defRev  uint32
	defSlot *patchSlot // the ring's slot of defRev (nil: none)
	fixed   int
	ps      *Scratch // this packet's sizing: own, or its goroutine's (UseScratch)
	own     Scratch

	flights idset.Flights[flight]
	log     idset.Log
	// slotLog holds the written entities' slots (flight.slots). It is
	// begun with the same sizes as log and gets no more ids, so it holds
	// a record as long as log does.
	slotLog idset.Log
	tmpIDs  []proto.NetworkID
	tmpRem  []proto.NetworkID
}

// Scratch is the working memory an Encoder sizes and writes one packet
// in: arrays over the ring's entities that are filled anew for each
// packet. The encoders one goroutine runs, one after the other, can share
// one Scratch (UseScratch): it then stays in that core's cache, where
// each client's own would be cold by its next packet. The zero value is
// ready to use.
type Scratch struct {
	sized  []uint64 // bit i: entity i is sized for this packet
	sizeAt []int32  // entity i's place in sizes, when sized
	sizes  []sizing // this packet's sized entities, in the order sized
	codes  []byte   // codes encoded for this packet alone (sizing.code)
	pred   predictScratch
	counts [3]uint64 // by codeSource: CodeStats
}

// CodeStats counts where the codes of the patches sized in s came from,
// since s was made (see CodeStats). Read it when none of the encoders
// using s runs.
func (s *Scratch) CodeStats() CodeStats {
	return CodeStats{Shared: s.counts[codeShared], Encoded: s.counts[codeEncoded], Private: s.counts[codePrivate]}
}

// sizing is how an entity goes in the packet being built. The sizings
// of a packet sit together, in the order sized, rather than in arrays
// over every entity: a client's packet touches only a few of the world's
// entities, and the per-entity index to them is all it reads elsewhere.
type sizing struct {
	// code is the patch's run-length code: the ring's copy, shared with
	// the other clients (Ring.code), or, rarely, Scratch.codes'.
	code []byte
	n    int32  // the body's size: the baseline's age and step (explicit kinds) and code; 0: nothing to send
	rev  uint32 // the baseline revision (0: in full)
	step uint32 // predicted kinds: the prediction's older record is at rev − step
	kind uint8
	// confirm: ConfirmSize was asked of the entity, whose patch is all
	// zero: written, it confirms the baseline's record.
	confirm bool
	zero    bool // the patch is all zero
}

// held is what an encoder knows the client holds of one entity. Its two
// revisions are read together (sizing a patch needs both), so they sit
// side by side.
type held struct {
	base uint32 // newest acknowledged revision holding the entity, 0 none
	sent uint32 // newest revision the entity was written in
}

type flight struct {
	rev      uint32
	ids      idset.Span // entities written, then removals written
	removals int32
	// slots holds the written entities' slots: where a slot still holds
	// the same id, Delivered finds the entity there.
	slots idset.Span
}

// NewEncoder returns an encoder for one client of ring r, which holds
// nothing yet: every entity is sent in full until acknowledged.
func NewEncoder(r *Ring, cfg EncoderConfig) *Encoder {
	if cfg.MaxRemovals <= 0 {
		cfg.MaxRemovals = 64
	}
	e := &Encoder{ring: r, maxRemovals: cfg.MaxRemovals, codec: r.Codec(), flights: idset.NewFlights[flight](cfg.InFlight, 1<<16)}
	e.ps = &e.own
	return e
}

// UseScratch makes the encoder size and write its packets in s from its
// next Prepare on (nil: its own). Encoders may share a Scratch only when
// no two of them are between Prepare and AppendFrame at once: the
// encoders one goroutine runs, one packet after the other.
func (e *Encoder) UseScratch(s *Scratch) {
	if s == nil {
		s = &e.own
	}
	e.ps = s
}

// LastAcked is the newest revision the client acknowledged (0 none).
func (e *Encoder) LastAcked() uint32 { return e.lastAcked }

// PendingRemovals is the number of removals not yet acknowledged.
func (e *Encoder) PendingRemovals() int { return len(e.removals) }

// Reset forgets everything the client was known to hold (after a resync
// request): entities go in full until acknowledged again, and
// notifications for frames sent before are ignored. Build the resync's
// full snapshot from the ring's Latest right after Reset (before the next
// Push), and call FullDelivered when it is delivered: every entity of
// Latest counts as possibly held, so its removal will still be sent.
func (e *Encoder) Reset() {
	e.align()
	// The client may hold any entity (it is about to get a full snapshot
	// too): all count as sent, so that their removal is still announced.
	e.forget(true)
	e.removals = e.removals[:0]
	e.lastAcked = 0
	e.flights.Clear()
	e.stale = false
}

// Stale reports that the encoder fell more than idset.HistoryLen layout
// changes behind the ring: the client may hold entities gone since whose
// removal it will not be told. Resync the client (Reset and a full
// snapshot).
func (e *Encoder) Stale() bool { return e.stale }

// align realigns per-entity state with the ring's latest entity set,
// through each layout change since the last alignment (usually one; the
// ring computes each change's remap once, for all clients).
func (e *Encoder) align() {
	r := e.ring
	if !r.layouts.Follow(&e.layout, e.move) || len(e.held) != r.layouts.SlotCount() {
		e.restart()
	}
	e.slot = r.layouts.Slots()
	if e.warmed != r.rev {
		// Once per revision, before the packet's learning, sizing and
		// writing read the baselines at random.
		e.warmed = r.rev
		e.warmSum = idset.Warm(e.held)
	}
}

// move realigns the per-entity state through one layout change, m: the
// slots it freed are cleared, their entities' removals pending if the
// client may hold them.
func (e *Encoder) move(m *idset.Remap) {
	gone := e.tmpIDs[:0]
	for k, sl := range m.Freed {
		if e.held[sl] != (held{}) {
			gone = append(gone, m.Gone[k])
		}
		e.held[sl] = held{}
		if e.prev != nil {
			e.prev[sl] = 0
		}
	}
	e.held = idset.Grow(e.held, m.Slots)
	if e.ring.pred != nil {
		e.prev = idset.Grow(e.prev, m.Slots)
	}
	// Pending removals of ids that exist again are dropped: the new
	// entity goes in full and replaces whatever the client holds. Such an
	// id is one of the layout's new entities (m.Added, usually a few).
	// The entities gone in this change join the pending removals. All
	// three lists ascend: one merge.
	added := m.Added
	rem := e.tmpRem[:0]
	k, g := 0, 0
	for _, id := range e.removals {
		for k < len(added) && added[k] < id {
			k++
		}
		if k < len(added) && added[k] == id {
			continue
		}
		for g < len(gone) && gone[g] < id {
			rem = append(rem, gone[g])
			g++
		}
		if g < len(gone) && gone[g] == id {
			g++
		}
		rem = append(rem, id)
	}
	rem = append(rem, gone[g:]...)
	e.tmpRem, e.removals = e.removals[:0], rem
	e.tmpIDs = gone[:0]
}

// restart indexes the state by the ring's latest entity set when the
// changes since the last alignment are no longer held (or there were
// none to follow: a new encoder). The baselines are forgotten and every
// entity counts as possibly held, as Reset does; an encoder that had
// state is stale: entities gone in the changes it missed may still be
// held by the client.
func (e *Encoder) restart() {
	r := e.ring
	n := r.layouts.SlotCount()
	e.stale = e.stale || len(e.held) > 0 || e.layout > 0
	e.held = idset.Grow(e.held[:0], n)
	if r.pred != nil {
		e.prev = idset.Grow(e.prev[:0], n)
	}
	e.forget(e.stale)
	e.layout = r.Layout()
}

// forget drops every baseline; with held, every entity counts as
// possibly held by the client (sent at the latest revision: its removal
// will be announced), else as never sent.
func (e *Encoder) forget(held bool) {
	clear(e.held)
	clear(e.prev)
	if !held {
		return
	}
	v := max(e.ring.rev, 1)
	for _, sl := range e.ring.layouts.Slots() {
		e.held[sl].sent = v
	}
}

// Prepare readies the encoder for the ring's latest revision; call it once
// per packet before sizing and writing entities.
func (e *Encoder) Prepare() {
	e.align()
	r := e.ring
	n := len(r.latest.IDs)
	e.ps.sized = idset.ResizeBits(e.ps.sized, n)
	if cap(e.ps.sizeAt) < n {
		e.ps.sizeAt = make([]int32, n, n+n/4)
	}
	e.ps.sizeAt = e.ps.sizeAt[:n]
	e.ps.sizes = e.ps.sizes[:0]
	e.ps.codes = e.ps.codes[:0]
	e.defRev, e.defSlot = 0, nil
	if r.Holds(e.lastAcked) && e.lastAcked != r.rev {
		e.defRev, e.defSlot = e.lastAcked, r.slotOf(e.lastAcked)
	}
	e.fixed = proto.SnapshotDeltaHeaderSize + varintLen(uint64(e.defAge()))
	var prev proto.NetworkID
	for k, id := range e.removals {
		if k == e.maxRemovals {
			break
		}
		e.fixed += entryHeaderLen(e.codec, prev, id, kindRemoved)
		prev = id
	}
}

func (e *Encoder) defAge() uint32 {
	if e.defRev == 0 {
		return 0
	}
	return e.ring.rev - e.defRev
}

// FixedSize is the size of the frame with no entities: its header, the
// default baseline and the pending removals it will carry. Valid after
// Prepare.
func (e *Encoder) FixedSize() int { return e.fixed }

// BodySize is the size of entity i's patch (i indexes the ring's Latest)
// without its id header, or 0 when the client already holds the entity's
// current state and nothing about it is in flight, so it need not be sent.
// Valid after Prepare; the patch is encoded once and cached for
// AppendFrame.
func (e *Encoder) BodySize(i int) int {
	if idset.Bit(e.ps.sized, i) {
		return int(e.ps.sizes[e.ps.sizeAt[i]].n)
	}
	r := e.ring
	kind := uint8(kindFull)
	var rev uint32
	var patch []byte
	var base *patchSlot // the baseline's slot (nil: in full)
	sl := e.slot[i]
	h := e.held[sl]
	if b := h.base; b != 0 {
		s := e.defSlot
		if b != e.defRev {
			s = r.slotOf(b)
		}
		if p, ok := s.patch(r, i); ok {
			rev, patch, base = b, p, s
			kind = kindExplicit
			if b == e.defRev {
				kind = kindDefault
			}
		}
	}
	idset.SetBit(e.ps.sized, i)
	e.ps.sizeAt[i] = int32(len(e.ps.sizes))
	code, zero, own, src := r.code(base, i, patch, e.ps.codes)
	e.ps.codes = own
	e.ps.counts[src]++
	n := len(code)
	if kind == kindExplicit {
		n += varintLen(uint64(r.rev - rev))
	}
	isZero := kind != kindFull && zero
	// Written in place: a sizing built aside and copied in costs a
	// stall per entity (its fields stored one by one, read back whole).
	e.ps.sizes = append(e.ps.sizes, sizing{})
	sz := &e.ps.sizes[len(e.ps.sizes)-1]
	sz.code, sz.rev, sz.kind, sz.zero = code, rev, kind, isZero
	switch {
	case isZero && h.sent <= rev:
		// An all-zero patch and nothing newer in flight: the client
		// holds this state.
		n = 0
	case !isZero && kind != kindFull && e.prev != nil:
		n = e.predict(sz, i, e.prev[sl], n)
	}
	sz.n = int32(n)
	return n
}

// predict makes sz, entity i's plain patch against its baseline with a
// body of n bytes, the patch against the prediction from the baseline and
// prev (the entity's acknowledged revision before it, 0 none) when that
// body is shorter, and returns the body's size.
func (e *Encoder) predict(sz *sizing, i int, prev uint32, n int) int {
	r := e.ring
	if prev == 0 || prev >= sz.rev {
		return n
	}
	if _, ok := r.Patch(prev, i); !ok {
		return n
	}
	step := sz.rev - prev
	code, own, src := r.predictedCode(sz.rev, step, i, &e.ps.pred, e.ps.codes)
	e.ps.codes = own
	e.ps.counts[src]++
	kind, m := uint8(kindPredicted), len(code)
	if sz.rev != e.defRev || step != 1 {
		kind = kindPredictedExplicit
		m += varintLen(uint64(r.rev-sz.rev)) + varintLen(uint64(step))
	}
	if m >= n {
		return n
	}
	sz.code, sz.kind, sz.step = code, kind, step
	return m
}

// ConfirmSize is the size, without its id header, of entity i's
// confirmation: an all-zero patch against the baseline the client
// acknowledged, which tells it that the record it holds is the entity's
// at this revision (its Replica then counts the entity as updated at
// this revision's tick). It is 0 when the entity changed since that
// baseline, or has none (only a patch says what it is now), and when the
// baseline is this revision (the client knows already). An entity
// whose ConfirmSize was asked goes in the frame when selected even if
// its BodySize is 0. Valid after Prepare.
func (e *Encoder) ConfirmSize(i int) int {
	if !idset.Bit(e.ps.sized, i) {
		e.BodySize(i)
	}
	sz := &e.ps.sizes[e.ps.sizeAt[i]]
	if !sz.zero || sz.rev == e.ring.rev {
		// Changed, or acknowledged at this very revision (a second
		// frame of it): nothing to confirm.
		return 0
	}
	sz.confirm = true
	n := len(sz.code)
	if sz.kind == kindExplicit {
		n += varintLen(uint64(e.ring.rev - sz.rev))
	}
	return n
}

// writes reports whether AppendFrame writes a selected entity sized sz.
func (sz *sizing) writes() bool { return sz.n > 0 || sz.confirm }

// LinkSize is the size of entity i's id header when the entity written
// before it in the frame is prev (−1: none). Call BodySize(i) first.
func (e *Encoder) LinkSize(prev, i int) int {
	ids := e.ring.latest.IDs
	var p proto.NetworkID
	if prev >= 0 {
		p = ids[prev]
	}
	if !idset.Bit(e.ps.sized, i) {
		e.BodySize(i)
	}
	return entryHeaderLen(e.codec, p, ids[i], e.ps.sizes[e.ps.sizeAt[i]].kind)
}

var (
	errSelection = errors.New("deltacomp: selection not ascending or out of range")
	errFrameBig  = tooLarge("delta frame")
)

// AppendFrame appends a snapshot delta frame (codec 4, or 5 with the
// ring's predictor) to b holding the entities sel (ascending indices into
// the ring's Latest, each sized with BodySize; those with BodySize 0 are
// skipped unless ConfirmSize was asked of them: then their confirmation
// goes) and up to MaxRemovals pending removals, and remembers what it
// carried under the packet sequence seq for Delivered and Lost. Its size
// is FixedSize plus the selected entities' BodySize and LinkSize (at
// most that when entities with BodySize 0 are skipped).
func (e *Encoder) AppendFrame(b []byte, seq uint16, sel []int32) ([]byte, error) {
	r := e.ring
	ids := r.latest.IDs
	n := len(ids)
	baseRev := r.rev
	last := int32(-1)
	for _, i := range sel {
		if i <= last || int(i) >= n {
			return b, errSelection
		}
		last = i
		if !idset.Bit(e.ps.sized, int(i)) {
			e.BodySize(int(i))
		}
		if sz := &e.ps.sizes[e.ps.sizeAt[i]]; sz.writes() && sz.kind != kindFull && sz.rev-sz.step < baseRev {
			baseRev = sz.rev - sz.step // the oldest revision it reads
		}
	}
	start := len(b)
	b, mark, err := proto.BeginSnapshotDelta(b, r.latest.Tick, r.rev, baseRev, e.codec)
	if err != nil {
		return b, err
	}
	b = appendVarint(b, uint64(e.defAge()))

	rem := e.removals[:min(len(e.removals), e.maxRemovals)]
	fl := e.flights.Put(seq)
	fl.rev = r.rev
	fl.ids = e.log.Begin(len(sel) + len(rem))
	fl.slots = e.slotLog.Begin(len(sel) + len(rem))
	var prev proto.NetworkID
	count := 0
	k := 0
	for _, i := range sel {
		sz := &e.ps.sizes[e.ps.sizeAt[i]]
		if !sz.writes() {
			continue
		}
		id := ids[i]
		for k < len(rem) && rem[k] < id {
			b = appendVarint(b, entryHeader(e.codec, uint32(rem[k]-prev-1), kindRemoved))
			prev = rem[k]
			k++
			count++
		}
		b = appendVarint(b, entryHeader(e.codec, uint32(id-prev-1), sz.kind))
		if sz.kind == kindExplicit || sz.kind == kindPredictedExplicit {
			b = appendVarint(b, uint64(r.rev-sz.rev))
		}
		if sz.kind == kindPredictedExplicit {
			b = appendVarint(b, uint64(sz.step))
		}
		b = append(b, sz.code...)
		prev = id
		e.log.Append(&fl.ids, id)
		e.slotLog.Append(&fl.slots, proto.NetworkID(e.slot[i]))
		e.held[e.slot[i]].sent = r.rev
		count++
	}
	for ; k < len(rem); k++ {
		b = appendVarint(b, entryHeader(e.codec, uint32(rem[k]-prev-1), kindRemoved))
		prev = rem[k]
		count++
	}
	// The log holds the written entities, then the removals.
	for _, id := range rem {
		e.log.Append(&fl.ids, id)
	}
	fl.removals = int32(len(rem))
	if count > 0xffff {
		e.flights.Take(seq) // not sent
		return b[:start], errFrameBig
	}
	b, err = proto.EndSnapshotDelta(b, mark, uint16(count))
	if err != nil {
		e.flights.Take(seq) // not sent
		return b[:start], err
	}
	return b, nil
}

// Delivered tells the encoder the packet with sequence seq arrived: the
// entities it carried become the client's baselines and its removals are
// done. Unknown sequences (packets without a delta frame) are ignored.
func (e *Encoder) Delivered(seq uint16) {
	fl, ok := e.flights.Take(seq)
	if !ok {
		return
	}
	if !e.log.Valid(fl.ids) {
		return // too old: its baselines are simply not used
	}
	e.align()
	nEnt := fl.ids.Len() - int(fl.removals)
	// The slots of the time, where they still hold the same ids (the
	// others are gone since). An id gone and back may hold its old slot
	// again: its baseline then predates it, and the ring has no patch
	// from there, so it is still sent in full.
	for k := 0; k < nEnt; k++ {
		if sl := int32(e.slotLog.At(fl.slots, k)); e.ring.layouts.SlotID(sl) == e.log.At(fl.ids, k) {
			e.acknowledged(sl, fl.rev)
		}
	}
	if fl.removals > 0 {
		// Both lists ascend: merge out the acknowledged removals.
		rem := e.removals[:0]
		k := nEnt
		for _, id := range e.removals {
			for k < fl.ids.Len() && e.log.At(fl.ids, k) < id {
				k++
			}
			if k < fl.ids.Len() && e.log.At(fl.ids, k) == id {
				continue
			}
			rem = append(rem, id)
		}
		e.removals = rem
	}
	if fl.rev > e.lastAcked {
		e.lastAcked = fl.rev
	}
}

// acknowledged records that the client holds the entity of slot sl at
// revision rev: a newer one becomes its baseline, the baseline before it
// the revision a prediction extrapolates from; an older one than the
// baseline may become that.
func (e *Encoder) acknowledged(sl int32, rev uint32) {
	h := &e.held[sl]
	switch {
	case h.base < rev:
		if e.prev != nil {
			e.prev[sl] = h.base
		}
		h.base = rev
	case h.base > rev && e.prev != nil && e.prev[sl] < rev:
		e.prev[sl] = rev
	}
}

// Lost tells the encoder the packet with sequence seq is lost. Its
// removals stay pending and are sent again. Its entities are re-sent when
// the scheduler picks them again: Lost appends their ids (ascending) to
// carried for interest.Scheduler.Lost, and returns the result. known is
// false when the packet had a frame the encoder no longer remembers (older
// than the InFlight packets it keeps, or its ids overwritten in the log):
// then everything the client may lack must be re-prioritised
// (interest.Scheduler.LostUnknown). A packet without a frame, or one
// already reported, carried nothing.
func (e *Encoder) Lost(seq uint16, carried []proto.NetworkID) (ids []proto.NetworkID, known bool) {
	fl, ok := e.flights.Take(seq)
	if !ok {
		return carried, !e.flights.Forgot(seq)
	}
	if !e.log.Valid(fl.ids) {
		return carried, false
	}
	for k := range fl.ids.Len() - int(fl.removals) {
		carried = append(carried, e.log.At(fl.ids, k))
	}
	return carried, true
}

// FullDelivered tells the encoder that the client holds a full snapshot
// of the entities ids (ascending) at revision rev, e.g. a join or resync
// snapshot built from the ring's Latest at rev and delivered reliably.
func (e *Encoder) FullDelivered(rev uint32, ids []proto.NetworkID) {
	e.align()
	if !e.ring.Holds(rev) {
		return
	}
	for _, id := range ids {
		i, ok := slices.BinarySearch(e.ring.latest.IDs, id)
		if !ok {
			continue
		}
		if e.held[e.slot[i]].base < rev {
			if _, ok := e.ring.Patch(rev, i); ok {
				e.acknowledged(e.slot[i], rev)
			}
		}
	}
	if rev > e.lastAcked {
		e.lastAcked = rev
	}
}
