package proto

import "net/netip"

// The peer mesh of commits mode (unreliable shortcuts between the
// clients, docs/COMMITS.md): clients send their commands straight to each other
// in peer packets (type 9) besides the reliable pipeline through the
// server. The server introduces the peers (MeshIntroFrame) and learns
// how fast each pair reaches each other (MeshReportFrame) to set the
// lead.

// MeshIntroOp says what a MeshIntroFrame does.
type MeshIntroOp uint8

const (
	// MeshHello, client → server: the client takes part in the mesh and
	// listens for peer packets on Port (at its session's IP address).
	MeshHello MeshIntroOp = 1
	// MeshAdd, server → client: Peer (a connection id, which names the
	// pair in peer packet headers) listens at Addr and plays Players;
	// seal what you send it with SendKey, open what it sends with
	// RecvKey.
	MeshAdd MeshIntroOp = 2
	// MeshRemove, server → client: forget Peer.
	MeshRemove MeshIntroOp = 3
	// MeshCheck, server → client: the server validates the address the
	// client's hello named, as a path: it sends a peer packet (type 9,
	// connection id Conn, the client's own) holding a path challenge to
	// that address, sealed with RecvKey. The client opens it there and
	// proves it received it (MeshProof).
	MeshCheck MeshIntroOp = 4
	// MeshProof, client → server: the data of the path challenge the
	// client's mesh socket received (Conn: the client's connection id).
	// The server introduces the address only once it came back.
	MeshProof    MeshIntroOp = 5
	meshIntroEnd MeshIntroOp = 6
)

// MaxMeshPlayers bounds the players a MeshIntroFrame names.
const MaxMeshPlayers = MaxPlayersPerConnection

// MeshIntroFrame introduces peers of the mesh; it travels on the
// reliable channel (the keys are sealed by the session).
type MeshIntroFrame struct {
	Op      MeshIntroOp
	Conn    uint32             // Add, Remove
	Port    uint16             // Hello
	Addr    netip.AddrPort     // Add
	Players []uint16           // Add, at most MaxMeshPlayers
	SendKey [KeySize]byte      // Add
	RecvKey [KeySize]byte      // Add, Check
	Proof   [PathDataSize]byte // Proof
}

func (f *MeshIntroFrame) Len() int {
	n := 1 + 1 + 4
	switch f.Op {
	case MeshHello:
		n += 2
	case MeshAdd:
		n += 1 + 16 + 2 + 1 + 2*len(f.Players) + 2*KeySize
	case MeshCheck:
		n += KeySize
	case MeshProof:
		n += PathDataSize
	}
	return n
}

var (
	errIntroTrunc   = truncated("mesh intro frame", "")
	errIntroType    = malformed("mesh intro frame", "type")
	errIntroOp      = malformed("mesh intro frame", "op")
	errIntroAddr    = malformed("mesh intro frame", "address")
	errIntroPlayers = malformed("mesh intro frame", "players")
)

func (f *MeshIntroFrame) Append(b []byte) ([]byte, error) {
	if f.Op == 0 || f.Op >= meshIntroEnd {
		return b, errIntroOp
	}
	b = append(b, byte(FrameMeshIntro), byte(f.Op))
	b = le.AppendUint32(b, f.Conn)
	switch f.Op {
	case MeshHello:
		b = le.AppendUint16(b, f.Port)
	case MeshAdd:
		if !f.Addr.IsValid() || f.Addr.Port() == 0 {
			return b, errIntroAddr
		}
		if len(f.Players) == 0 || len(f.Players) > MaxMeshPlayers {
			return b, errIntroPlayers
		}
		a := f.Addr.Addr()
		v := byte(4)
		if a.Is6() && !a.Is4In6() {
			v = 6
		}
		ip := a.As16()
		b = append(b, v)
		b = append(b, ip[:]...)
		b = le.AppendUint16(b, f.Addr.Port())
		b = append(b, byte(len(f.Players)))
		for _, p := range f.Players {
			b = le.AppendUint16(b, p)
		}
		b = append(b, f.SendKey[:]...)
		b = append(b, f.RecvKey[:]...)
	case MeshCheck:
		b = append(b, f.RecvKey[:]...)
	case MeshProof:
		b = append(b, f.Proof[:]...)
	}
	return b, nil
}

// ParseMeshIntroFrame parses a mesh intro frame; Players is allocated.
func ParseMeshIntroFrame(b []byte) (MeshIntroFrame, int, error) {
	return parseMeshIntro(b, true)
}

