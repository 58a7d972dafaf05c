package main

/*
#include "tickwire.h"
*/
import "C"

import (
	"errors"

	"github.com/tickwire/tickwire"
	"github.com/tickwire/tickwire/proto"
	"github.com/tickwire/tickwire/sim"
)

// result is a tw_result: TW_OK or a negative TW_ERR_* code. The values
// come from tickwire.h, the one place they are written.
type result int32

const (
	resOK              result = C.TW_OK
	resInvalidHandle   result = C.TW_ERR_INVALID_HANDLE
	resWrongKind       result = C.TW_ERR_WRONG_KIND
	resInvalidArgument result = C.TW_ERR_INVALID_ARGUMENT
	resABIVersion      result = C.TW_ERR_ABI_VERSION
	resBadToken        result = C.TW_ERR_BAD_TOKEN
	resNotConnected    result = C.TW_ERR_NOT_CONNECTED
	resMessageTooLarge result = C.TW_ERR_MESSAGE_TOO_LARGE
	resQueueFull       result = C.TW_ERR_QUEUE_FULL
	resBufferTooSmall  result = C.TW_ERR_BUFFER_TOO_SMALL
	resNoMemory        result = C.TW_ERR_NO_MEMORY
	resInternal        result = C.TW_ERR_INTERNAL
)

// The header's other constants, for the Go side.
const (
	abiVersion = C.TW_ABI_VERSION
	maxCString = 8 << 10 // the longest string argument read, NUL included

	eventNone         = C.TW_EVENT_NONE
	eventConnected    = C.TW_EVENT_CONNECTED
	eventMessage      = C.TW_EVENT_MESSAGE
	eventDisconnected = C.TW_EVENT_DISCONNECTED
	eventRejoining    = C.TW_EVENT_REJOINING
	eventRejoined     = C.TW_EVENT_REJOINED

	eventCommitsState        = C.TW_EVENT_COMMITS_STATE
	eventCommitsCommand      = C.TW_EVENT_COMMITS_COMMAND
	eventCommitsTick         = C.TW_EVENT_COMMITS_TICK
	eventCommitsStateRequest = C.TW_EVENT_COMMITS_STATE_REQUEST
	eventCommitsKicked       = C.TW_EVENT_COMMITS_KICKED
	eventCommitsDesync       = C.TW_EVENT_COMMITS_DESYNC

	flagPostmarked = C.TW_EVENT_POSTMARKED
	flagRemote     = C.TW_EVENT_REMOTE
	flagOwned      = C.TW_EVENT_OWNED
	flagResync     = C.TW_EVENT_RESYNC

	stateConnecting   = C.TW_STATE_CONNECTING
	stateConnected    = C.TW_STATE_CONNECTED
	stateDisconnected = C.TW_STATE_DISCONNECTED

	disconnectDenied           = C.TW_DISCONNECT_DENIED
	disconnectHandshakeTimeout = C.TW_DISCONNECT_HANDSHAKE_TIMEOUT
	disconnectConnectFailed    = C.TW_DISCONNECT_CONNECT_FAILED
)

var resultNames = map[result]string{
	resOK:              "ok",
	resInvalidHandle:   "invalid handle",
	resWrongKind:       "wrong kind of handle",
	resInvalidArgument: "invalid argument",
	resABIVersion:      "ABI version mismatch",
	resBadToken:        "bad connect token",
	resNotConnected:    "not connected",
	resMessageTooLarge: "message too large",
	resQueueFull:       "send queue full",
	resBufferTooSmall:  "buffer too small",
	resNoMemory:        "out of memory",
	resInternal:        "internal error",
}

func (r result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return "unknown"
}

// The protocol's disconnect and deny reasons are the header's
// TW_DISCONNECT_* 1..7 and TW_DENY_* values: checked here at build time
// (a negative constant does not convert to uint).
const (
	_ = uint(C.TW_DISCONNECT_CLOSED - proto.DisconnectClosed)
	_ = uint(proto.DisconnectClosed - C.TW_DISCONNECT_CLOSED)
	_ = uint(C.TW_DISCONNECT_HOST_MIGRATE - proto.DisconnectHostMigrate)
	_ = uint(proto.DisconnectHostMigrate - C.TW_DISCONNECT_HOST_MIGRATE)
	_ = uint(C.TW_DISCONNECT_NO_STATE - proto.DisconnectNoState)
	_ = uint(proto.DisconnectNoState - C.TW_DISCONNECT_NO_STATE)
	_ = uint(C.TW_DENY_INVALID_TOKEN - proto.DenyInvalidToken)
	_ = uint(proto.DenyInvalidToken - C.TW_DENY_INVALID_TOKEN)
	_ = uint(C.TW_DENY_JOIN_REFUSED - proto.DenyJoinRefused)
	_ = uint(proto.DenyJoinRefused - C.TW_DENY_JOIN_REFUSED)
	_ = uint(C.TW_DELIVERY_UNRELIABLE - tickwire.Unreliable)
	_ = uint(tickwire.Unreliable - C.TW_DELIVERY_UNRELIABLE)
	_ = uint(C.TW_DELIVERY_SEQUENCED - tickwire.Sequenced)
	_ = uint(tickwire.Sequenced - C.TW_DELIVERY_SEQUENCED)
	_ = uint(C.TW_DELIVERY_RELIABLE - tickwire.Reliable)
	_ = uint(tickwire.Reliable - C.TW_DELIVERY_RELIABLE)
	_ = uint(C.TW_COMMAND_INPUT - sim.CommandInput)
	_ = uint(sim.CommandInput - C.TW_COMMAND_INPUT)
	_ = uint(C.TW_COMMAND_JOIN - sim.CommandJoin)
	_ = uint(sim.CommandJoin - C.TW_COMMAND_JOIN)
	_ = uint(C.TW_COMMAND_LEAVE - sim.CommandLeave)
	_ = uint(sim.CommandLeave - C.TW_COMMAND_LEAVE)
)

// disconnectName names a TW_DISCONNECT_* reason.
func disconnectName(r uint32) string {
	switch r {
	case disconnectDenied:
		return "denied"
	case disconnectHandshakeTimeout:
		return "handshake timeout"
	case disconnectConnectFailed:
		return "connect failed"
	}
	if r == 0 || r > 255 {
		return "unknown"
	}
	return proto.DisconnectReason(r).String()
}

// denyName names a TW_DENY_* reason.
func denyName(r uint32) string {
	if r == 0 || r >= uint32(proto.NumDenyReasons) {
		return "unknown"
	}
	return proto.DenyReason(r).String()
}

// resultOf is the code of an error from the root package's Client.Send.
func resultOf(err error) result {
	switch {
	case err == nil:
		return resOK
	case errors.Is(err, tickwire.ErrNotConnected), errors.Is(err, tickwire.ErrRejoining):
		return resNotConnected
	case errors.Is(err, tickwire.ErrMessageTooLarge):
		return resMessageTooLarge
	case errors.Is(err, tickwire.ErrQueueFull):
		return resQueueFull
	case errors.Is(err, tickwire.ErrBadDelivery):
		return resInvalidArgument
	}
	return resInternal
}
