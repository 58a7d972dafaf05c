package udp

import "fmt"

// DSCP is a Differentiated Services code point (RFC 2474): the upper six
// bits of the IPv4 TOS byte and of the IPv6 traffic class.
//
// In Config the zero value selects DSCPEF; DSCPOff sends datagrams unmarked.
type DSCP uint8

const (
	// DSCPEF is Expedited Forwarding (RFC 3246), code point 46: the class
	// for latency-critical real-time traffic, and tickwire's default.
	DSCPEF DSCP = 46
	// DSCPOff leaves the socket's TOS byte and traffic class alone, so
	// datagrams leave with the kernel default (code point 0, best effort).
	DSCPOff DSCP = 0xff
	// dscpMax is the largest code point: six bits.
	dscpMax DSCP = 63
)

// ECN is the two-bit Explicit Congestion Notification field (RFC 3168)
// that shares the TOS byte and traffic class with the DSCP.
type ECN uint8

const (
	ECNNotECT ECN = 0 // not ECN-capable (the default)
	ECNECT1   ECN = 1
	ECNECT0   ECN = 2
	ECNCE     ECN = 3 // congestion experienced
)

// TrafficClass is the byte tickwire writes to the IPv4 TOS field and to
// the IPv6 traffic class: dscp<<2 | ecn, the same encoding for both
// families. (kcp-go shifts for IPv4 but not for IPv6; this is the one
// place the shift happens.)
func TrafficClass(d DSCP, e ECN) int {
	return int(d&dscpMax)<<2 | int(e&3)
}

// DSCPOf extracts the code point from a TOS byte or traffic class.
func DSCPOf(trafficClass int) DSCP { return DSCP(trafficClass>>2) & dscpMax }

func (d DSCP) String() string {
	switch d {
	case DSCPOff:
		return "off"
	case DSCPEF:
		return "EF"
	}
	return fmt.Sprintf("%d", uint8(d))
}
