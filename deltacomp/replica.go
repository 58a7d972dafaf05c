package deltacomp

import (
	"slices"

	"github.com/tickwire/tickwire/proto"
)

// ReplicaConfig configures a Replica.
type ReplicaConfig struct {
	// RecordSize is the game's record size in bytes (required).
	RecordSize int
	// History is how many revisions of received records the replica keeps
	// as baselines. It must exceed the server Ring's Size by how many
	// revisions a frame may arrive late: a frame's baselines may be up to
	// Size−1 revisions older than the frame, and by the time a delayed
	// or reordered frame arrives the replica may have applied newer ones
	// (whose slots would otherwise have evicted those baselines). Default
	// DefaultReplicaHistory.
	History int
	// Predictor decodes codec-5 frames: it must be the server's
	// (RingConfig.Predictor), and its record size RecordSize. Without
	// it the replica takes codec-4 frames only.
	Predictor *Predictor
}

// DefaultReplicaHistory is twice DefaultRingSize: a frame may arrive up to
// DefaultRingSize revisions (about 1 s at 60 Hz) after newer ones and still
// find its baselines.
const DefaultReplicaHistory = 2 * DefaultRingSize

// Replica is the client's side of delta replication: it applies delta
// frames (codec 4, and codec 5 with a predictor) and full snapshots and
// holds the reconstructed state.
//
// Every entity's value is the one from the newest revision that carried
// it, whatever order packets arrive in (a removal is remembered for the
// history window so a late older packet cannot bring the entity back). The
// records each frame carried are kept for History revisions, because the
// server may use any frame the client acknowledged as a baseline.
//
// A frame whose baseline the replica does not hold fails with
// ErrBaselineMissing and changes nothing: send a proto.ResyncRequestFrame
// (ResyncRequest builds one) and apply the full snapshot the server
// answers with. Not safe for concurrent use.
type Replica struct {
	rs, hn     int
	pred       *Predictor
	live       Snapshot
	revs       []uint32 // per live entity: revision its value came from
	tombs      []tomb   // ascending ids of removed entities
	newest     uint32
	newestTick uint32
	hist       []histSlot

	dIDs  []proto.NetworkID // decoded entries of the frame being applied
	dKind []uint8
	dRecs []byte
	ins   []int32
	mIDs  []proto.NetworkID
	mRevs []uint32
	mRecs []byte
	full  Snapshot
	// carried are the ids of the entities the last applied delta frame
	// carried (not its removals), ascending.
	carried []proto.NetworkID
}

type tomb struct {
	id  proto.NetworkID
	rev uint32
}

type histSlot struct {
	rev  uint32
	ids  []proto.NetworkID
	recs []byte
}

// NewReplica returns an empty replica.
func NewReplica(cfg ReplicaConfig) (*Replica, error) {
	if cfg.RecordSize <= 0 || cfg.RecordSize > MaxRecordSize || cfg.Predictor != nil && cfg.Predictor.RecordSize() != cfg.RecordSize {
		return nil, ErrRecordSize
	}
	h := cfg.History
	if h <= 0 {
		h = DefaultReplicaHistory
	}
	r := &Replica{rs: cfg.RecordSize, hn: h, pred: cfg.Predictor, hist: make([]histSlot, h)}
	r.live.RecordSize = cfg.RecordSize
	return r, nil
}

// State is the reconstructed state: every entity received and not removed,
// ascending by id, with Tick the newest tick applied. It is owned by the
// replica and changes with every Apply.
func (r *Replica) State() *Snapshot { return &r.live }

// Revision is the newest revision applied (0 none).
func (r *Replica) Revision() uint32 { return r.newest }

// EntityRevision returns the revision entity i of State got its value
// from: the newest frame that carried it, with a new value or an all-zero
// patch (the Encoder's confirmation, ConfirmSize). Its record is the
// server's at that revision; at the newest one only if the two are equal.
func (r *Replica) EntityRevision(i int) uint32 { return r.revs[i] }

// ResyncRequest returns the frame asking the server for a full snapshot.
func (r *Replica) ResyncRequest(reason proto.ResyncReason) proto.ResyncRequestFrame {
	return proto.ResyncRequestFrame{Reason: reason, Tick: r.newestTick, Revision: r.newest}
}

// Reset forgets all state and history.
func (r *Replica) Reset() {
	r.live.Reset(0, r.rs)
	r.revs = r.revs[:0]
	r.tombs = r.tombs[:0]
	r.newest, r.newestTick = 0, 0
	for i := range r.hist {
		r.hist[i].rev = 0
	}
}

