package proto

import "net/netip"

// The peer mesh of commits mode (seed 004 "unreliable shortcuts",
// docs/COMMITS.md): clients send their commands straight to each other
// in peer packets (type 9) besides the reliable pipeline through the
// server. The server introduces the peers (PeerIntroFrame) and learns
// how fast each pair reaches each other (MeshReportFrame) to set the
// lead.

// PeerIntroOp says what a PeerIntroFrame does.
type PeerIntroOp uint8

const (
	// PeerHello, client → server: the client takes part in the mesh and
	// listens for peer packets on Port (at its session's IP address).
	PeerHello PeerIntroOp = 1
	// PeerAdd, server → client: Peer (a connection id, which names the
	// pair in peer packet headers) listens at Addr and plays Players;
	// seal what you send it with SendKey, open what it sends with
	// RecvKey.
	PeerAdd PeerIntroOp = 2
	// PeerRemove, server → client: forget Peer.
	PeerRemove   PeerIntroOp = 3
	peerIntroEnd PeerIntroOp = 4
)

// MaxPeerPlayers bounds the players a PeerIntroFrame names.
const MaxPeerPlayers = MaxPlayersPerConnection

// PeerIntroFrame introduces peers of the mesh; it travels on the
// reliable channel (the keys are sealed by the session).
type PeerIntroFrame struct {
	Op      PeerIntroOp
	Peer    uint32         // Add, Remove
	Port    uint16         // Hello
	Addr    netip.AddrPort // Add
	Players []uint16       // Add, at most MaxPeerPlayers
	SendKey [KeySize]byte  // Add
	RecvKey [KeySize]byte  // Add
}

func (f *PeerIntroFrame) Len() int {
	n := 1 + 1 + 4
	switch f.Op {
	case PeerHello:
		n += 2
	case PeerAdd:
		n += 1 + 16 + 2 + 1 + 2*len(f.Players) + 2*KeySize
	}
	return n
}

var (
	errIntroTrunc   = truncated("peer intro frame", "")
	errIntroType    = malformed("peer intro frame", "type")
	errIntroOp      = malformed("peer intro frame", "op")
	errIntroAddr    = malformed("peer intro frame", "address")
	errIntroPlayers = malformed("peer intro frame", "players")
)

func (f *PeerIntroFrame) Append(b []byte) ([]byte, error) {
	if f.Op == 0 || f.Op >= peerIntroEnd {
		return b, errIntroOp
	}
	b = append(b, byte(FramePeerIntro), byte(f.Op))
	b = le.AppendUint32(b, f.Peer)
	switch f.Op {
	case PeerHello:
		b = le.AppendUint16(b, f.Port)
	case PeerAdd:
		if !f.Addr.IsValid() || f.Addr.Port() == 0 {
			return b, errIntroAddr
		}
		if len(f.Players) == 0 || len(f.Players) > MaxPeerPlayers {
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
	}
	return b, nil
}

// ParsePeerIntroFrame parses a peer intro frame; Players is allocated.
func ParsePeerIntroFrame(b []byte) (PeerIntroFrame, int, error) {
	return parsePeerIntro(b, true)
}

// parsePeerIntro parses (keep) or only validates a peer intro frame.
func parsePeerIntro(b []byte, keep bool) (PeerIntroFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FramePeerIntro) {
		return PeerIntroFrame{}, 0, errIntroType
	}
	f := PeerIntroFrame{Op: PeerIntroOp(r.u8()), Peer: r.u32()}
	if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
		return PeerIntroFrame{}, 0, err
	}
	switch f.Op {
	case PeerHello:
		f.Port = r.u16()
	case PeerAdd:
		v := r.u8()
		ipb := r.bytes(16)
		port := r.u16()
		n := int(r.u8())
		if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
			return PeerIntroFrame{}, 0, err
		}
		var ip16 [16]byte
		copy(ip16[:], ipb)
		a := netip.AddrFrom16(ip16)
		switch {
		case v == 4 && a.Is4In6():
			a = a.Unmap()
		case v == 6 && !a.Is4In6():
		default:
			return PeerIntroFrame{}, 0, errIntroAddr
		}
		if port == 0 {
			return PeerIntroFrame{}, 0, errIntroAddr
		}
		f.Addr = netip.AddrPortFrom(a, port)
		if n == 0 || n > MaxPeerPlayers {
			return PeerIntroFrame{}, 0, errIntroPlayers
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
	case PeerRemove:
	default:
		return PeerIntroFrame{}, 0, errIntroOp
	}
	if err := r.check(errIntroTrunc, errIntroTrunc); err != nil {
		return PeerIntroFrame{}, 0, err
	}
	return f, r.off, nil
}

// MaxMeshReport bounds the entries of one MeshReportFrame.
const MaxMeshReport = 64

// MeshPeerReport is how a client reaches one peer: RTTMicros is the
// smoothed round trip of its probes, 0 when the peer is unreachable.
type MeshPeerReport struct {
	Peer      uint32
	RTTMicros uint32
}

// MeshReportFrame, client → server in packets: how the client reaches
// its peers, for the lead (a command that reaches a peer straight
// needs no time for the server's two hops).
type MeshReportFrame struct {
	Peers []MeshPeerReport // at most MaxMeshReport
}

func (f *MeshReportFrame) Len() int { return 1 + 1 + 8*len(f.Peers) }

var (
	errReportTrunc = truncated("mesh report frame", "")
	errReportType  = malformed("mesh report frame", "type")
	errReportCount = malformed("mesh report frame", "count")
)

func (f *MeshReportFrame) Append(b []byte) ([]byte, error) {
	if len(f.Peers) > MaxMeshReport {
		return b, errReportCount
	}
	b = append(b, byte(FrameMeshReport), byte(len(f.Peers)))
	for _, p := range f.Peers {
		b = le.AppendUint32(b, p.Peer)
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
	f.Peers = f.Peers[:0]
	for i := range n {
		o := 2 + 8*i
		f.Peers = append(f.Peers, MeshPeerReport{Peer: le.Uint32(b[o:]), RTTMicros: le.Uint32(b[o+4:])})
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
