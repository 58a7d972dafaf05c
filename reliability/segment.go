package reliability

import (
	"encoding/binary"

	kcp "github.com/xtaci/kcp-go/v5"
)

// KCP segment layout: kcp-go's own 24-byte header, little-endian, then
// len bytes of data (see docs/PROTOCOL.md, frame 0x02).
const (
	segOverhead = kcp.IKCP_OVERHEAD // 24
	segOffConv  = 0
	segOffCmd   = 4
	segOffFrg   = 5
	segOffWnd   = 6
	segOffTS    = 8
	segOffSN    = 12
	segOffUna   = 16
	segOffLen   = 20

	cmdPush = kcp.IKCP_CMD_PUSH
	cmdAck  = kcp.IKCP_CMD_ACK
	cmdWask = kcp.IKCP_CMD_WASK
	cmdWins = kcp.IKCP_CMD_WINS
)

// segment is a decoded KCP segment header; Data aliases the input.
type segment struct {
	Conv uint32
	Cmd  uint8
	Frg  uint8
	Wnd  uint16
	TS   uint32
	SN   uint32
	Una  uint32
	Data []byte
}

var le = binary.LittleEndian

// parseSegment decodes the segment at the start of b; maxData bounds the
// data length (the receiver's KCP segment size). Only PUSH segments may
// carry data.
func parseSegment(b []byte, maxData int) (segment, int, error) {
	if len(b) < segOverhead {
		return segment{}, 0, errSegTrunc
	}
	s := segment{
		Conv: le.Uint32(b[segOffConv:]),
		Cmd:  b[segOffCmd],
		Frg:  b[segOffFrg],
		Wnd:  le.Uint16(b[segOffWnd:]),
		TS:   le.Uint32(b[segOffTS:]),
		SN:   le.Uint32(b[segOffSN:]),
		Una:  le.Uint32(b[segOffUna:]),
	}
	n := le.Uint32(b[segOffLen:])
	switch s.Cmd {
	case cmdPush:
	case cmdAck, cmdWask, cmdWins:
		if n != 0 {
			return segment{}, 0, errSegLen
		}
	default:
		return segment{}, 0, errSegCmd
	}
	if n > uint32(maxData) {
		return segment{}, 0, errSegLen
	}
	end := segOverhead + int(n)
	if len(b) < end {
		return segment{}, 0, errSegTrunc
	}
	s.Data = b[segOverhead:end:end]
	return s, end, nil
}

// appendSegment encodes s (the inverse of parseSegment).
func appendSegment(b []byte, s *segment) []byte {
	b = le.AppendUint32(b, s.Conv)
	b = append(b, s.Cmd, s.Frg)
	b = le.AppendUint16(b, s.Wnd)
	b = le.AppendUint32(b, s.TS)
	b = le.AppendUint32(b, s.SN)
	b = le.AppendUint32(b, s.Una)
	b = le.AppendUint32(b, uint32(len(s.Data)))
	return append(b, s.Data...)
}

// segmentLen returns the encoded length of the segment at the start of b,
// which KCP itself produced (so it is trusted to be whole).
func segmentLen(b []byte) int {
	return segOverhead + int(le.Uint32(b[segOffLen:]))
}