func (r *Replica) baseline(rev uint32, id proto.NetworkID) ([]byte, bool) {
	s := &r.hist[rev%uint32(r.hn)]
	if s.rev != rev {
		return nil, false
	}
	i, ok := slices.BinarySearch(s.ids, id)
	if !ok {
		return nil, false
	}
	return s.recs[i*r.rs : (i+1)*r.rs], true
}

var (
	errDeltaCodec   = malformed("delta frame codec")
	errDeltaRev     = malformed("delta frame revisions")
	errDeltaTrunc   = truncated("delta entry")
	errDeltaEntry   = malformed("delta entry")
	errDeltaBase    = malformed("delta entry baseline before frame base revision")
	errDeltaTrail   = malformed("delta frame: data after last entry")
	errDeltaDefault = malformed("delta entry: no default baseline")
	errDeltaPredict = malformed("delta entry: prediction span")
)

// Apply decodes a snapshot delta frame (codec 4, or 5 when the replica
// has a predictor) and applies it. On error nothing changes:
// ErrBaselineMissing asks for a resync, ErrStale is a frame too old to
// matter, a *FormatError is garbage.
func (r *Replica) Apply(f *proto.SnapshotDeltaFrame) error {
	if f.Codec != proto.CodecXORRLE && (f.Codec != proto.CodecPredictedXORRLE || r.pred == nil) {
		return errDeltaCodec
	}
	rev := f.Revision
	if rev == 0 || f.BaseRevision > rev {
		return errDeltaRev
	}
	if r.newest != 0 && uint64(rev)+uint64(r.hn) <= uint64(r.newest) {
		return ErrStale
	}
	if err := r.decode(f); err != nil {
		return err
	}
	r.commit(rev, f.Tick)
	r.carried = r.carried[:0]
	for k, id := range r.dIDs {
		if r.dKind[k] != kindRemoved {
			r.carried = append(r.carried, id)
		}
	}
	return nil
}

// Carried returns the ids, ascending, of the entities the last delta
// frame applied carried (its removals left out): what the server's
// checksum of that frame covers. Other frames of the same revision (a
// second delta written in a server tick that ran no step, a full
// snapshot) are not in it, although their entities share its revision.
// The slice is valid until the next Apply.
func (r *Replica) Carried() []proto.NetworkID { return r.carried }

func (r *Replica) decode(f *proto.SnapshotDeltaFrame) (err error) {
	rs, rev := r.rs, f.Revision
	data := f.Data
	age, n := parseVarint(data)
	if n <= 0 {
		return errDeltaTrunc
	}
	data = data[n:]
	if age > uint64(rev) {
		return errDeltaEntry
	}
	defRev := rev - uint32(age)
	// Every entry takes at least one byte: bound what a lying count can
	// make the replica reserve.
	if int(f.Count) > len(data) {
		return errDeltaTrunc
	}
	r.dIDs, r.dKind = r.dIDs[:0], r.dKind[:0]
	r.dRecs = resizeBytes(r.dRecs, int(f.Count)*rs)
	var prev uint64
	for k := 0; k < int(f.Count); k++ {
		h, n := parseVarint(data)
		if n <= 0 {
			if n == 0 {
				return errDeltaTrunc
			}
			return errDeltaEntry
		}
		data = data[n:]
		gap, kind, ok := parseEntryHeader(f.Codec, h)
		if !ok {
			return errDeltaEntry
		}
		id := prev + gap + 1
		if id > 0xffffffff {
			return errDeltaEntry
		}
		prev = id
		rec := r.dRecs[k*rs : (k+1)*rs]
		var baseRev, step uint32
		switch kind {
		case kindRemoved, kindFull:
			clear(rec)
		case kindDefault, kindPredicted:
			if age == 0 {
				return errDeltaDefault
			}
			baseRev, step = defRev, 1
		case kindExplicit, kindPredictedExplicit:
			var a uint64
			if a, data, err = parseSpan(data); err != nil {
				return err
			}
			if a > uint64(rev) {
				return errDeltaEntry
			}
			baseRev = rev - uint32(a)
			if kind == kindPredictedExplicit {
				var s uint64
				if s, data, err = parseSpan(data); err != nil {
					return err
				}
				if s >= uint64(baseRev) {
					return errDeltaEntry
				}
				step = uint32(s)
			}
		}
		if kind != kindRemoved && kind != kindFull {
			if err := r.reconstruct(rec, f, kind, proto.NetworkID(id), baseRev, step); err != nil {
				return err
			}
		}
		if kind != kindRemoved {
			n, err := ApplyPatch(rec, data)
			if err != nil {
				return err
			}
			data = data[n:]
		}
		r.dIDs = append(r.dIDs, proto.NetworkID(id))
		r.dKind = append(r.dKind, kind)
	}
	if len(data) != 0 {
		return errDeltaTrail
	}
	return nil
}

