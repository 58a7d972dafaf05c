package tickwire

import (
	"errors"

	"github.com/tickwire/tickwire/internal/session"
)

// Delivery is how a message travels: Unreliable, Sequenced or Reliable.
type Delivery = session.Delivery

// Deliveries.
const (
	// Unreliable messages may be lost, duplicated or arrive out of order;
	// they cost nothing when the network is bad.
	Unreliable = session.Unreliable
	// Sequenced messages may be lost, but an older message on a channel is
	// never delivered after a newer one (state updates, voice).
	Sequenced = session.Sequenced
	// Reliable messages arrive exactly once and in the order sent, on
	// every channel together (chat, inventory, join data).
	Reliable = session.Reliable
)

// Message is an application message received on a connection: Channel,
// Delivery, an optional tick postmark (Postmarked, Tick) and Data. Data is
// valid only during the callback that receives it; copy what you keep.
type Message = session.Message

// Errors from sending.
var (
	// ErrMessageTooLarge: the message exceeds what its delivery allows
	// (one packet for unreliable messages, reliability.DefaultMaxMessageSize
	// for reliable ones).
	ErrMessageTooLarge = session.ErrMessageTooLarge
	// ErrQueueFull: the connection's send queue is full; the peer is not
	// keeping up. Retry later or drop.
	ErrQueueFull = session.ErrQueueFull
	// ErrEmptyMessage: a reliable frame (SendFrame) must hold at least one
	// byte.
	ErrEmptyMessage = session.ErrEmptyMessage
	// ErrBadDelivery: Delivery is not one of the defined values.
	ErrBadDelivery = session.ErrBadDelivery
	// ErrNotConnected: the connection is closed.
	ErrNotConnected = errors.New("tickwire: not connected")
)

// DropReason says why a server or client dropped a datagram; String names
// it for logs and metrics.
type DropReason = session.DropReason

// Reasons a server or client drops a datagram.
const (
	DropMalformed   = session.DropMalformed   // not a valid tickwire packet
	DropVersion     = session.DropVersion     // another protocol version
	DropUnknownConn = session.DropUnknownConn // session packet for no connection
	DropReplay      = session.DropReplay      // duplicate or older than the replay window
	DropAuth        = session.DropAuth        // failed authentication (forged, altered, wrong key)
	DropUnexpected  = session.DropUnexpected  // valid but not expected here (e.g. a challenge sent to a server)
	DropOversize    = session.DropOversize    // larger than the packet size limit
	DropUnsealed    = session.DropUnsealed    // session packet without encryption
	// NumDropReasons is how many drop reasons there are.
	NumDropReasons = session.NumDropReasons
)

// DropCounts counts dropped datagrams, indexed by DropReason.
type DropCounts = session.DropCounts
