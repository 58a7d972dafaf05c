package proto

// MaxStatePlayers bounds a StateBeginFrame's player list (a connection's
// players).
const MaxStatePlayers = 255

// PlayerSeq is a player's last command seq.
type PlayerSeq struct {
	Player uint16
	Seq    uint32
}

// StateBeginFrame heads a committed state the relay sends a joining or
// resynchronised client: the state after Tick, Size bytes (sim.Lockstep's
// AppendState), compressed with Codec to Packed bytes that follow in
// StateChunkFrames of the same ID. Reason is why it was sent (0 for a
// join). Received is how many of the client's commands the relay had
// received, Seqs each of the connection's players' last command seq the
// relay has (a new connection numbers on from there), as in the header
// of the commits host's FullSnapshotFrame. Size 0 (and Packed 0) says the
// game has no state yet: the client starts from its blank world at Tick,
// with no player present.
type StateBeginFrame struct {
	ID       uint32
	Reason   ResyncReason
	Tick     uint32
	Size     uint32 // ≤ MaxStateSize
	Codec    Codec
	Packed   uint32 // ≤ MaxStateSize
	Received uint32
	Seqs     []PlayerSeq // ≤ MaxStatePlayers
}

const stateBeginFixed = 1 + 4 + 1 + 4 + 4 + 1 + 4 + 4 + 1

func (f *StateBeginFrame) Len() int { return stateBeginFixed + 6*len(f.Seqs) }

var (
	errSbgTrunc   = truncated("state begin frame", "")
	errSbgType    = malformed("state begin frame", "type")
	errSbgReason  = malformed("state begin frame", "reason")
	errSbgSize    = malformed("state begin frame", "size")
	errSbgCodec   = malformed("state begin frame", "codec")
	errSbgPlayers = malformed("state begin frame", "player count")
)

func (f *StateBeginFrame) check() error {
	switch {
	case f.Reason >= resyncReasonEnd:
		return errSbgReason
	case f.Size > MaxStateSize || f.Packed > MaxStateSize || (f.Size == 0) != (f.Packed == 0):
		return errSbgSize
	case !f.Codec.Valid() || f.Codec.Patches() || f.Size == 0 && f.Codec != CodecNone:
		return errSbgCodec
	case len(f.Seqs) > MaxStatePlayers:
		return errSbgPlayers
	}
	return nil
}

func (f *StateBeginFrame) Append(b []byte) ([]byte, error) {
	if err := f.check(); err != nil {
		return b, err
	}
	b = append(b, byte(FrameStateBegin))
	b = le.AppendUint32(b, f.ID)
	b = append(b, byte(f.Reason))
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint32(b, f.Size)
	b = append(b, byte(f.Codec))
	b = le.AppendUint32(b, f.Packed)
	b = le.AppendUint32(b, f.Received)
	b = append(b, byte(len(f.Seqs)))
	for _, s := range f.Seqs {
		b = le.AppendUint16(b, s.Player)
		b = le.AppendUint32(b, s.Seq)
	}
	return b, nil
}

// ParseStateBeginFrame parses a state begin frame into f, reusing
// f.Seqs.
func ParseStateBeginFrame(b []byte, f *StateBeginFrame) (int, error) {
	return parseStateBegin(b, f, true)
}

// skipStateBeginFrame validates a state begin frame and returns its
// length, without keeping its player list.
func skipStateBeginFrame(b []byte) (int, error) {
	var f StateBeginFrame
	return parseStateBegin(b, &f, false)
}

func parseStateBegin(b []byte, f *StateBeginFrame, keep bool) (int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStateBegin) {
		return 0, errSbgType
	}
	seqs := f.Seqs[:0]
	*f = StateBeginFrame{ID: r.u32(), Reason: ResyncReason(r.u8()), Tick: r.u32(), Size: r.u32(),
		Codec: Codec(r.u8()), Packed: r.u32(), Received: r.u32()}
	n := int(r.u8())
	if err := r.check(errSbgTrunc, errSbgTrunc); err != nil {
		return 0, err
	}
	if err := f.check(); err != nil {
		return 0, err
	}
	if !r.need(6 * n) {
		return 0, errSbgTrunc
	}
	if !keep {
		return r.off + 6*n, nil
	}
	for range n {
		seqs = append(seqs, PlayerSeq{Player: r.u16(), Seq: r.u32()})
	}
	if n > 0 {
		f.Seqs = seqs
	}
	return r.off, nil
}
