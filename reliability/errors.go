package reliability

import "errors"

// Sentinels a caller acts on.
var (
	// ErrMessageTooLarge: a reliable message is larger than the channel's
	// MaxMessageSize.
	ErrMessageTooLarge = errors.New("reliability: message too large")
	// ErrQueueFull: sending the message would exceed the channel's
	// MaxQueuedBytes; retry after the peer acknowledged some of the queue.
	ErrQueueFull = errors.New("reliability: reliable send queue full")
	// ErrEmptyMessage: the reliable channel carries no empty messages.
	ErrEmptyMessage = errors.New("reliability: empty message")
	// ErrBadSegment is wrapped by every *SegmentError.
	ErrBadSegment = errors.New("bad KCP segment")
)

// SegmentError is a protocol violation in a reliable frame's KCP segments.
// The whole frame is rejected; nothing of it reaches KCP.
type SegmentError struct {
	Field string // "header", "command", "length", "conversation"
}

func (e *SegmentError) Error() string {
	return "reliability: " + ErrBadSegment.Error() + ": " + e.Field
}

func (e *SegmentError) Unwrap() error { return ErrBadSegment }

// Static values: rejecting garbage allocates nothing.
var (
	errSegTrunc = &SegmentError{Field: "header"}
	errSegCmd   = &SegmentError{Field: "command"}
	errSegLen   = &SegmentError{Field: "length"}
	errSegConv  = &SegmentError{Field: "conversation"}
	errSegEmpty = &SegmentError{Field: "empty frame"}
	errSegFrg   = &SegmentError{Field: "fragment count"}
)
