// Package deltacomp encodes world state compactly: snapshots as sorted
// (NetworkID, fixed-size record) arrays, a ring of recent snapshots, XOR
// patches against the baseline each client acknowledged, run-length coding
// of those patches, and lz4 / zstd / s2 codecs for full snapshots.
//
// It decides how entities are encoded, not which ones a client sees
// (package interest does, through the interest.Sizer the Encoder
// implements). It imports only proto and internal/idset (the per-client
// bookkeeping it shares with interest), does no I/O and reads no clock.
//
// Where it sits in a server tick (see DESIGN.md):
//
//	ring.Push(&snap)                     // once per tick: new revision, patches updated
//	for each client:
//	    enc.Prepare()                     // align with the ring, pick the default baseline
//	    sel, ok := sched.Schedule(seq, now, world, budget, enc)
//	    b, err = enc.AppendFrame(b, seq, sel)  // a proto.SnapshotDeltaFrame, codec 4 (5)
//	reliability: Delivered(seq) / Lost(seq) → enc and sched
//
// and on the client:
//
//	err := replica.Apply(&deltaFrame)      // ErrBaselineMissing → resync request
//	err := replica.ApplyFull(&fullFrame, &codecs)
//	state := replica.State()
//
// The wire layout of codec 4 is in docs/PROTOCOL.md, "XOR+RLE entity
// patches (codec 4)". Records should be laid out with Schema so that small
// changes give patches that are mostly zero with the non-zero bytes first;
// the quantisation helpers (QuantizeFixed, QuantizeRange, Bias,
// QuantizeQuat) produce the integers a schema packs.
//
// A game whose entities move on a course can give the Ring and its
// clients' Replicas a Predictor of its schema: the encoders then write
// codec 5 ("Predicted XOR+RLE (codec 5)" in docs/PROTOCOL.md), whose
// patches may be against the entity's record extrapolated, in integer
// arithmetic both ends compute alike, from two records the client
// acknowledged.
//
// Hot paths (Push, Prepare/BodySize/LinkSize/AppendFrame,
// Delivered/Lost, Apply) allocate nothing once their buffers have grown
// to the working size; tests assert it with testing.AllocsPerRun.
package deltacomp
