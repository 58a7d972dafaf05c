package proto

// ResyncReason says why a client asked for a full snapshot.
type ResyncReason uint8

const (
	ResyncRevisionGap     ResyncReason = 1 // a diff referred to a revision the client lacks
	ResyncPatchError      ResyncReason = 2 // a patch did not decode or apply
	ResyncChecksum        ResyncReason = 3 // the state checksum did not match
	ResyncSlowClient      ResyncReason = 4 // fell behind the command buffer (lockstep)
	ResyncBaselineMissing ResyncReason = 5 // a patch's baseline is gone from the client's history
	resyncReasonEnd       ResyncReason = 6
	// NumResyncReasons sizes arrays indexed by ResyncReason.
	NumResyncReasons = int(resyncReasonEnd)
)

var resyncNames = [...]string{
	ResyncRevisionGap:     "revision gap",
	ResyncPatchError:      "patch error",
	ResyncChecksum:        "checksum mismatch",
	ResyncSlowClient:      "slow client",
	ResyncBaselineMissing: "baseline missing",
}

func (r ResyncReason) String() string {
	if r > 0 && r < resyncReasonEnd {
		return resyncNames[r]
	}
	return "unknown"
}

// ResyncRequestFrame asks the server for a full snapshot. Tick and Revision
// are the newest confirmed state the client holds.
type ResyncRequestFrame struct {
	Reason   ResyncReason
	Tick     uint32
	Revision uint32
}

const resyncRequestFrameSize = 1 + 1 + 4 + 4

func (f *ResyncRequestFrame) Len() int { return resyncRequestFrameSize }

var (
	errRsTrunc  = truncated("resync request frame", "")
	errRsType   = malformed("resync request frame", "type")
	errRsReason = malformed("resync request frame", "reason")
)

func (f *ResyncRequestFrame) Append(b []byte) ([]byte, error) {
	if f.Reason == 0 || f.Reason >= resyncReasonEnd {
		return b, errRsReason
	}
	b = append(b, byte(FrameResyncRequest), byte(f.Reason))
	b = le.AppendUint32(b, f.Tick)
	return le.AppendUint32(b, f.Revision), nil
}

func ParseResyncRequestFrame(b []byte) (ResyncRequestFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameResyncRequest) {
		return ResyncRequestFrame{}, 0, errRsType
	}
	f := ResyncRequestFrame{Reason: ResyncReason(r.u8()), Tick: r.u32(), Revision: r.u32()}
	if err := r.check(errRsTrunc, errRsTrunc); err != nil {
		return ResyncRequestFrame{}, 0, err
	}
	if f.Reason == 0 || f.Reason >= resyncReasonEnd {
		return ResyncRequestFrame{}, 0, errRsReason
	}
	return f, r.off, nil
}