// parseMeshIntro parses (keep) or only validates a mesh intro frame.
func parseMeshIntro(b []byte, keep bool) (MeshIntroFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameMeshIntro) {
		return MeshIntroFrame{}, 0, errIntroType
	}
	f := MeshIntroFrame{Op: MeshIntroOp(r.u8()), Conn: r.u32()}
	if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
		return MeshIntroFrame{}, 0, err
	}
	switch f.Op {
	case MeshHello:
		f.Port = r.u16()
	case MeshAdd:
		v := r.u8()
		ipb := r.bytes(16)
		port := r.u16()
		n := int(r.u8())
		if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
			return MeshIntroFrame{}, 0, err
		}
		var ip16 [16]byte
		copy(ip16[:], ipb)
		a := netip.AddrFrom16(ip16)
		switch {
		case v == 4 && a.Is4In6():
			a = a.Unmap()
		case v == 6 && !a.Is4In6():
		default:
			return MeshIntroFrame{}, 0, errIntroAddr
		}
		if port == 0 {
			return MeshIntroFrame{}, 0, errIntroAddr
		}
		f.Addr = netip.AddrPortFrom(a, port)
		if n == 0 || n > MaxMeshPlayers {
			return MeshIntroFrame{}, 0, errIntroPlayers
		}
		if keep {
			f.Players = make([]uint16, n)
			for i := range f.Players {
				f.Players[i] = r.u16()
			}
		} else {
			r.bytes(uint32(2 * n))
		}
		copy(f.SendKey[:], r.bytes(KeySize))
		copy(f.RecvKey[:], r.bytes(KeySize))
	case MeshRemove:
	case MeshCheck:
		copy(f.RecvKey[:], r.bytes(KeySize))
	case MeshProof:
		copy(f.Proof[:], r.bytes(PathDataSize))
	default:
		return MeshIntroFrame{}, 0, errIntroOp
	}
	if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
		return MeshIntroFrame{}, 0, err
	}
	return f, r.off, nil
}

// MaxMeshReport bounds the entries of one MeshReportFrame.
const MaxMeshReport = 64

// MeshLinkReport is how a client reaches one peer: RTTMicros is the
// smoothed round trip of its probes, 0 when the peer is unreachable.
type MeshLinkReport struct {
	Conn      uint32
	RTTMicros uint32
}

// MeshReportFrame, client → server in packets: how the client reaches
// its peers, for the lead (a command that reaches a peer straight
// needs no time for the server's two hops).
type MeshReportFrame struct {
	Links []MeshLinkReport // at most MaxMeshReport
}

func (f *MeshReportFrame) Len() int { return 1 + 1 + 8*len(f.Links) }

var (
	errReportTrunc = truncated("mesh report frame", "")
	errReportType  = malformed("mesh report frame", "type")
	errReportCount = malformed("mesh report frame", "count")
)

func (f *MeshReportFrame) Append(b []byte) ([]byte, error) {
	if len(f.Links) > MaxMeshReport {
		return b, errReportCount
	}
	b = append(b, byte(FrameMeshReport), byte(len(f.Links)))
	for _, p := range f.Links {
		b = le.AppendUint32(b, p.Conn)
		b = le.AppendUint32(b, p.RTTMicros)
	}
	return b, nil
}

// ParseMeshReportFrame parses a mesh report frame into f, reusing
// f.Peers.
func ParseMeshReportFrame(b []byte, f *MeshReportFrame) (int, error) {
	n, end, err := scanMeshReport(b)
	if err != nil {
		return 0, err
	}
	f.Links = f.Links[:0]
	for i := range n {
		o := 2 + 8*i
		f.Links = append(f.Links, MeshLinkReport{Conn: le.Uint32(b[o:]), RTTMicros: le.Uint32(b[o+4:])})
	}
	return end, nil
}

func scanMeshReport(b []byte) (n, end int, err error) {
	r := reader{b: b}
	if !r.frameType(FrameMeshReport) {
		return 0, 0, errReportType
	}
	n = int(r.u8())
	if err := r.check(errReportTrunc, errReportTrunc); err != nil {
		return 0, 0, err
	}
	if n > MaxMeshReport {
		return 0, 0, errReportCount
	}
	if !r.need(8 * n) {
		return 0, 0, errReportTrunc
	}
	return n, r.off + 8*n, nil
}
