package deltacomp

import (
	"crypto/subtle"
	"slices"

	"github.com/tickwire/tickwire/internal/idset"
	"github.com/tickwire/tickwire/proto"
)

// DefaultRingSize is the number of revisions a Ring keeps by default: a
// little over one second at 60 Hz.
const DefaultRingSize = 64

// RingConfig configures a Ring. The zero value is the default.
type RingConfig struct {
	// Size is how many revisions (snapshots) the ring keeps, 2–4096.
	// Baselines older than that are gone: an entity whose baseline fell out
	// is sent in full. Default DefaultRingSize.
	Size int
	// Predictor, when set, makes the ring's encoders write codec 5
	// (proto.CodecPredictedXORRLE): an entity's patch may be against its
	// record extrapolated from its two newest baselines. Its record size
	// must be the snapshots', and the clients' Replicas need the same
	// predictor (ReplicaConfig.Predictor). Default none: codec 4.
	Predictor *Predictor
}

// Ring holds the server's latest networked state and, for each of the last
// Size revisions, the patch from that revision to the latest (latest XOR
// old), kept up to date as it goes: each Push XORs the tick's changes into
// every older patch, so a client's patch against any baseline in the
// window is read, not computed. Patches are aligned with the latest
// snapshot's entities; when the entity set changes they are realigned.
//
// Revisions number the pushes, starting at 1 (0 means "none"); a revision
// is the server's state revision (one a tick). A Ring is shared by every
// client's Encoder: push, then encode. Encoders of different clients may
// run concurrently between pushes; they share the run-length code of each
// patch they write (encoded once per entity, baseline and push).
type Ring struct {
	size    int
	pred    *Predictor
	rev     uint32
	layouts idset.History // the entity sets' changes
	latest  Snapshot
	changed []uint64
	slots   []patchSlot // slot of revision r is r % size
	delta   []byte
	spareX  []byte
	spareP  []uint64
	full    patchCodes // codes of the latest records, for entities sent in full
}

type patchSlot struct {
	rev     uint32 // 0: empty
	xor     []byte // latest XOR snapshot(rev), aligned to latest
	present []uint64
	codes   patchCodes // codes of xor's patches for the latest revision
	// pcodes holds the codes of the patches against a prediction from
	// this revision and an older one (keyed by the step between them),
	// with a predictor.
	pcodes patchCodes
}

// NewRing returns an empty ring.
func NewRing(cfg RingConfig) *Ring {
	n := cfg.Size
	if n == 0 {
		n = DefaultRingSize
	}
	n = min(max(n, 2), 4096)
	return &Ring{size: n, pred: cfg.Predictor, slots: make([]patchSlot, n)}
}

// Codec is the codec of the delta frames the ring's encoders write:
// proto.CodecPredictedXORRLE with a predictor, else proto.CodecXORRLE.
func (r *Ring) Codec() proto.Codec {
	if r.pred != nil {
		return proto.CodecPredictedXORRLE
	}
	return proto.CodecXORRLE
}

// Size is the number of revisions the ring keeps.
func (r *Ring) Size() int { return r.size }

// Revision is the latest revision (0 before the first Push).
func (r *Ring) Revision() uint32 { return r.rev }

// Latest is the latest snapshot. It is owned by the ring and valid until
// the next Push.
func (r *Ring) Latest() *Snapshot { return &r.latest }

// Layout changes whenever the latest snapshot's entity set differs from
// the previous one; per-client state indexed like Latest realigns then.
func (r *Ring) Layout() uint64 { return r.layouts.Layout() }

// Changed is a bitset over Latest's entities: bit i is set when entity i
// changed in the last Push or did not exist before it. Owned by the ring.
func (r *Ring) Changed() []uint64 { return r.changed }

// Holds reports whether rev is within the ring's window.
func (r *Ring) Holds(rev uint32) bool {
	return rev != 0 && rev <= r.rev && r.slots[rev%uint32(r.size)].rev == rev
}

// Patch returns entity i's record in Latest XOR its record at revision
// rev, aliasing the ring. ok is false when rev is outside the window or
// the entity did not exist at rev.
func (r *Ring) Patch(rev uint32, i int) (patch []byte, ok bool) {
	return r.slotOf(rev).patch(r, i)
}

