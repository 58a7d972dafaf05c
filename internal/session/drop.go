package session

// DropReason says why a server or client dropped a datagram.
type DropReason uint8

// Reasons a server or client drops a datagram.
const (
	DropMalformed   DropReason = iota // not a valid tickwire packet
	DropVersion                       // another protocol version
	DropUnknownConn                   // session packet for no connection
	DropReplay                        // duplicate or older than the replay window
	DropAuth                          // failed authentication (forged, altered, wrong key)
	DropUnexpected                    // valid but not expected here (e.g. a challenge sent to a server)
	DropOversize                      // larger than the packet size limit
	DropUnsealed                      // session packet without encryption
	NumDropReasons                    // how many reasons there are
)

var dropReasonNames = [NumDropReasons]string{"malformed", "version", "unknown_conn", "replay", "auth", "unexpected", "oversize", "unsealed"}

// String names the reason for logs and metrics labels.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropReasonNames[r]
	}
	return "invalid"
}

// DropCounts counts dropped datagrams by reason.
type DropCounts [NumDropReasons]uint64
