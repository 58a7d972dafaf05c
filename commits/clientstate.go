package commits

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/tickwire/tickwire/proto"
)

// A Client's side of the relay's state transfers (docs/COMMITS.md, "The
// relay"): it answers the relay's state requests with the SHA-256 of its
// committed state at the tick asked (the relay's committed tick when it
// asked, which the client has not passed: it stops its commit there to
// take the state's bytes) and uploads the bytes when asked to; it keeps
// the bytes of the last tick asked, so that the relay can ask it for
// that tick's upload after another client's failed. And it loads the
// states the relay sends: a head (StateBeginFrame), then the chunks.

// uploadBudget is how many reliable segments an upload may keep queued
// (some 54 KB): the client's own commands wait behind them on the
// reliable channel (with 192, an uploader's committed world fell seconds
// behind the others' during a 1 MiB upload).
const uploadBudget = 48

// uploadCodec compresses uploads.
const uploadCodec = proto.CodecZstd

type clientStates struct {
	want     stateWant
	kept     []byte // the committed state's bytes at keptTick
	keptTick uint32
	keptOK   bool
	keptSum  [proto.StateSumSize]byte
	// external: kept holds the head of the state at keptTick, waiting
	// for ClientConfig.External's bytes
	external bool
	up       []byte // the upload in progress, packed
	upID     uint32 // its request (0: none)
	upOff    int    // sent up to there
	begin    proto.StateBeginFrame
	dl       []byte // the state arriving, packed
	dlOK     bool   // begin names a state whose chunks are arriving
	seqs     []proto.PlayerSeq
}

// stateWant is a state request waiting for the committed world to reach
// its tick.
type stateWant struct {
	req     proto.StateRequestFrame
	pending bool
}

// reset forgets everything of the last connection's.
func (st *clientStates) reset() {
	st.want = stateWant{}
	st.keptOK, st.external = false, false
	st.upID, st.upOff = 0, 0
	st.dlOK = false
	st.dl = st.dl[:0]
}

// loaded: a state replaced the worlds; what was kept is of the old ones.
func (st *clientStates) loaded(cc *Client) {
	st.keptOK = false
	if st.external { // the game's bytes would be of the old worlds
		st.external = false
		cc.answerNone(&st.want.req)
	}
	if w := &st.want; w.pending && int32(w.req.Tick-cc.ls.CommittedTick()) < 0 {
		cc.answerNone(&w.req)
		w.pending = false
	}
}

// stateRequest answers the relay's request now, or when the committed
// world reaches its tick.
func (cc *Client) stateRequest(f *proto.StateRequestFrame) {
	st := &cc.relayed
	cc.stats.StateRequests++
	if cc.ignoreStates {
		return
	}
	st.want = stateWant{req: *f, pending: true}
	st.upID = 0         // a new request supersedes an upload in progress
	st.external = false // ... and a wait for the external game's bytes
	switch {
	case st.keptOK && st.keptTick == f.Tick:
		st.want.pending = false
		cc.sendState(f)
	case !cc.have || int32(f.Tick-cc.ls.CommittedTick()) < 0:
		st.want.pending = false
		cc.answerNone(f)
	case f.Tick == cc.ls.CommittedTick():
		cc.answerState()
	}
}

// answerState takes the committed state (at the tick asked) and answers
// the request.
func (cc *Client) answerState() {
	st := &cc.relayed
	st.want.pending = false
	st.kept = cc.ls.AppendState(st.kept[:0])
	st.keptTick = cc.ls.CommittedTick()
	if cc.cfg.External != nil {
		// The head (tick, players) is ours; the game's bytes come later.
		st.keptOK, st.external = false, true
		cc.externalState()
		return
	}
	st.keptSum = sha256.Sum256(st.kept)
	st.keptOK = true
	cc.sendState(&st.want.req)
}

// externalState completes the state answerState began with
// ClientConfig.External's bytes, once the game has them.
func (cc *Client) externalState() {
	st := &cc.relayed
	if !st.external {
		return
	}
	b, ok := cc.cfg.External.AppendState(st.kept, st.keptTick)
	if !ok {
		return
	}
	st.kept, st.external = b, false
	st.keptSum = sha256.Sum256(st.kept)
	st.keptOK = true
	cc.sendState(&st.want.req)
}