// slotOf returns the slot holding revision rev, or nil when rev is
// outside the window. (The ring's size need not be a power of two: the
// slot costs a division, which an encoder does once per packet for its
// default baseline rather than per entity.)
func (r *Ring) slotOf(rev uint32) *patchSlot {
	if !r.Holds(rev) {
		return nil
	}
	return &r.slots[rev%uint32(r.size)]
}

// patch is Patch for the revision of slot s (nil: none).
func (s *patchSlot) patch(r *Ring, i int) (patch []byte, ok bool) {
	if s == nil || !idset.Bit(s.present, i) {
		return nil, false
	}
	rs := r.latest.RecordSize
	return s.xor[i*rs : (i+1)*rs : (i+1)*rs], true
}

// code returns the run-length code of entity i's patch p against the
// revision of slot s (as its patch returned it), or of its latest record
// when s is nil, and whether it is all zero: the copy the encoders share
// (valid until the next Push), or one encoded into own, which it returns
// grown (patchCodes.code), and where the code came from.
func (r *Ring) code(s *patchSlot, i int, p, own []byte) (code []byte, zero bool, ownOut []byte, src codeSource) {
	if s == nil {
		return r.full.code(r.rev, i, r.latest.Record(i), own)
	}
	return s.codes.code(r.rev, i, p, own)
}

// predictedCode returns the run-length code of entity i's latest record
// XOR its prediction (Predictor.Predict) from its records at revisions
// base and base − step, both within the window: the copy the encoders
// share, or one encoded into own, which it returns grown, and where the
// code came from. sc is scratch for the records. The caller checks that
// both revisions hold the entity and that base and step are at most
// MaxPredictAge behind.
func (r *Ring) predictedCode(base, step uint32, i int, sc *predictScratch, own []byte) (code []byte, ownOut []byte, src codeSource) {
	c := &r.slots[base%uint32(r.size)].pcodes
	code, _, found, claimed := c.lookup(r.rev, step, i)
	if found {
		return code, own, codeShared
	}
	rs := r.latest.RecordSize
	latest := r.latest.Record(i)
	b, _ := r.Patch(base, i)
	p, _ := r.Patch(base-step, i)
	sc.resize(rs)
	subtle.XORBytes(sc.base, latest, b)
	subtle.XORBytes(sc.prev, latest, p)
	r.pred.Predict(sc.patch, sc.base, sc.prev, r.rev-base, step)
	subtle.XORBytes(sc.patch, sc.patch, latest)
	if claimed {
		code, _ = c.publish(r.rev, step, i, sc.patch)
		return code, own, codeEncoded
	}
	code, _, own = encodeOwn(sc.patch, own)
	return code, own, codePrivate
}

// predictScratch holds the records a prediction is computed from.
type predictScratch struct {
	base, prev, patch []byte
}

func (sc *predictScratch) resize(rs int) {
	if len(sc.base) != rs {
		sc.base, sc.prev, sc.patch = make([]byte, rs), make([]byte, rs), make([]byte, rs)
	}
}

// Index returns the index of id in Latest, or -1.
func (r *Ring) Index(id proto.NetworkID) int {
	i, ok := slices.BinarySearch(r.latest.IDs, id)
	if !ok {
		return -1
	}
	return i
}

// Check verifies that s is well formed: a record size of 1–MaxRecordSize
// bytes, records for every id, ids non-zero and strictly ascending.
func (s *Snapshot) Check() error {
	if s.RecordSize <= 0 || s.RecordSize > MaxRecordSize || len(s.Records) != len(s.IDs)*s.RecordSize {
		return ErrRecordSize
	}
	var prev proto.NetworkID
	for _, id := range s.IDs {
		if id <= prev {
			return ErrUnsorted
		}
		prev = id
	}
	return nil
}