// parseSpan reads an entry's age or step: a varint of at least 1.
func parseSpan(data []byte) (v uint64, rest []byte, err error) {
	v, n := parseVarint(data)
	switch {
	case n == 0:
		return 0, data, errDeltaTrunc
	case n < 0 || v == 0:
		return 0, data, errDeltaEntry
	}
	return v, data[n:], nil
}

// reconstruct writes into rec what entity id's patch of a kind other than
// full and removed applies to: its record at baseRev, or with a predicted
// kind the prediction from its records at baseRev and baseRev − step.
func (r *Replica) reconstruct(rec []byte, f *proto.SnapshotDeltaFrame, kind uint8, id proto.NetworkID, baseRev, step uint32) error {
	oldest := baseRev
	if predicted(kind) {
		oldest -= step
		if f.Revision-baseRev > MaxPredictAge || step > MaxPredictAge {
			return errDeltaPredict
		}
	}
	if oldest < f.BaseRevision || oldest == 0 {
		return errDeltaBase
	}
	base, ok := r.baseline(baseRev, id)
	if !ok {
		return ErrBaselineMissing
	}
	if !predicted(kind) {
		copy(rec, base)
		return nil
	}
	prev, ok := r.baseline(oldest, id)
	if !ok {
		return ErrBaselineMissing
	}
	r.pred.Predict(rec, base, prev, f.Revision-baseRev, step)
	return nil
}

// commit applies the decoded entries (dIDs, dKind, dRecs) of revision rev.
func (r *Replica) commit(rev, tick uint32) {
	r.storeHistory(rev)
	rs := r.rs
	r.ins = r.ins[:0]
	dels := 0
	lo := 0
	for k, id := range r.dIDs {
		rec := r.dRecs[k*rs : (k+1)*rs]
		i, found := slices.BinarySearch(r.live.IDs[lo:], id)
		i += lo
		lo = i
		if r.dKind[k] == kindRemoved {
			if found {
				if r.revs[i] != 0 && r.revs[i] < rev {
					r.revs[i] = 0 // deleted below
					dels++
					r.setTomb(id, rev)
				}
			} else {
				r.setTomb(id, rev)
			}
			continue
		}
		if found {
			if r.revs[i] < rev && r.revs[i] != 0 {
				copy(r.live.Record(i), rec)
				r.revs[i] = rev
			}
			continue
		}
		if t, ok := r.findTomb(id); ok {
			if r.tombs[t].rev >= rev {
				continue
			}
			r.tombs = slices.Delete(r.tombs, t, t+1)
		}
		r.ins = append(r.ins, int32(k))
	}
	if len(r.ins) > 0 || dels > 0 {
		r.rebuild(rev)
	}
	if rev > r.newest || r.newest == 0 {
		r.newest, r.newestTick = rev, tick
		r.live.Tick = tick
	}
	if len(r.tombs) > 0 {
		t := r.tombs[:0]
		for _, x := range r.tombs {
			if uint64(x.rev)+uint64(r.hn) > uint64(r.newest) {
				t = append(t, x)
			}
		}
		r.tombs = t
	}
}

// rebuild merges live entities (dropping those marked with revision 0)
// with the inserted entries.
func (r *Replica) rebuild(rev uint32) {
	rs := r.rs
	ids, revs, recs := r.mIDs[:0], r.mRevs[:0], r.mRecs[:0]
	j := 0
	for i, id := range r.live.IDs {
		for j < len(r.ins) && r.dIDs[r.ins[j]] < id {
			k := int(r.ins[j])
			ids, revs = append(ids, r.dIDs[k]), append(revs, rev)
			recs = append(recs, r.dRecs[k*rs:(k+1)*rs]...)
			j++
		}
		if r.revs[i] == 0 {
			continue
		}
		ids, revs = append(ids, id), append(revs, r.revs[i])
		recs = append(recs, r.live.Record(i)...)
	}
	for ; j < len(r.ins); j++ {
		k := int(r.ins[j])
		ids, revs = append(ids, r.dIDs[k]), append(revs, rev)
		recs = append(recs, r.dRecs[k*rs:(k+1)*rs]...)
	}
	r.mIDs, r.live.IDs = r.live.IDs, ids
	r.mRevs, r.revs = r.revs, revs
	r.mRecs, r.live.Records = r.live.Records, recs
}

