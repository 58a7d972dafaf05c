package lobby

import (
	"fmt"
	"net/http"
)

// Error is a request the lobby refused. It is what the JSON API answers
// (with an HTTP status chosen by Code) and what a WebSocket receives as an
// "error" message. A refused request changes nothing.
type Error struct {
	Code    string `json:"code"`  // one of the Code constants
	Message string `json:"error"` // for people
	// RetryAfter is, for CodeRateLimited, how many seconds to wait before
	// trying again (the API also sends it as the Retry-After header).
	RetryAfter int `json:"retryAfter,omitempty"`
}

func (e *Error) Error() string { return "lobby: " + e.Message }

// Is makes errors.Is(err, &Error{Code: CodeRoomFull}) match on Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Error codes.
const (
	CodeUnknownType     = "unknown_type"      // no such game type
	CodeUnknownRoom     = "unknown_room"      // no such open room
	CodeUnknownGame     = "unknown_game"      // no game this lobby assigned (GET /api/play/{game}/players)
	CodeUnknownSeat     = "unknown_seat"      // the seat left, expired or never was
	CodeRoomFull        = "room_full"         // the room has its max players
	CodeNameTaken       = "name_taken"        // another player in the room has the name
	CodeBadName         = "bad_name"          // empty, too long or unprintable name
	CodeTooManyRooms    = "too_many_rooms"    // the type has MaxRoomsPerType open rooms
	CodeNotJoined       = "not_joined"        // ready/chat/leave for a room the player is not in
	CodeAlreadyJoined   = "already_joined"    // create/join while in a room
	CodeMessageTooLarge = "message_too_large" // message or body over MaxMessageBytes
	CodeBadJSON         = "bad_json"          // malformed JSON
	CodeBadRequest      = "bad_request"       // a field out of range, an unknown op
	CodeNoServer        = "no_server"         // server-hosted, but no game server runs the type
	CodeAssignFailed    = "assign_failed"     // minting tokens failed
	CodeClosed          = "closed"            // the lobby is shutting down
	CodeBusy            = "busy"              // the lobby has MaxSockets sockets open
	CodeRateLimited     = "rate_limited"      // too many creates, joins or chat lines from the address; see RetryAfter
	CodeAddrLimit       = "address_limit"     // the address has MaxRoomsPerAddr rooms or MaxSocketsPerAddr sockets
	CodeCrossOrigin     = "cross_origin"      // a browser request from another site's page
)

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// httpStatus maps an error code to the JSON API's HTTP status.
func httpStatus(code string) int {
	switch code {
	case CodeUnknownType, CodeUnknownRoom, CodeUnknownGame:
		return http.StatusNotFound
	case CodeUnknownSeat:
		return http.StatusGone
	case CodeRoomFull, CodeNameTaken, CodeTooManyRooms, CodeNotJoined, CodeAlreadyJoined:
		return http.StatusConflict
	case CodeMessageTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeRateLimited, CodeAddrLimit:
		return http.StatusTooManyRequests
	case CodeCrossOrigin:
		return http.StatusForbidden
	case CodeNoServer, CodeClosed, CodeBusy:
		return http.StatusServiceUnavailable
	case CodeAssignFailed:
		return http.StatusInternalServerError
	default:
		return http.StatusBadRequest
	}
}
