package deltacomp

import (
	"errors"

	"github.com/tickwire/tickwire/proto"
)

var (
	// ErrBaselineMissing means a patch refers to a baseline revision the
	// replica no longer (or never) held. The client should send a
	// proto.ResyncRequestFrame with reason proto.ResyncBaselineMissing.
	ErrBaselineMissing = errors.New("deltacomp: baseline missing")
	// ErrStale means a delta frame is older than the replica's history
	// window; it carries nothing the server can still use and is ignored.
	ErrStale = errors.New("deltacomp: frame older than history window")
	// ErrRecordSize means a snapshot's record size differs from the one the
	// ring or replica was configured with.
	ErrRecordSize = errors.New("deltacomp: record size mismatch")
	// ErrUnsorted means snapshot ids are not strictly ascending or hold 0.
	ErrUnsorted = errors.New("deltacomp: ids not strictly ascending")
)

// FormatError is malformed or truncated encoded data found while decoding
// a patch, a delta frame or a full snapshot. Err is proto.ErrMalformed,
// proto.ErrTruncated or proto.ErrTooLarge, so callers that only count drops
// can use errors.Is with proto's sentinels.
type FormatError struct {
	What string // e.g. "rle patch", "delta entry"
	Err  error
}

func (e *FormatError) Error() string { return "deltacomp: " + e.What + ": " + e.Err.Error() }

func (e *FormatError) Unwrap() error { return e.Err }

// Errors are static values so that rejecting garbage allocates nothing.
func malformed(what string) *FormatError { return &FormatError{What: what, Err: proto.ErrMalformed} }
func truncated(what string) *FormatError { return &FormatError{What: what, Err: proto.ErrTruncated} }
func tooLarge(what string) *FormatError  { return &FormatError{What: what, Err: proto.ErrTooLarge} }
