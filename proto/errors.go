package proto

import "errors"

// Sentinel causes wrapped by every *ParseError. Callers that only need to
// count drops can test them with errors.Is.
var (
	// ErrTruncated means the input ended before the value did.
	ErrTruncated = errors.New("truncated")
	// ErrMalformed means a field holds a value the format does not allow.
	ErrMalformed = errors.New("malformed")
	// ErrTooLarge means an encoder was asked to write a value larger than
	// the format or the configured limits allow.
	ErrTooLarge = errors.New("too large")
)

// ParseError is a protocol violation found while decoding (or, for
// ErrTooLarge, while encoding). It names the structure and the field.
type ParseError struct {
	What  string // the packet or frame, e.g. "session header"
	Field string // the field, e.g. "ack bits"; empty for the whole value
	Err   error  // ErrTruncated, ErrMalformed or ErrTooLarge
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return "proto: " + e.What + ": " + e.Err.Error()
	}
	return "proto: " + e.What + ": " + e.Field + ": " + e.Err.Error()
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse errors are static values so that rejecting a flood of garbage
// allocates nothing.
func truncated(what, field string) *ParseError {
	return &ParseError{What: what, Field: field, Err: ErrTruncated}
}

func malformed(what, field string) *ParseError {
	return &ParseError{What: what, Field: field, Err: ErrMalformed}
}

func tooLarge(what, field string) *ParseError {
	return &ParseError{What: what, Field: field, Err: ErrTooLarge}
}