func (r *Replica) findTomb(id proto.NetworkID) (int, bool) {
	return slices.BinarySearchFunc(r.tombs, id, func(t tomb, id proto.NetworkID) int {
		switch {
		case t.id < id:
			return -1
		case t.id > id:
			return 1
		}
		return 0
	})
}

func (r *Replica) setTomb(id proto.NetworkID, rev uint32) {
	t, ok := r.findTomb(id)
	if ok {
		r.tombs[t].rev = max(r.tombs[t].rev, rev)
		return
	}
	r.tombs = slices.Insert(r.tombs, t, tomb{id, rev})
}

// storeHistory keeps the decoded records of revision rev (not removals) as
// baselines.
func (r *Replica) storeHistory(rev uint32) {
	rs := r.rs
	s := &r.hist[rev%uint32(r.hn)]
	if s.rev > rev {
		return // a newer revision holds the slot: rev is outside the window
	}
	if s.rev != rev {
		s.rev = rev
		s.ids, s.recs = s.ids[:0], s.recs[:0]
	}
	if len(s.ids) == 0 {
		for k, id := range r.dIDs {
			if r.dKind[k] != kindRemoved {
				s.ids = append(s.ids, id)
				s.recs = append(s.recs, r.dRecs[k*rs:(k+1)*rs]...)
			}
		}
		return
	}
	// A second frame of the same revision (several packets in one tick, or
	// a duplicate): merge, the new value wins.
	ids, recs := r.mIDs[:0], r.mRecs[:0]
	i := 0
	for k, id := range r.dIDs {
		if r.dKind[k] == kindRemoved {
			continue
		}
		for i < len(s.ids) && s.ids[i] < id {
			ids = append(ids, s.ids[i])
			recs = append(recs, s.recs[i*rs:(i+1)*rs]...)
			i++
		}
		if i < len(s.ids) && s.ids[i] == id {
			i++
		}
		ids = append(ids, id)
		recs = append(recs, r.dRecs[k*rs:(k+1)*rs]...)
	}
	for ; i < len(s.ids); i++ {
		ids = append(ids, s.ids[i])
		recs = append(recs, s.recs[i*rs:(i+1)*rs]...)
	}
	r.mIDs, s.ids = s.ids, ids
	r.mRecs, s.recs = s.recs, recs
}

// ApplyFull applies a full snapshot frame (join, resync, host migration):
// the entities it holds take its values unless the replica already has a
// newer one, entities it lacks are removed unless updated after it, and its
// records become baselines for revision f.Revision.
func (r *Replica) ApplyFull(f *proto.FullSnapshotFrame, c *Codecs) error {
	if f.Revision == 0 {
		return errDeltaRev
	}
	if err := c.DecodeFullSnapshot(&r.full, f); err != nil {
		return err
	}
	if r.full.RecordSize != r.rs {
		return ErrRecordSize
	}
	if err := r.full.Check(); err != nil && r.full.Len() > 0 {
		return errFullIDs
	}
	rev := f.Revision
	// The snapshot's entities, plus removals at rev of the entities it
	// lacks that the replica has not heard of since, in id order.
	rs, full := r.rs, &r.full
	ids, kinds, recs := r.dIDs[:0], r.dKind[:0], r.dRecs[:0]
	add := func(id proto.NetworkID, kind uint8, rec []byte) {
		ids, kinds = append(ids, id), append(kinds, kind)
		if rec == nil {
			recs = append(recs, make([]byte, rs)...)
		} else {
			recs = append(recs, rec...)
		}
	}
	j := 0
	for i, id := range r.live.IDs {
		for j < full.Len() && full.IDs[j] < id {
			add(full.IDs[j], kindFull, full.Record(j))
			j++
		}
		if j < full.Len() && full.IDs[j] == id {
			add(full.IDs[j], kindFull, full.Record(j))
			j++
			continue
		}
		if r.revs[i] < rev {
			add(id, kindRemoved, nil)
		}
	}
	for ; j < full.Len(); j++ {
		add(full.IDs[j], kindFull, full.Record(j))
	}
	r.dIDs, r.dKind, r.dRecs = ids, kinds, recs
	r.commit(rev, f.Tick)
	return nil
}
