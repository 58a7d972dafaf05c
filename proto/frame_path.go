package proto

// PathDataSize is the size of the random data a path challenge carries and
// its path response echoes.
const PathDataSize = 8

const pathFrameSize = 1 + PathDataSize

// PathChallengeFrame asks the peer to prove it receives at the address the
// packet is sent to: the server sends one to a new address an authenticated
// packet came from, with PathDataSize random bytes, and until the matching
// PathResponseFrame comes back from that address it sends there at most
// three times the bytes it received from it (docs/PROTOCOL.md, "Path
// validation").
type PathChallengeFrame struct {
	Data [PathDataSize]byte
}

// PathResponseFrame answers a PathChallengeFrame with the same Data, in the
// client's next packet.
type PathResponseFrame struct {
	Data [PathDataSize]byte
}

var (
	errPathChalTrunc = truncated("path challenge frame", "")
	errPathChalType  = malformed("path challenge frame", "type")
	errPathRespTrunc = truncated("path response frame", "")
	errPathRespType  = malformed("path response frame", "type")
)

func (f *PathChallengeFrame) Len() int { return pathFrameSize }

func (f *PathChallengeFrame) Append(b []byte) ([]byte, error) {
	return appendPathFrame(b, FramePathChallenge, &f.Data), nil
}

func ParsePathChallengeFrame(b []byte) (PathChallengeFrame, int, error) {
	var f PathChallengeFrame
	n, err := parsePathFrame(b, FramePathChallenge, &f.Data, errPathChalTrunc, errPathChalType)
	if err != nil {
		return PathChallengeFrame{}, 0, err
	}
	return f, n, nil
}

func (f *PathResponseFrame) Len() int { return pathFrameSize }

func (f *PathResponseFrame) Append(b []byte) ([]byte, error) {
	return appendPathFrame(b, FramePathResponse, &f.Data), nil
}

func ParsePathResponseFrame(b []byte) (PathResponseFrame, int, error) {
	var f PathResponseFrame
	n, err := parsePathFrame(b, FramePathResponse, &f.Data, errPathRespTrunc, errPathRespType)
	if err != nil {
		return PathResponseFrame{}, 0, err
	}
	return f, n, nil
}

// The two path frames share one layout: type, then the data.

func appendPathFrame(b []byte, t FrameType, data *[PathDataSize]byte) []byte {
	b = append(b, byte(t))
	return append(b, data[:]...)
}

func parsePathFrame(b []byte, t FrameType, data *[PathDataSize]byte, errShort, errType error) (int, error) {
	r := reader{b: b}
	if !r.frameType(t) {
		return 0, errType
	}
	d := r.bytes(PathDataSize)
	if err := r.check(errShort, errShort); err != nil {
		return 0, err
	}
	copy(data[:], d)
	return r.off, nil
}
