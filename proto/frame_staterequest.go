package proto

// The commits relay (docs/COMMITS.md, "The relay") runs no game: the
// committed states it hands joining and resynchronised clients come from
// the clients. Four frames carry them, all on the reliable channel:
//
//   - StateRequestFrame, relay to client: the digest of your committed
//     state at a tick, and with Upload its bytes;
//   - StateSumFrame, client to relay: that digest (SHA-256 of the state's
//     bytes), and the size of the upload that follows, if any;
//   - StateChunkFrame, both ways: a piece of a state's bytes (an upload,
//     or a verified state sent on to a client);
//   - StateBeginFrame, relay to client: the head of a verified state, whose
//     bytes follow in chunks.

// MaxStateSize bounds a committed state on the wire, before and after
// compression: the hard limit of the relay's configurable bound.
const MaxStateSize = MaxSnapshotSize

// MaxStateChunk bounds one StateChunkFrame's data (a reliable message
// well under the reliable channel's message size).
const MaxStateChunk = 16 << 10

// StateSumSize is the size of a state digest (SHA-256).
const StateSumSize = 32

// stateUpload is StateRequestFrame's flag bit for Upload.
const stateUpload = 0x01

// StateRequestFrame asks a client for the digest of its committed state
// after Tick, and with Upload for the state's bytes too. ID names the
// request: the answers carry it.
type StateRequestFrame struct {
	ID     uint32
	Tick   uint32
	Upload bool
}

const stateRequestFrameSize = 1 + 4 + 4 + 1

func (f *StateRequestFrame) Len() int { return stateRequestFrameSize }

var (
	errSrqTrunc = truncated("state request frame", "")
	errSrqType  = malformed("state request frame", "type")
	errSrqFlags = malformed("state request frame", "flags")
)

func (f *StateRequestFrame) Append(b []byte) ([]byte, error) {
	var flags byte
	if f.Upload {
		flags |= stateUpload
	}
	b = append(b, byte(FrameStateRequest))
	b = le.AppendUint32(b, f.ID)
	b = le.AppendUint32(b, f.Tick)
	return append(b, flags), nil
}

func ParseStateRequestFrame(b []byte) (StateRequestFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameStateRequest) {
		return StateRequestFrame{}, 0, errSrqType
	}
	f := StateRequestFrame{ID: r.u32(), Tick: r.u32()}
	flags := r.u8()
	if err := r.check(errSrqTrunc, errSrqTrunc); err != nil {
		return StateRequestFrame{}, 0, err
	}
	if flags&^stateUpload != 0 {
		return StateRequestFrame{}, 0, errSrqFlags
	}
	f.Upload = flags&stateUpload != 0
	return f, r.off, nil
}