// sendState sends the digest of the kept state and, if asked, starts
// its upload.
func (cc *Client) sendState(req *proto.StateRequestFrame) {
	st := &cc.relayed
	f := proto.StateSumFrame{ID: req.ID, Tick: req.Tick, Size: uint32(len(st.kept)), Sum: st.keptSum}
	if req.Upload {
		src := st.kept
		if cc.corruptUpload != nil {
			src = append([]byte(nil), src...)
			cc.corruptUpload(src)
		}
		var err error
		st.up, err = cc.codecs.AppendCompress(st.up[:0], src, uploadCodec)
		if err != nil || len(st.up) > proto.MaxStateSize {
			cc.log.Warn("committed state not uploaded", "tick", req.Tick, "size", len(st.kept), "err", err)
			cc.answerNone(req)
			return
		}
		f.Codec, f.Packed = uploadCodec, uint32(len(st.up))
	}
	var err error
	cc.frame, err = f.Append(cc.frame[:0])
	if err != nil || cc.sendFrame(cc.frame) != nil {
		return
	}
	if req.Upload {
		st.upID, st.upOff = req.ID, 0
		cc.sendUpload()
	}
}

// answerNone tells the relay the client does not hold the tick asked.
func (cc *Client) answerNone(req *proto.StateRequestFrame) {
	f := proto.StateSumFrame{ID: req.ID, Tick: req.Tick}
	var err error
	cc.frame, err = f.Append(cc.frame[:0])
	if err == nil {
		cc.sendFrame(cc.frame)
	}
}

// sendUpload queues the upload's next chunks, as far as the reliable
// queue's budget allows.
func (cc *Client) sendUpload() {
	st := &cc.relayed
	for st.upID != 0 && st.upOff < len(st.up) && cc.queued() < uploadBudget {
		n := min(proto.MaxStateChunk, len(st.up)-st.upOff)
		f := proto.StateChunkFrame{ID: st.upID, Offset: uint32(st.upOff), Data: st.up[st.upOff : st.upOff+n]}
		var err error
		cc.frame, err = f.Append(cc.frame[:0])
		if err != nil || cc.sendFrame(cc.frame) != nil {
			return
		}
		st.upOff += n
		if st.upOff == len(st.up) {
			st.upID = 0
			cc.stats.StatesUploaded++
		}
	}
}

var errStateChunk = errors.New("commits: state chunk out of place")

// stateBegin starts a state from the relay (a new one replaces one
// still arriving); a new game's blank world loads at once.
func (cc *Client) stateBegin(now time.Time) error {
	st := &cc.relayed
	st.dl, st.dlOK = st.dl[:0], true
	b := &st.begin
	if b.Size != 0 {
		return nil
	}
	st.dlOK = false
	cc.raw = binary.LittleEndian.AppendUint32(cc.raw[:0], b.Tick)
	cc.raw = binary.LittleEndian.AppendUint16(cc.raw, 0)
	cc.raw = cc.blank.AppendCanonical(cc.raw)
	return cc.load(b.Reason, b.Received, b.Seqs, cc.raw, now)
}

// stateChunk adds a piece of the state arriving and loads it once whole.
func (cc *Client) stateChunk(f *proto.StateChunkFrame, now time.Time) error {
	st := &cc.relayed
	b := &st.begin
	if !st.dlOK || f.ID != b.ID {
		return nil // of a state the relay gave up
	}
	if f.Offset != uint32(len(st.dl)) || uint64(len(st.dl))+uint64(len(f.Data)) > uint64(b.Packed) {
		st.dlOK = false
		return errStateChunk
	}
	st.dl = append(st.dl, f.Data...)
	if uint32(len(st.dl)) < b.Packed {
		return nil
	}
	st.dlOK = false
	var err error
	cc.raw, err = cc.codecs.AppendDecompress(cc.raw[:0], st.dl, b.Codec, int(b.Size))
	if err != nil {
		return err
	}
	return cc.load(b.Reason, b.Received, b.Seqs, cc.raw, now)
}