// Push makes s the latest state with the next revision and returns that
// revision. s is copied; its record size must not change between pushes.
func (r *Ring) Push(s *Snapshot) (uint32, error) {
	if err := s.Check(); err != nil {
		return 0, err
	}
	if r.rev != 0 && s.RecordSize != r.latest.RecordSize || r.pred != nil && s.RecordSize != r.pred.RecordSize() {
		return 0, ErrRecordSize
	}
	rs := s.RecordSize
	n := s.Len()
	rev := r.rev + 1
	if rev == 0 { // wrapped after 2^32 pushes; 0 means none
		rev = 1
	}
	// The slot rev reuses holds rev-size: it leaves the window.
	newSlot := &r.slots[rev%uint32(r.size)]
	newSlot.rev = 0
	r.changed = idset.ResizeBits(r.changed, n)
	switch {
	case r.rev == 0:
		r.layouts.Next(nil, s.IDs)
		for i := 0; i < n; i++ {
			idset.SetBit(r.changed, i)
		}
	case slices.Equal(s.IDs, r.latest.IDs):
		r.delta = resizeBytes(r.delta, len(s.Records))
		subtle.XORBytes(r.delta, s.Records, r.latest.Records)
		for i := 0; i < n; i++ {
			if !allZero(r.delta[i*rs : (i+1)*rs]) {
				idset.SetBit(r.changed, i)
			}
		}
		for k := range r.slots {
			if sl := &r.slots[k]; sl.rev != 0 {
				subtle.XORBytes(sl.xor, sl.xor, r.delta)
			}
		}
	default:
		r.realign(s, r.layouts.Next(r.latest.IDs, s.IDs))
	}
	r.latest.Tick = s.Tick
	r.latest.RecordSize = rs
	r.latest.IDs = append(r.latest.IDs[:0], s.IDs...)
	r.latest.Records = append(r.latest.Records[:0], s.Records...)
	for k := range r.slots {
		r.slots[k].codes.resize(n, rs)
		if r.pred != nil {
			r.slots[k].pcodes.resize(n, rs)
		}
	}
	r.full.resize(n, rs)
	newSlot.rev = rev
	newSlot.xor = resizeBytes(newSlot.xor, len(s.Records))
	clear(newSlot.xor)
	newSlot.present = idset.ResizeBits(newSlot.present, n)
	for i := range newSlot.present {
		newSlot.present[i] = ^uint64(0)
	}
	r.rev = rev
	return rev, nil
}

// realign rebuilds every patch for s's entity set through m, the remap
// from latest's set to s's (before latest is replaced by s).
// Entities kept in order form runs, so each patch is rebuilt with one
// XOR per run rather than per entity.
func (r *Ring) realign(s *Snapshot, m *idset.Remap) {
	rs := s.RecordSize
	n := s.Len()
	old := &r.latest
	// delta = new XOR old for kept entities; new entities are changed.
	r.delta = resizeBytes(r.delta, n*rs)
	kept := idset.ResizeBits(r.spareP, n)
	for _, ru := range m.Runs {
		ns, os, k := int(ru.New)*rs, int(ru.Old)*rs, int(ru.N)*rs
		subtle.XORBytes(r.delta[ns:ns+k], s.Records[ns:ns+k], old.Records[os:os+k])
		for i := ru.New; i < ru.New+ru.N; i++ {
			idset.SetBit(kept, int(i))
			if !allZero(r.delta[int(i)*rs : int(i+1)*rs]) {
				idset.SetBit(r.changed, int(i))
			}
		}
	}
	for i := 0; i < n; i++ {
		if !idset.Bit(kept, i) {
			idset.SetBit(r.changed, i)
		}
	}
	r.spareP = kept
	for k := range r.slots {
		sl := &r.slots[k]
		if sl.rev == 0 {
			continue
		}
		x := resizeBytes(r.spareX, n*rs)
		p := idset.ResizeBits(r.spareP, n)
		for _, ru := range m.Runs {
			// new patch = (new XOR old) XOR (old XOR snap(rev))
			ns, os, k := int(ru.New)*rs, int(ru.Old)*rs, int(ru.N)*rs
			subtle.XORBytes(x[ns:ns+k], r.delta[ns:ns+k], sl.xor[os:os+k])
			idset.OrBits(p, int(ru.New), sl.present, int(ru.Old), int(ru.N))
		}
		r.spareX, sl.xor = sl.xor, x
		r.spareP, sl.present = sl.present, p
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
